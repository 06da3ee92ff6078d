// tests/robustness/hostile_files_test.cpp - inputs and outputs a file table cannot hold.
//
// Real FIFOs (mkfifo) with no writer as every kind of input, a real character
// device (mknod, a copy of /dev/null, made in a temporary folder: never the
// system's /dev), a FIFO and a symlink as -o, a 1 GiB sparse spec, SIGTERM
// while an output is written, and a child under RLIMIT_AS reading an endless
// standard input. Each must end with one error line (or, for a device, a
// write that leaves the device a device), quickly, and leave no temporary.
#include <catch2/catch.hpp>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "driver/content_hash.h"
#include "tests/robustness/run_process.h"

namespace fs = std::filesystem;
using txl::test::runProcess;

namespace {

const std::string kTxlc = TXLC_PATH;
const std::string kSource = TXL_SOURCE_DIR;
const std::string kTests = TXL_TEST_DATA_DIR;
constexpr double kTimeout = 60;

bool hasTemporary(const std::string& dir) {
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().find(".txlc-") != std::string::npos) return true;
  return false;
}

std::string oneLine(const txl::test::ProcessResult& r) {
  REQUIRE(!r.err.empty());
  CHECK(r.err.find('\n') == r.err.size() - 1);
  return r.err.substr(0, r.err.size() - 1);
}

}  // namespace

TEST_CASE("FIFOs without a writer are refused as inputs, never waited on", "[robustness][hostile]") {
  const std::string dir = txl::test::makeTempDir("txlc-fifo");
  fs::copy_file(kTests + "/conformance/tiny_base/weights.safetensors", dir + "/w.safetensors");
  {
    std::ifstream in(kTests + "/conformance/tiny_base/case.json");
    std::string text((std::istreambuf_iterator<char>(in)), {});
    auto at = text.find("\"config\"");
    REQUIRE(at != std::string::npos);
  }
  REQUIRE(::mkfifo((dir + "/p").c_str(), 0600) == 0);
  REQUIRE(::mkfifo((dir + "/a.txla").c_str(), 0600) == 0);  // named as an artifact: still never opened blocking
  const std::string model = kSource + "/models/kjv-char";
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"compile", "p", "--random-weights", "-o", "out.txla"}, "p: not a regular file or directory"},
      {{"compile", kSource + "/bench/small_b8.json", "--weights", "p", "-o", "out.txla"},
       "is a FIFO, expected a safetensors file"},
      {{"score", model, "p"}, "is a FIFO, expected a text file"},
      {{"score", model, model + "/valid.txt", "--vocab", "p"}, "is a FIFO, expected a vocabulary file"},
      {{"run", model, "--tokens", "1", "--state-in", "p"}, "is a FIFO, expected a safetensors file"},
      {{"run", "a.txla", "--tokens", "1"}, "a.txla: not a regular file or directory"},
      {{"run", model, "--tokens-file", "p"}, "p: is a FIFO, expected "},
      {{"score", model, "p", "--ids"}, "p: is a FIFO, expected "},
  };
  for (const auto& [args, expected] : cases) {
    std::vector<std::string> argv{kTxlc};
    argv.insert(argv.end(), args.begin(), args.end());
    auto r = runProcess(argv, dir, kTimeout);
    INFO(args[0] << " " << args[1] << ": " << r.err);
    CHECK_FALSE(r.timedOut);
    CHECK(r.exitCode == 3);
    CHECK(oneLine(r).find(expected) != std::string::npos);
  }
  CHECK_FALSE(fs::exists(dir + "/out.txla"));
  fs::remove_all(dir);
}

// A character device given as a text: refused by its kind before a byte is
// read (a copy of /dev/zero, made here: never the system's).
TEST_CASE("a character device as a text is refused, not read", "[robustness][hostile]") {
  const std::string dir = txl::test::makeTempDir("txlc-device-text");
  if (::mknod((dir + "/zero").c_str(), S_IFCHR | 0600, ::makedev(1, 5)) != 0) {
    WARN("mknod is not permitted here; the device case is skipped");
    fs::remove_all(dir);
    return;
  }
  const std::string model = kSource + "/models/kjv-char";
  for (const auto& args : std::vector<std::vector<std::string>>{{kTxlc, "score", model, "zero"},
                                                                {kTxlc, "score", model, "zero", "--ids"},
                                                                {kTxlc, "run", model, "--tokens-file", "zero"}}) {
    auto r = runProcess(args, dir, kTimeout);
    INFO(args[1] << " " << args.back() << ": " << r.err);
    CHECK_FALSE(r.timedOut);
    CHECK(r.exitCode == 3);
    CHECK(r.out.empty());
    CHECK(oneLine(r).rfind("txlc: error: zero: is a character device, expected ", 0) == 0);
  }
  fs::remove_all(dir);
}

TEST_CASE("outputs: a device stays a device, a FIFO without a reader and a symlink are refused",
          "[robustness][hostile]") {
  const std::string dir = txl::test::makeTempDir("txlc-out");
  const std::string model = kSource + "/models/kjv-char";
  auto run = [&](const std::string& out) {
    return runProcess({kTxlc, "run", model, "--tokens", "1 2", "-o", out}, dir, kTimeout);
  };
  // A character device made here (1:3, what /dev/null is): written, not replaced.
  if (::mknod((dir + "/null").c_str(), S_IFCHR | 0666, ::makedev(1, 3)) == 0) {
    auto r = run("null");
    INFO(r.err);
    CHECK(r.exitCode == 0);
    struct stat st {};
    REQUIRE(::lstat((dir + "/null").c_str(), &st) == 0);
    CHECK(S_ISCHR(st.st_mode));
  } else {
    WARN("mknod is not permitted here; the device case is skipped");
  }
  REQUIRE(::mkfifo((dir + "/fifo").c_str(), 0600) == 0);
  {
    auto r = run("fifo");
    CHECK_FALSE(r.timedOut);
    CHECK(r.exitCode == 3);
    CHECK(oneLine(r) == "txlc: error: fifo: cannot write: a FIFO with no reader");
    struct stat st {};
    REQUIRE(::lstat((dir + "/fifo").c_str(), &st) == 0);
    CHECK(S_ISFIFO(st.st_mode));
  }
  {
    std::ofstream(dir + "/target") << "keep";
    fs::create_symlink(dir + "/target", dir + "/link");
    auto r = run("link");
    CHECK(r.exitCode == 3);
    CHECK(oneLine(r) ==
          "txlc: error: link: is a symbolic link; txlc does not write through or replace one (give its target)");
    CHECK(fs::is_symlink(dir + "/link"));
    std::ifstream in(dir + "/target");
    std::string text((std::istreambuf_iterator<char>(in)), {});
    CHECK(text == "keep");
  }
  {
    fs::create_directory(dir + "/d");
    auto r = run("d");
    CHECK(r.exitCode == 3);
    CHECK(oneLine(r) ==
          "txlc: error: d: is a directory; expected a regular file, a character device or a FIFO to write");
  }
  CHECK_FALSE(hasTemporary(dir));
  fs::remove_all(dir);
}

TEST_CASE("a sparse 1 GiB spec is refused by its size, before it is read", "[robustness][hostile]") {
  const std::string dir = txl::test::makeTempDir("txlc-sparse");
  {
    int fd = ::open((dir + "/big.json").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    REQUIRE(fd >= 0);
    REQUIRE(::ftruncate(fd, off_t(1) << 30) == 0);
    ::close(fd);
  }
  auto r = runProcess({kTxlc, "compile", "big.json", "--random-weights", "-o", "out.txla"}, dir, kTimeout);
  CHECK(r.exitCode == 3);
  CHECK(oneLine(r) == "txlc: error: big.json: 1073741824 bytes; expected a spec JSON file of at most 16777216 bytes");
  fs::remove_all(dir);
}

// The manifest is parsed whole, so its length is bounded (64 MiB,
// driver/artifact.h) before a byte of it is parsed: a sparse artifact whose
// header and checksum are consistent but whose manifest claims 64 MiB + 1.
TEST_CASE("a sparse artifact with a manifest over 64 MiB is refused by its length", "[robustness][hostile]") {
  const std::string dir = txl::test::makeTempDir("txlc-manifest");
  auto r = runProcess({kTxlc, "compile", kSource + "/models/kjv-char", "-o", "m.txla"}, dir, kTimeout);
  REQUIRE(r.exitCode == 0);
  std::string header(64, '\0');
  {
    std::ifstream in(dir + "/m.txla", std::ios::binary);
    in.read(header.data(), 64);
    REQUIRE(in.gcount() == 64);
  }
  auto put64 = [](std::string& b, std::size_t at, std::uint64_t v) {
    for (int i = 0; i < 8; ++i) b[at + std::size_t(i)] = char((v >> (8 * i)) & 0xff);
  };
  const std::uint64_t mOff = 64, mLen = (std::uint64_t{64} << 20) + 1;
  const std::uint64_t dOff = (mOff + mLen + 63) / 64 * 64, total = dOff + 8;  // an empty data section
  put64(header, 16, mOff);
  put64(header, 24, mLen);
  put64(header, 32, dOff);
  put64(header, 40, 0);
  put64(header, 48, total);
  std::string image(std::size_t(total), '\0');  // the bytes the checksum covers: the header, then zeros
  image.replace(0, 64, header);
  std::string checksum(8, '\0');
  put64(checksum, 0, txl::driver::contentHash(image.data(), std::size_t(total - 8)));
  {
    const int fd = ::open((dir + "/big.txla").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    REQUIRE(fd >= 0);
    REQUIRE(::pwrite(fd, header.data(), 64, 0) == 64);
    REQUIRE(::ftruncate(fd, off_t(total)) == 0);  // a hole where the manifest would be
    REQUIRE(::pwrite(fd, checksum.data(), 8, off_t(total - 8)) == 8);
    ::close(fd);
  }
  r = runProcess({kTxlc, "run", "big.txla", "--tokens", "1"}, dir, kTimeout);
  CHECK_FALSE(r.timedOut);
  CHECK(r.exitCode == 3);
  CHECK(oneLine(r) == "txlc: error: big.txla: manifest of 67108865 bytes; expected at most 67108864");
  fs::remove_all(dir);
}

TEST_CASE("an endless standard input under a memory limit ends with one line", "[robustness][hostile]") {
#if defined(__SANITIZE_ADDRESS__)
  WARN("RLIMIT_AS and ASan's shadow memory do not mix: skipped under ASan");
  return;
#endif
  const std::string dir = txl::test::makeTempDir("txlc-rlimit");
  const std::string model = kSource + "/models/kjv-char";
  // An endless input from a zero device made here (a copy of /dev/zero: never the system's).
  if (::mknod((dir + "/zero").c_str(), S_IFCHR | 0600, ::makedev(1, 5)) != 0) {
    WARN("mknod is not permitted here; the endless-input case is skipped");
    fs::remove_all(dir);
    return;
  }
  // The limit is set on the child only (ulimit -v in its shell).
  auto r = runProcess(
      {"/bin/sh", "-c", "ulimit -v 2000000; exec '" + kTxlc + "' score '" + model + "' - < '" + dir + "/zero'"}, dir,
      kTimeout);
  CHECK_FALSE(r.timedOut);
  CHECK(r.exitCode == 3);
  CHECK(oneLine(r) ==
        "txlc: error: standard input: more than 268435456 bytes; expected a text file of at most "
        "268435456 bytes");
  fs::remove_all(dir);
}

// A text within the size limit but beyond the memory the process may take:
// the line names the file (it said only "out of memory").
TEST_CASE("a text larger than the memory limit names its file", "[robustness][hostile]") {
#if defined(__SANITIZE_ADDRESS__)
  WARN("RLIMIT_AS and ASan's shadow memory do not mix: skipped under ASan");
  return;
#endif
  const std::string dir = txl::test::makeTempDir("txlc-rlimit-text");
  const std::string model = kSource + "/models/kjv-char";
  { std::ofstream(dir + "/big.txt") << std::string(30 << 20, 'a'); }  // 30 MiB: 240 MiB of token ids
  auto r = runProcess({"/bin/sh", "-c", "ulimit -v 150000; exec '" + kTxlc + "' score '" + model + "' big.txt"}, dir,
                      kTimeout);
  CHECK_FALSE(r.timedOut);
  CHECK(r.exitCode == 3);
  CHECK(r.out.empty());
  CHECK(oneLine(r) == "txlc: error: big.txt: out of memory reading it and its token ids (8 bytes per token)");
  fs::remove_all(dir);
}

// A vocabulary within the size limit whose symbols take more memory than the
// process may: the line names the file (it said only "out of memory").
TEST_CASE("a vocabulary larger than the memory limit names its file", "[robustness][hostile]") {
#if defined(__SANITIZE_ADDRESS__)
  WARN("RLIMIT_AS and ASan's shadow memory do not mix: skipped under ASan");
  return;
#endif
  const std::string dir = txl::test::makeTempDir("txlc-rlimit-vocab");
  const std::string model = kSource + "/models/kjv-words";
  {
    std::ofstream out(dir + "/vocab.txt");
    for (int i = 0; i < 6000000; ++i) out << 'w' << i << '\n';  // 53 MB: about 10 times that as symbols
  }
  auto r = runProcess({"/bin/sh", "-c",
                       "ulimit -v 300000; exec '" + kTxlc + "' generate '" + model + "/config.json' --weights '" +
                           model + "/model.safetensors' --vocab vocab.txt --prompt 'in the' -n 3"},
                      dir, kTimeout);
  CHECK_FALSE(r.timedOut);
  CHECK(r.exitCode == 3);
  CHECK(r.out.empty());
  CHECK(oneLine(r) == "txlc: error: vocab.txt: out of memory parsing it as a vocabulary");
  fs::remove_all(dir);
}

TEST_CASE("SIGTERM while an output is written leaves no temporary", "[robustness][hostile]") {
  const std::string dir = txl::test::makeTempDir("txlc-sigterm");
  // About 200 MB of random weights: writing and syncing them takes a while.
  std::ofstream(dir + "/spec.json") << R"({"n_token": 1000, "n_layer": 8, "n_head": 8, "d_model": 512, "d_head": 64,
                                          "d_inner": 2048, "tgt_len": 8, "mem_len": 8})";
  bool seen = false;
  for (int attempt = 0; attempt < 3 && !seen; ++attempt) {
    const int pid = txl::test::startProcess(
        {kTxlc, "compile", "spec.json", "--random-weights", "--passes", "none", "-o", "out.txla"}, dir);
    const auto start = std::chrono::steady_clock::now();
    int status = 0;
    bool done = false;
    while (!done && std::chrono::steady_clock::now() - start < std::chrono::seconds(60)) {
      if (hasTemporary(dir)) {
        seen = true;
        ::kill(pid, SIGTERM);
        break;
      }
      done = ::waitpid(pid, &status, WNOHANG) == pid;
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    if (!done) ::waitpid(pid, &status, 0);
    if (seen) {
      CHECK(WIFSIGNALED(status));
      CHECK(WTERMSIG(status) == SIGTERM);
    }
    fs::remove(dir + "/out.txla");
  }
  if (!seen) WARN("the temporary was never seen; the write was too fast to interrupt");
  CHECK_FALSE(hasTemporary(dir));
  fs::remove_all(dir);
}

TEST_CASE("--emit exe checks its destination first and never writes its libraries elsewhere", "[robustness][hostile]") {
  const std::string dir = txl::test::makeTempDir("txlc-emit");
  const std::string model = kSource + "/models/kjv-char";
  auto compileExe = [&](const std::string& out) {
    return runProcess({kTxlc, "compile", model, "--emit", "exe", "-o", out}, dir, kTimeout);
  };
  // A planted txlc-libs link: refused, its target untouched.
  fs::create_directory(dir + "/victim");
  { std::ofstream(dir + "/victim/libdnnl.so.2") << "keep\n"; }
  fs::create_directory_symlink("victim", dir + "/txlc-libs");
  auto r = compileExe("m-exe");
  CHECK(r.exitCode == 3);
  CHECK(oneLine(r) ==
        "txlc: error: ./txlc-libs: is a symbolic link; expected the folder of the executable's libraries");
  std::string kept;
  std::getline(std::ifstream(dir + "/victim/libdnnl.so.2"), kept);
  CHECK(kept == "keep");
  CHECK(std::distance(fs::directory_iterator(dir + "/victim"), fs::directory_iterator()) == 1);
  fs::remove(dir + "/txlc-libs");
  // A destination refused (a symlink, a FIFO) leaves no library folder behind.
  fs::create_symlink("elsewhere", dir + "/link-exe");
  r = compileExe("link-exe");
  CHECK(r.exitCode == 3);
  REQUIRE(::mkfifo((dir + "/fifo-exe").c_str(), 0600) == 0);
  r = compileExe("fifo-exe");
  CHECK(r.exitCode == 3);
  CHECK(oneLine(r) ==
        "txlc: error: fifo-exe: is not a regular file; an executable is written as a new file or over one");
  CHECK_FALSE(fs::exists(fs::symlink_status(dir + "/txlc-libs")));
  // A missing folder is not made.
  r = compileExe("no/x");
  CHECK(r.exitCode == 3);
  CHECK(oneLine(r) == "txlc: error: no/x: the folder no does not exist");
  CHECK_FALSE(fs::exists(dir + "/no"));
  CHECK_FALSE(hasTemporary(dir));
  fs::remove_all(dir);
}

// A damaged standalone executable never runs as plain txlc: a trailer whose
// magic is gone (the ELF image is followed by bytes) or whose offsets do not
// fit is one error line when it starts.
TEST_CASE("a standalone executable with a damaged trailer is refused", "[robustness][hostile]") {
  const std::string dir = txl::test::makeTempDir("txlc-trailer");
  auto r = runProcess({kTxlc, "compile", kSource + "/models/kjv-char", "--emit", "exe", "-o", "kjv"}, dir, kTimeout);
  REQUIRE(r.exitCode == 0);
  const auto size = fs::file_size(dir + "/kjv");
  auto damaged = [&](std::uintmax_t fromEnd) {
    fs::copy_file(dir + "/kjv", dir + "/bad", fs::copy_options::overwrite_existing);
    std::fstream f(dir + "/bad", std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(std::streamoff(size - fromEnd));
    char c = 0;
    f.get(c);
    f.seekp(std::streamoff(size - fromEnd));
    f.put(char(c ^ 0x5a));
    f.close();
    return runProcess({dir + "/bad", "info"}, dir, kTimeout);
  };
  r = damaged(3);  // in the magic
  CHECK(r.exitCode == 3);
  CHECK(r.out.empty());
  CHECK(oneLine(r).find("bad: corrupt standalone trailer: ") != std::string::npos);
  CHECK(oneLine(r).find(" bytes follow the executable's ELF image, but its last 8 bytes are not the magic") !=
        std::string::npos);
  r = damaged(20);  // in the offset
  CHECK(r.exitCode == 3);
  CHECK(oneLine(r).find("does not end at byte " + std::to_string(size - 24) + " of the executable") !=
        std::string::npos);
  r = runProcess({dir + "/kjv", "info"}, dir, kTimeout);  // the intact one
  CHECK(r.exitCode == 0);
  // Usage hints name the executable as invoked, not txlc.
  r = runProcess({dir + "/kjv", "frob"}, dir, kTimeout);
  CHECK(r.exitCode == 2);
  CHECK(oneLine(r).ends_with(" (run 'kjv --help')"));
  r = runProcess({dir + "/kjv", "score", "--bogus"}, dir, kTimeout);
  CHECK(r.exitCode == 2);
  CHECK(oneLine(r) == "txlc: error: unknown flag '--bogus' for 'score' (run 'kjv score --help')");
  r = runProcess({dir + "/kjv", "score", "-", "--qlen", "0"}, dir, kTimeout);
  CHECK(r.exitCode == 2);
  CHECK(oneLine(r) == "txlc: error: --qlen: expected a positive integer, got '0' (run 'kjv --help')");
  fs::remove_all(dir);
}

// Files mapped under a run must not change (docs/ERRORS.md, "Mapped files"):
// an artifact truncated in place while `score` reads it makes the next read
// of a lost page a SIGBUS, which ends the run with one line naming the file,
// never a death by the signal.
TEST_CASE("an artifact truncated while score runs ends with one line naming it", "[robustness][hostile]") {
  const std::string dir = txl::test::makeTempDir("txlc-sigbus");
  const std::string model = kSource + "/models/kjv-char";
  auto r = runProcess({kTxlc, "compile", model, "-o", "m.txla"}, dir, kTimeout);
  REQUIRE(r.exitCode == 0);
  std::string text;
  {
    std::ifstream in(model + "/valid.txt");
    text.assign(std::istreambuf_iterator<char>(in), {});
  }
  REQUIRE(!text.empty());
  {
    std::ofstream out(dir + "/long.txt");
    for (int i = 0; i < 20; ++i) out << text;  // scored in about a minute: far longer than the wait below
  }
  const int pid = txl::test::startProcess({kTxlc, "score", "m.txla", "long.txt"}, dir, dir + "/out", dir + "/err");
  // Once the artifact is mapped (it shows in the child's /proc/PID/maps) and
  // scoring has started, cut the file under it.
  auto mapped = [&] {
    std::ifstream maps("/proc/" + std::to_string(pid) + "/maps");
    std::string line;
    while (std::getline(maps, line))
      if (line.ends_with("/m.txla")) return true;
    return false;
  };
  int status = 0;
  bool endedEarly = false;
  for (const auto t0 = std::chrono::steady_clock::now();
       !mapped() && !endedEarly && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(60);)
    if (!(endedEarly = ::waitpid(pid, &status, WNOHANG) == pid))
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
  std::this_thread::sleep_for(std::chrono::seconds(1));
  if (!endedEarly) endedEarly = ::waitpid(pid, &status, WNOHANG) == pid;
  if (!endedEarly) REQUIRE(::truncate((dir + "/m.txla").c_str(), 0) == 0);
  const auto start = std::chrono::steady_clock::now();
  bool done = endedEarly;
  while (!done && std::chrono::steady_clock::now() - start < std::chrono::seconds(120)) {
    done = ::waitpid(pid, &status, WNOHANG) == pid;
    if (!done) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (!done) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
  }
  std::string err;
  {
    std::ifstream in(dir + "/err");
    err.assign(std::istreambuf_iterator<char>(in), {});
  }
  INFO("stderr: " << err);
  REQUIRE_FALSE(endedEarly);  // the text must outlast the wait
  CHECK(done);
  CHECK_FALSE(WIFSIGNALED(status));
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 3);
  CHECK(err ==
        "txlc: error: m.txla: the file changed while txlc was reading it (truncated in place); a weights file or "
        "artifact must not be modified during a run\n");
  fs::remove_all(dir);
}

// Thread-creation failure is one error line, never libgomp's abort: the
// threads are created up front (driver::applyThreads). Here each thread's
// stack (the RLIMIT_STACK default, 1 GiB) cannot fit in the child's address
// space limit (RLIMIT_NPROC would not bind root).
TEST_CASE("threads that cannot be created end with one line", "[robustness][hostile]") {
#if defined(__SANITIZE_ADDRESS__)
  WARN("RLIMIT_AS and ASan's shadow memory do not mix: skipped under ASan");
  return;
#endif
  const std::string dir = txl::test::makeTempDir("txlc-threads");
  const std::string model = kSource + "/models/kjv-char";
  cpu_set_t set;
  CPU_ZERO(&set);
  const int cores = ::sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
  const int threads = std::min(8, 4 * std::max(1, cores));  // within the thread bound
  auto r = runProcess({"/bin/sh", "-c",
                       "ulimit -s 1048576; ulimit -v 2500000; exec '" + kTxlc + "' run '" + model +
                           "' --tokens '1 2' --threads " + std::to_string(threads)},
                      dir, kTimeout);
  INFO("stderr: " << r.err);
  CHECK_FALSE(r.timedOut);
  CHECK(r.signal == 0);
  CHECK(r.exitCode == 3);
  CHECK(r.out.empty());
  CHECK(oneLine(r).rfind("txlc: error: --threads: cannot create " + std::to_string(threads) + " threads (", 0) == 0);
  fs::remove_all(dir);
}
