// driver/split_run.h - the failure policy of a job split across processes (driver/distributed.h).
//
// A split run has two phases. Setting up (reading the model and the input)
// is alike on every rank, so a problem met there is reported once, by the
// lowest rank that met it, and every rank stops with its exit code
// (SplitPhase::endSetup is the collective that ends the phase). Once at
// work, a rank that fails prints one line naming itself ("rank 2 of 4: ...")
// and ends the whole run with its code; rank 0 gives up on a rank silent for
// the rank timeout (RankLost) and ends the run with the "rank failed" code.
// A single process runs the work as any command: its errors propagate.
//
// Every rank must also have been given the same run: endSetup() compares
// each rank's fingerprint of the model (its content hash), the input, the
// options that change results and what --resume kept with rank 0's, and
// when one differs every rank stops with one line from rank 0 naming the
// first rank and what differs (exit code SplitExitCodes::input), before any
// rank computes: ranks given different inputs never make a mixed result.
//
//   return runSplit(procs, [&](SplitPhase& phase) { ...; phase.endSetup(); ...; return 0; }, describe, exits);
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "driver/distributed.h"

namespace txl::driver {

// Another rank reported a problem while setting up: this rank stops quietly with its code.
struct OtherRankFailed {
  int code;
};
// The ranks were given different runs (endSetup): rank 0 says `message`, every rank stops.
struct RanksDisagree {
  std::string message;
};
// A rank that rank 0 gave up on (silent too long).
struct RankLost {
  int rank;
  std::string reason;
};

// What a rank was given, as fingerprints (driver/content_hash.h digests): the
// model, the input, the options that change results, and the lines --resume kept.
struct RunFingerprint {
  std::uint64_t model = 0, input = 0, options = 0, kept = 0;
};

struct SplitPhase {
  Processes& procs;
  bool setupDone = false;
  // Every rank calls it once its setup succeeded (a collective); throws
  // OtherRankFailed when another rank's setup failed, RanksDisagree when a
  // rank's fingerprint is not rank 0's.
  void endSetup(const RunFingerprint& mine = {});
};

// Rank 0's view of the other ranks: when each was last heard from, which are
// done (kTagDone, driver/rank_messages.h), and the signal one stopped on.
class Peers {
 public:
  Peers(Processes& procs, double timeoutSeconds);
  // Hands every other message that has arrived to `handle` (waiting up to
  // `wait` for the first); RankLost for a rank silent longer than the timeout.
  void poll(std::chrono::milliseconds wait, const std::function<void(const Message&)>& handle);
  bool allDone() const;
  // The signal a rank said it stopped on before its share was done (0: none).
  int interruptedBy() const { return signal_; }

 private:
  Processes& procs_;
  double timeout_;
  std::vector<std::chrono::steady_clock::time_point> heard_;
  std::vector<bool> done_;
  int signal_ = 0;
};

// The exit code and the one-line message ("error: ...") for the exception in flight.
using DescribeError = std::function<std::pair<int, std::string>()>;
struct SplitExitCodes {
  int rankFailed = 5;  // a rank was lost
  int internal = 4;    // a rank failed without a code of its own
  int input = 3;       // the ranks were given different models, inputs or options
};

// Runs `work` on this rank under the policy above and returns its exit code
// (a failing rank at work ends every rank through Processes::abort).
int runSplit(Processes& procs, const std::function<int(SplitPhase&)>& work, const DescribeError& describe,
             const SplitExitCodes& codes);

std::string rankName(int rank, int size);

}  // namespace txl::driver
