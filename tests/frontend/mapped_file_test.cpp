// tests/frontend/mapped_file_test.cpp - guardMappedFiles: a file truncated
// under its mapping ends the process with one line, however many threads
// read the lost pages at once.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "frontend/input_file.h"

namespace {

// In a child process: maps `path` (pages of 'x'), cuts the file to nothing,
// then `threads` threads read one lost page each at the same moment. stderr
// goes to `errPath`. Returns the child's wait status.
int readLostPages(const std::string& path, const std::string& errPath, int threads) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int err = ::open(errPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (err < 0 || ::dup2(err, STDERR_FILENO) < 0) ::_exit(90);
    txl::frontend::guardMappedFiles();
    const txl::frontend::MappedFile m = txl::frontend::mapInputFile(path, "a test file", "lost.bin");
    if (::truncate(path.c_str(), 0) != 0) ::_exit(91);
    std::atomic<bool> go{false};
    std::atomic<long> sum{0};
    std::vector<std::thread> team;
    for (int t = 0; t < threads; ++t)
      team.emplace_back([&, t] {
        while (!go.load()) {
        }
        sum += static_cast<long>(m.bytes[std::size_t(t) * 4096 + 7]);  // SIGBUS: the page is gone
      });
    go = true;
    for (std::thread& t : team) t.join();
    ::_exit(sum.load() == 0 ? 92 : 93);  // not reached
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return status;
}

}  // namespace

TEST_CASE("a mapped file truncated under several reading threads ends the process with one line", "[frontend]") {
  char dir[] = "/tmp/txlc-mapped-XXXXXX";
  REQUIRE(::mkdtemp(dir) != nullptr);
  const std::string path = std::string(dir) + "/lost.bin", errPath = std::string(dir) + "/err";
  constexpr int kThreads = 8;
  for (int round = 0; round < 20; ++round) {
    {
      std::ofstream out(path, std::ios::binary);
      out << std::string(kThreads * 4096, 'x');
    }
    const int status = readLostPages(path, errPath, kThreads);
    std::ifstream in(errPath);
    const std::string err{std::istreambuf_iterator<char>(in), {}};
    INFO("round " << round << ", stderr: " << err);
    REQUIRE(WIFEXITED(status));
    REQUIRE(WEXITSTATUS(status) == 3);
    REQUIRE(err ==
            "txlc: error: lost.bin: the file changed while txlc was reading it (truncated in place); a weights file or "
            "artifact must not be modified during a run\n");
  }
  std::remove(path.c_str());
  std::remove(errPath.c_str());
  ::rmdir(dir);
}
