// backend/onednn/thread_policy.h - which steps of a plan run on one thread:
// chosen per run from the measured times of earlier runs (internal to
// backend/).
//
// OpenMP's team meets at a barrier after every parallel step. On an idle
// machine the team wins on every step longer than a few tens of
// microseconds; when another process holds a core, the team waits at each
// barrier for the thread that lost its time slice, and only the long steps
// still gain. No fixed threshold is right for both machines, and a user's
// machine changes from one to the other while a stream runs. So a plan is
// lowered for both conditions (backend/onednn/onednn_lowering.cpp):
//   Loaded: steps estimated under OnednnOptions::serialBelowNs run on one thread;
//   Idle:   only steps under OnednnOptions::idleSerialBelowNs do;
// (a node whose choice is the same in both is lowered once and shared), and
// ThreadChoice picks the variant of each run from the wall times of the
// runs before it.
//
// Both variants compute the same values: oneDNN's primitives and the own
// kernels keep their reduction order whatever the thread count (the test
// "onednn: both thread variants of a plan give the same bits" checks the
// benchmark shapes), so the choice never changes a result.
#pragma once

#include <array>
#include <cstdint>
#include <optional>

namespace txl::backend::onednn {

enum class Load : std::uint8_t { Loaded = 0, Idle = 1 };

// A step's membership in the variants, as a bit set over Load.
using LoadSet = std::uint8_t;
constexpr LoadSet loadBit(Load l) { return static_cast<LoadSet>(1u << static_cast<unsigned>(l)); }
constexpr LoadSet kEveryLoad = loadBit(Load::Loaded) | loadBit(Load::Idle);

// Chooses the variant of each run: after a first (cold) run and two runs of
// each variant, the one whose median over its last three runs is lower; the
// other is run again every kProbeEvery runs (every kProbeEveryFar runs when
// it was more than kFarRatio slower), so that a change of the machine's load
// is followed within a few dozen runs, at a cost of a few percent. A probe
// that comes out faster than the chosen variant's estimate is run again at
// once, so that after a passing spell of load (which can leave the slower
// variant chosen) the faster one takes over within two runs of its first
// probe instead of two probe periods.
class ThreadChoice {
 public:
  // `fixed`: always that variant (no measuring).
  explicit ThreadChoice(bool adaptive = true, Load fixed = Load::Loaded) : adaptive_(adaptive), fixed_(fixed) {}

  Load next();
  // The wall time of a run made in variant `l`.
  void observe(Load l, double seconds);
  // The median of the last runs of `l` (0 before any).
  double estimate(Load l) const;

  static constexpr int kSeedRuns = 5;  // the cold run, then Idle, Loaded, Idle, Loaded
  static constexpr int kProbeEvery = 16;
  static constexpr int kProbeEveryFar = 64;
  static constexpr double kFarRatio = 1.5;

 private:
  struct Times {
    std::array<double, 3> last{};
    int count = 0;
  };
  bool adaptive_;
  Load fixed_;
  std::int64_t runs_ = 0;        // runs handed out by next()
  int sinceProbe_ = 0;           // runs of the best variant since the other last ran
  bool probing_ = false;         // the run handed out last is a probe of the variant not chosen
  std::optional<Load> reprobe_;  // that probe's variant, when it beat the chosen one's estimate
  std::array<Times, 2> times_{};
};

}  // namespace txl::backend::onednn
