// tests/robustness/kill_test.cpp - a writer killed midway never leaves a half-written file.
//
// Safetensors files (weights, `txlc run --state-out` state files) and
// artifacts (`txlc compile`) are written to a temporary beside the
// destination and renamed over it. Here a child process starts writing a
// large one and is SIGKILLed while the temporary is growing: afterwards the
// destination must be absent, or (if the rename won the race) complete and
// valid. A stale temporary may remain - nothing can clean up after SIGKILL -
// but it never has the destination's name.
#include <catch2/catch.hpp>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "frontend/safetensors.h"
#include "ir/check.h"
#include "tests/robustness/run_process.h"
#include "driver/artifact.h"

namespace fs = std::filesystem;
using namespace txl;

namespace {

// Waits until `path` exists with at least `bytes` bytes (or `child` exits); true if it did.
bool waitForGrowth(const std::string& path, std::uintmax_t bytes, pid_t child, double seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    std::error_code ec;
    if (fs::exists(path, ec) && fs::file_size(path, ec) >= bytes && !ec) return true;
    int status = 0;
    if (::waitpid(child, &status, WNOHANG) == child) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return false;
}

void killAndReap(pid_t child) {
  ::kill(child, SIGKILL);
  int status = 0;
  ::waitpid(child, &status, 0);
}

}  // namespace

TEST_CASE("a safetensors (state) file killed mid-write leaves no partial destination", "[robustness][kill]") {
  const std::string dir = test::makeTempDir("txlc-kill");
  const std::string dest = dir + "/state.safetensors";
  // 64 Mi floats (256 MiB) in 16 tensors: writing takes long enough to be caught.
  constexpr std::int64_t kTensors = 16, kFloats = std::int64_t(4) << 20;
  for (std::uintmax_t killAt : {std::uintmax_t(1), std::uintmax_t(64) << 20, std::uintmax_t(200) << 20}) {
    INFO("kill when the temporary holds " << killAt << " bytes");
    fs::remove(dest);
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
      std::vector<std::pair<std::string, ir::Tensor>> tensors;
      for (std::int64_t i = 0; i < kTensors; ++i) {
        ir::Tensor t = ir::Tensor::zeros(ir::TensorType{ir::DType::F32, {kFloats}});
        t.data<float>()[0] = float(i);
        tensors.emplace_back("mem." + std::to_string(i), std::move(t));
      }
      try {
        frontend::writeSafetensors(dest, tensors);
      } catch (...) {
        ::_exit(1);
      }
      ::_exit(0);
    }
    const std::string tmp = dest + ".tmp." + std::to_string(child);
    const bool caught = waitForGrowth(tmp, killAt, child, 120);
    killAndReap(child);
    if (!fs::exists(dest)) {
      CHECK(caught);  // killed while writing the temporary: the destination was never created
    } else {
      // The rename won: the file must be whole.
      auto f = frontend::SafetensorsFile::open(dest);
      CHECK(f.names().size() == std::size_t(kTensors));
      CHECK(f.toF32("mem.15").data<float>()[0] == 15.0f);
    }
    fs::remove(tmp);
  }
  fs::remove_all(dir);
}

TEST_CASE("txlc compile killed mid-write leaves no partial artifact", "[robustness][kill]") {
  const std::string dir = test::makeTempDir("txlc-kill-artifact");
  // About 26 M parameters: a 100 MiB artifact.
  std::ofstream(dir + "/big.json") << R"({"n_token": 1000, "n_layer": 2, "n_head": 16, "d_model": 1024,
    "d_head": 64, "d_inner": 4096, "tgt_len": 4, "mem_len": 4})";
  const std::string dest = dir + "/big.txla";
  const pid_t child = test::startProcess({TXLC_PATH, "compile", "big.json", "--random-weights", "--backend",
                                          "reference", "--passes", "none", "-o", "big.txla"},
                                         dir);
  REQUIRE(child > 0);
  const std::string tmp = dest + ".tmp." + std::to_string(child);
  const bool caught = waitForGrowth(tmp, 1 << 20, child, 600);
  killAndReap(child);
  if (!fs::exists(dest)) {
    CHECK(caught);
  } else {
    CHECK_NOTHROW(driver::readArtifact(dest));
  }
  fs::remove_all(dir);
}
