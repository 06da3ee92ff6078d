// tests/robustness/run_process.cpp - fork, exec and wait with a time limit.
#include "tests/robustness/run_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace txl::test {

namespace {

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

int spawn(const std::vector<std::string>& argv, const std::string& workDir, const std::string& outPath,
          const std::string& errPath) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    int in = ::open("/dev/null", O_RDONLY);
    int out = ::open(outPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int err = ::open(errPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (in < 0 || out < 0 || err < 0 || ::dup2(in, 0) < 0 || ::dup2(out, 1) < 0 || ::dup2(err, 2) < 0 ||
        ::chdir(workDir.c_str()) != 0)
      ::_exit(127);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  return pid;
}

}  // namespace

ProcessResult runProcess(const std::vector<std::string>& argv, const std::string& workDir, double timeoutSeconds) {
  const std::string dir = makeTempDir("txlc-run");
  const std::string outPath = dir + "/stdout", errPath = dir + "/stderr";
  const pid_t pid = spawn(argv, workDir, outPath, errPath);
  ProcessResult r;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeoutSeconds);
  int status = 0;
  for (;;) {
    pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      r.timedOut = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (WIFEXITED(status)) r.exitCode = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
  r.out = slurp(outPath);
  r.err = slurp(errPath);
  std::filesystem::remove_all(dir);
  return r;
}

int startProcess(const std::vector<std::string>& argv, const std::string& workDir) {
  return spawn(argv, workDir, "/dev/null", "/dev/null");
}

int startProcess(const std::vector<std::string>& argv, const std::string& workDir, const std::string& outPath,
                 const std::string& errPath) {
  return spawn(argv, workDir, outPath, errPath);
}

std::string makeTempDir(const std::string& prefix) {
  std::string pattern = (std::filesystem::temp_directory_path() / (prefix + ".XXXXXX")).string();
  if (!::mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed for " + pattern);
  return pattern;
}

}  // namespace txl::test
