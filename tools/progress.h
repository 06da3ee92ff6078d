// tools/progress.h - progress on stderr, in the form that suits where stderr goes (docs/CLI.md, "Progress").
//
// ProgressDisplay shows work measured in units (tokens, documents, cases):
//   - on a terminal, one line rewritten in place at most 5 times a second:
//     a bar, the percentage, done/total, the command's own figures and an
//     ETA; the ETA appears only once enough is done to estimate it (5 % of
//     the work, or 2 s) and comes from a smoothed rate measured from the
//     first update on (the start - loading, the first plan - left out): the
//     average for the first 5 s, then an exponential moving average (time
//     constant 5 s), so it does not jump with every update;
//   - anywhere else (a file, a pipe), a plain line at once and then at most
//     one every `interval` seconds (5 by default), never a carriage return
//     or an escape sequence.
// PhaseLog reports the phases of a command that has no units to count
// (compile, import): one line per phase as it ends, with its elapsed time.
// Like score's estimate, both are shown by default only on a terminal (a
// command's --progress shows them anywhere, --no-progress nowhere), so that
// a failing command run into a file still leaves its one error line alone.
//
//   ProgressDisplay p("score", "tokens", stderrIsTerminal());
//   for (...) p.update(done, total, "perplexity 4.05");
//   p.finish();                          // clears the bar on a terminal
//   PhaseLog log("compile", showProgress(flag, noFlag));
//   ...; log.done("read the model");     // "txlc: compile: read the model (0.12 s)"
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace txl::tools {

// Whether to show progress: `on` (--progress), else not `off`
// (--no-progress) and stderr is a terminal.
bool showProgress(bool on, bool off);

class ProgressDisplay {
 public:
  // `command` prefixes every line ("txlc: score: "); `unit` names what is
  // counted ("tokens"). `terminal`: stderr is a terminal (stderrIsTerminal()).
  ProgressDisplay(std::string command, std::string unit, bool terminal, double interval = 5.0);
  // `done` of `total` units after `seconds` of work (the caller's clock, so
  // that a split run's rank 0 can report all ranks); `detail` follows the
  // counts ("perplexity 4.052, 38886 tokens/s"). Prints when a line is due.
  void update(std::int64_t done, std::int64_t total, double seconds, const std::string& detail = "");
  // On a terminal, erases the bar (the next output starts on a clean line).
  void finish();
  bool shown() const { return shown_; }

  // The ETA as shown ("", "42s", "3m05s", "2h07m"), for the remaining
  // units at a rate of `rate` units a second.
  static std::string formatEta(double remaining, double rate);

 private:
  std::string command_, unit_;
  bool terminal_;
  double interval_;
  bool shown_ = false;
  double lastShown_ = 0;
  // The smoothed rate: the first update's time and work (its origin), its
  // last sample's, and its value.
  bool started_ = false;
  double originSeconds_ = 0, sampleSeconds_ = 0;
  std::int64_t originDone_ = 0, sampleDone_ = 0;
  double rate_ = 0;
  bool rateKnown_ = false;
};

class PhaseLog {
 public:
  PhaseLog(std::string command, bool show);
  // Ends the current phase: "txlc: COMMAND: WHAT (S s)".
  void done(const std::string& what);
  double seconds() const;  // since construction

 private:
  using Clock = std::chrono::steady_clock;
  std::string command_;
  bool show_;
  Clock::time_point start_, last_;
};

}  // namespace txl::tools
