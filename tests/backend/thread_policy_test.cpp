// tests/backend/thread_policy_test.cpp - ThreadChoice: which thread variant
// each run of a plan takes, from the times of earlier runs.
#include <catch2/catch.hpp>

#include "backend/onednn/thread_policy.h"

using txl::backend::onednn::Load;
using txl::backend::onednn::ThreadChoice;

namespace {

// Runs `runs` runs of `c` on a machine where a run takes `idle` or `loaded`
// seconds by variant; returns how many took the idle variant.
int runIdle(ThreadChoice& c, int runs, double idle, double loaded) {
  int n = 0;
  for (int r = 0; r < runs; ++r) {
    const Load l = c.next();
    n += l == Load::Idle;
    c.observe(l, l == Load::Idle ? idle : loaded);
  }
  return n;
}

}  // namespace

TEST_CASE("thread policy: a fixed choice never measures", "[thread_policy]") {
  ThreadChoice idle(false, Load::Idle), loaded(false, Load::Loaded);
  CHECK(runIdle(idle, 50, 1, 2) == 50);
  CHECK(runIdle(loaded, 50, 1, 2) == 0);
  CHECK(idle.estimate(Load::Idle) == 0);
}

TEST_CASE("thread policy: the cold run, then each variant twice, alternated", "[thread_policy]") {
  ThreadChoice c;
  std::vector<Load> seen;
  for (int r = 0; r < ThreadChoice::kSeedRuns; ++r) {
    seen.push_back(c.next());
    c.observe(seen.back(), r == 0 ? 100.0 : 1.0);  // the cold run's time is not counted
  }
  CHECK(seen == std::vector<Load>{Load::Loaded, Load::Idle, Load::Loaded, Load::Idle, Load::Loaded});
  CHECK(c.estimate(Load::Loaded) == 1.0);
  CHECK(c.estimate(Load::Idle) == 1.0);
}

TEST_CASE("thread policy: the faster variant runs; the other is probed now and then", "[thread_policy]") {
  ThreadChoice c;
  runIdle(c, ThreadChoice::kSeedRuns, 1.0, 1.2);
  // Idle is faster by less than kFarRatio: Loaded is probed once every kProbeEvery + 1 runs.
  const int runs = 170;
  const int idle = runIdle(c, runs, 1.0, 1.2);
  CHECK(runs - idle == runs / (ThreadChoice::kProbeEvery + 1));
  // Far slower: probed every kProbeEveryFar + 1 runs.
  ThreadChoice far;
  runIdle(far, ThreadChoice::kSeedRuns, 1.0, 3.0);
  CHECK(650 - runIdle(far, 650, 1.0, 3.0) == 650 / (ThreadChoice::kProbeEveryFar + 1));
}

TEST_CASE("thread policy: follows the machine's load as it comes and goes", "[thread_policy]") {
  ThreadChoice c;
  runIdle(c, 40, 1.0, 1.3);  // idle machine: the team wins
  CHECK(c.next() == Load::Idle);
  c.observe(Load::Idle, 1.0);
  // Another process takes a core: the team's runs take 4x as long. Within
  // two runs the median moves and the loaded variant takes over.
  runIdle(c, 2, 4.0, 1.4);
  CHECK(runIdle(c, 10, 4.0, 1.4) == 0);
  // The load goes away: the idle variant, probed every kProbeEveryFar + 1
  // runs, wins back once two probes have seen it fast.
  const int back = runIdle(c, 2 * (ThreadChoice::kProbeEveryFar + 1) + 2, 1.0, 1.3);
  CHECK(back >= 2);
  CHECK(runIdle(c, 10, 1.0, 1.3) >= 9);
}

TEST_CASE("thread policy: after a passing spell of load, the first fast probe brings the team back",
          "[thread_policy]") {
  ThreadChoice c;
  runIdle(c, 40, 1.0, 1.4);
  // Two slow team runs (another process woke up for a moment) put the
  // team's median above the one-thread variant's estimate.
  CHECK(runIdle(c, 2, 2.0, 1.4) == 2);
  CHECK(c.next() == Load::Loaded);
  c.observe(Load::Loaded, 1.4);
  // The spell is over. The team's next probe (within kProbeEvery + 1 runs)
  // is fast, so it runs again at once and takes over, rather than at the
  // probe after it.
  runIdle(c, ThreadChoice::kProbeEvery + 2, 1.0, 1.4);
  CHECK(runIdle(c, 10, 1.0, 1.4) >= 9);
}

TEST_CASE("thread policy: a probe that is fast by chance costs one more run", "[thread_policy]") {
  ThreadChoice c;
  runIdle(c, 40, 1.0, 1.3);
  int probes = 0;
  for (int r = 0; r < 3 * (ThreadChoice::kProbeEvery + 1); ++r) {
    const Load l = c.next();
    if (l == Load::Loaded) ++probes;
    // The first probe of the one-thread variant happens to beat the team's 1.0; the ones after do not.
    c.observe(l, l == Load::Idle ? 1.0 : (probes == 1 ? 0.9 : 1.3));
  }
  CHECK(probes == 3 + 1);
  CHECK(c.next() == Load::Idle);
}

TEST_CASE("thread policy: one slow run does not flip the choice", "[thread_policy]") {
  ThreadChoice c;
  runIdle(c, 40, 1.0, 1.3);
  CHECK(c.next() == Load::Idle);
  c.observe(Load::Idle, 50.0);  // a page fault storm, a preemption
  CHECK(runIdle(c, 10, 1.0, 1.3) >= 9);
}

TEST_CASE("thread policy: the estimate is the median of the last three runs", "[thread_policy]") {
  ThreadChoice c;
  c.next(), c.next();  // past the cold run, whose time is not counted
  CHECK(c.estimate(Load::Idle) == 0.0);
  const auto after = [&](double seconds) {
    c.observe(Load::Idle, seconds);
    return c.estimate(Load::Idle);
  };
  CHECK(after(5.0) == 5.0);
  CHECK(after(3.0) == 4.0);  // two runs: their mean
  CHECK(after(4.0) == 4.0);  // 5, 3, 4
  CHECK(after(9.0) == 4.0);  // 3, 4, 9
  CHECK(after(1.0) == 4.0);  // 4, 9, 1
  CHECK(after(0.5) == 1.0);  // 9, 1, 0.5
  CHECK(after(2.0) == 1.0);  // 1, 0.5, 2
  CHECK(c.estimate(Load::Loaded) == 0.0);
}
