// tests/robustness/run_process.h - runs a command as a child process.
//
// The robustness tests drive the real `txlc` binary the way a user does:
// arguments, a working directory, and what comes back on stdout, stderr and
// as the exit status. A child that runs past its time limit is killed and
// reported as a hang.
//
//   ProcessResult r = runProcess({txlc, "score", "m", "x.txt"}, dir, 60);
//   CHECK(r.exitCode == 3);
#pragma once

#include <string>
#include <vector>

namespace txl::test {

struct ProcessResult {
  int exitCode = -1;  // the exit status, or -1 when killed by a signal
  int signal = 0;     // the signal that ended it (0: it exited)
  bool timedOut = false;
  std::string out, err;
};

// Runs argv[0] (a path) with `argv` in `workDir`, stdin from /dev/null.
ProcessResult runProcess(const std::vector<std::string>& argv, const std::string& workDir, double timeoutSeconds);

// Starts argv in `workDir` (output discarded) and returns its pid.
int startProcess(const std::vector<std::string>& argv, const std::string& workDir);
// The same with stdout and stderr written to the files `outPath` and `errPath`.
int startProcess(const std::vector<std::string>& argv, const std::string& workDir, const std::string& outPath,
                 const std::string& errPath);

// A fresh empty directory under the system temporary directory.
std::string makeTempDir(const std::string& prefix);

}  // namespace txl::test
