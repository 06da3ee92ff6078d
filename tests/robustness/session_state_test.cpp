// tests/robustness/session_state_test.cpp - reset, save and restore a session mid-stream.
//
// A stream interrupted after k segments, its state saved (and written to a
// state file and read back), the session reset and used for something else,
// then restored, must continue bit for bit as the uninterrupted stream did.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "backend/session.h"
#include "driver/state_file.h"
#include "frontend/safetensors.h"
#include "ir/check.h"
#include "tests/robustness/model_fixture.h"
#include "tests/robustness/run_process.h"

using namespace txl;

namespace {

std::vector<std::string> nllOf(backend::Session& s, const std::vector<ir::Tensor>& tokens,
                               const std::vector<ir::Tensor>& targets, std::size_t from, std::size_t to) {
  std::vector<std::string> out;
  for (std::size_t i = from; i < to; ++i) {
    auto r = s.forward(tokens[i], &targets[i]);
    out.push_back(test::bytesOf(r.nll) + test::bytesOf(r.hidden));
  }
  return out;
}

}  // namespace

TEST_CASE("a session saved, reset and restored mid-stream continues bit for bit", "[robustness][state]") {
  for (const bool literal : {false, true})
    for (const std::string backendName : {"onednn", "reference"}) {
      INFO("backend " << backendName << (literal ? ", literal graph" : ", default pipeline"));
      auto model = test::conformanceModel("tiny_base", backendName, 2, literal);
      const std::int64_t nToken = model->info().nToken;
      auto tokens = test::tokenStream(7, 5, 4, 2, nToken), targets = test::tokenStream(8, 5, 4, 2, nToken);
      auto other = test::tokenStream(9, 2, 3, 2, nToken);

      backend::Session whole(model);
      const auto expected = nllOf(whole, tokens, targets, 0, 5);

      backend::Session s(model);
      CHECK(nllOf(s, tokens, targets, 0, 2) == std::vector(expected.begin(), expected.begin() + 2));
      ir::TensorMap saved = s.saveState();
      REQUIRE(s.mlen() > 0);

      // Through a state file on disk, as `txlc run --state-out/--state-in` does.
      const std::string dir = test::makeTempDir("txlc-state");
      std::vector<std::pair<std::string, ir::Tensor>> tensors(saved.begin(), saved.end());
      frontend::writeSafetensors(dir + "/state.safetensors", tensors);
      auto file = frontend::SafetensorsFile::open(dir + "/state.safetensors");
      ir::TensorMap restored;
      for (const auto& name : file.names()) restored[name] = file.toF32(name).clone();
      std::filesystem::remove_all(dir);

      // Reset: the next segment starts a fresh stream, as a new session would.
      s.reset();
      CHECK(s.mlen() == 0);
      CHECK(nllOf(s, tokens, targets, 0, 1) == std::vector(expected.begin(), expected.begin() + 1));
      for (const auto& t : other) s.forward(t);  // disturb the memory

      s.loadState(restored);
      CHECK(nllOf(s, tokens, targets, 2, 5) == std::vector(expected.begin() + 2, expected.end()));
    }
}

TEST_CASE("a state of the wrong shape is refused naming the tensor", "[robustness][state]") {
  auto model = test::conformanceModel("tiny_base", "reference");
  backend::Session s(model);
  s.forward(test::tokenStream(1, 1, 4, 1, model->info().nToken)[0]);
  ir::TensorMap state = s.saveState();
  REQUIRE(state.contains("mem.0"));
  state["mem.0"] = ir::Tensor::zeros(ir::TensorType{ir::DType::F32, {2, 1, 3}});
  CHECK_THROWS_AS(s.loadState(state), Error);
  try {
    s.loadState(state);
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("mem.0") != std::string::npos);
  }
}

namespace {
// The peak resident set since the last reset (VmHWM, bytes).
std::size_t peakRss() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::size_t(std::stoull(line.substr(6))) * 1024;
  return 0;
}
}  // namespace

TEST_CASE("a state file is checked from its header before any tensor is converted", "[robustness][state]") {
  auto model = test::conformanceModel("tiny_base", "reference");
  backend::Session s(model);
  s.forward(test::tokenStream(1, 1, 4, 1, model->info().nToken)[0]);
  const ir::TensorMap state = s.saveState();
  driver::Model m;
  m.modelId = "m-test";

  // A valid header for the model's slots plus "extra": 1 GiB of f32 in a sparse file.
  const std::string dir = test::makeTempDir("txlc-state-header");
  const std::string path = dir + "/s.safetensors";
  const std::string mlen = std::to_string(s.mlen());
  nlohmann::json header = {{"__metadata__",
                            {{"format", driver::kStateFormat},
                             {"model_id", m.modelId},
                             {"batch", "1"},
                             {"mlen", mlen},
                             {"mem_len", mlen},
                             {"semantics", "authors"},
                             {"initial_memory", "empty"}}}};
  std::uint64_t offset = 0;
  for (const auto& [name, t] : state) {
    header[name] = {{"dtype", "F32"}, {"shape", t.shape()}, {"data_offsets", {offset, offset + t.bytes()}}};
    offset += t.bytes();
  }
  const std::uint64_t extra = std::uint64_t(1) << 30;
  header["extra"] = {{"dtype", "F32"}, {"shape", {extra / 4}}, {"data_offsets", {offset, offset + extra}}};
  const std::string text = header.dump();
  {
    std::ofstream out(path, std::ios::binary);
    const std::uint64_t n = text.size();
    for (int i = 0; i < 8; ++i) out.put(char((n >> (8 * i)) & 0xff));
    out << text;
    for (const auto& [name, t] : state) out.write(static_cast<const char*>(t.raw()), std::streamsize(t.bytes()));
  }
  std::filesystem::resize_file(path, 8 + text.size() + offset + extra);  // sparse: no disk, no memory

  { std::ofstream("/proc/self/clear_refs") << "5"; }
  const std::size_t before = peakRss();
  try {
    driver::readStateFile(m, *model, path);
    FAIL("a state with a tensor the model does not have was accepted");
  } catch (const Error& e) {
    CHECK(std::string(e.what()) == path + ": state: holds tensor \"extra\", which this model does not have");
  }
  CHECK(peakRss() < before + (std::size_t(64) << 20));
  std::filesystem::remove_all(dir);
}
