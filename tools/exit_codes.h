// tools/exit_codes.h - txlc's exit codes (documented in docs/CLI.md).
#pragma once

namespace txl::tools {

inline constexpr int kExitOk = 0;
inline constexpr int kExitCheckFailed = 1;  // a conformance case or a check did not pass
inline constexpr int kExitUsage = 2;        // a command-line mistake
inline constexpr int kExitBadInput = 3;     // a spec, weights, artifact, text or token file is wrong
inline constexpr int kExitInternal = 4;     // a bug in txlc
inline constexpr int kExitRankFailed = 5;   // another process of a split run (mpirun) failed or went silent

}  // namespace txl::tools
