// backend/onednn/thread_policy.cpp - ThreadChoice: the variant of each run
// from the medians of earlier runs' wall times.
#include "backend/onednn/thread_policy.h"

#include <algorithm>
#include <utility>

namespace txl::backend::onednn {

namespace {
Load other(Load l) { return l == Load::Idle ? Load::Loaded : Load::Idle; }
}  // namespace

double ThreadChoice::estimate(Load l) const {
  const Times& t = times_[static_cast<int>(l)];
  const std::array<double, 3>& v = t.last;
  switch (std::min(t.count, 3)) {
    case 0:
      return 0;
    case 1:
      return v[0];
    case 2:
      return (v[0] + v[1]) / 2;
    default:  // the median of three
      return std::max(std::min(v[0], v[1]), std::min(std::max(v[0], v[1]), v[2]));
  }
}

Load ThreadChoice::next() {
  if (!adaptive_) return fixed_;
  const std::int64_t run = runs_++;
  // Run 0 is cold (first touches of the arena, caches); then each variant twice, alternated.
  if (run < kSeedRuns) return run == 0 ? Load::Loaded : (run % 2 ? Load::Idle : Load::Loaded);
  const double idle = estimate(Load::Idle), loaded = estimate(Load::Loaded);
  const Load best = idle <= loaded ? Load::Idle : Load::Loaded;
  const double ratio = std::max(idle, loaded) / std::max(std::min(idle, loaded), 1e-12);
  const bool again = reprobe_ && *reprobe_ != best;  // the probed variant has not taken over yet
  reprobe_.reset();
  probing_ = again || ++sinceProbe_ > (ratio > kFarRatio ? kProbeEveryFar : kProbeEvery);
  if (probing_) {
    sinceProbe_ = 0;
    return other(best);
  }
  return best;
}

void ThreadChoice::observe(Load l, double seconds) {
  if (!adaptive_ || runs_ <= 1) return;  // the cold run tells nothing about the variant
  // Two fast probes in a row put the probed variant's median under the
  // chosen one's estimate, and so make it the chosen one.
  if (std::exchange(probing_, false) && seconds < estimate(other(l))) reprobe_ = l;
  Times& t = times_[static_cast<int>(l)];
  t.last[static_cast<std::size_t>(t.count % 3)] = seconds;
  ++t.count;
}

}  // namespace txl::backend::onednn
