// driver/sampler.cpp - Sampler.
#include "driver/sampler.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>

#include "ir/check.h"

namespace txl::driver {

namespace {
std::string number(double v) {
  std::ostringstream out;
  out << v;
  return out.str();
}
}  // namespace

void checkSamplerOptions(const SamplerOptions& o) {
  if (!(o.temperature >= 0) || !std::isfinite(o.temperature))
    throw Error("--temperature: expected a number at least 0 (0: greedy), got '" + number(o.temperature) + "'");
  if (o.topK < 0) throw Error("--top-k: expected a non-negative integer, got '" + std::to_string(o.topK) + "'");
  if (!(o.topP > 0 && o.topP <= 1)) throw Error("--top-p: expected a number in (0, 1], got '" + number(o.topP) + "'");
}

std::int64_t Sampler::next(std::span<const float> logprob) {
  TXL_CHECK(!logprob.empty(), "empty distribution");
  const std::int64_t n = std::int64_t(logprob.size());
  if (options_.greedy || options_.temperature == 0) {  // temperature 0: the limit of sharpening, the argmax
    std::int64_t best = 0;
    for (std::int64_t i = 1; i < n; ++i)
      if (logprob[std::size_t(i)] > logprob[std::size_t(best)]) best = i;
    return best;
  }
  // 1. scale
  double maxZ = -INFINITY;
  for (float v : logprob) maxZ = std::max(maxZ, double(v) / options_.temperature);
  candidates_.clear();
  for (std::int64_t i = 0; i < n; ++i)
    candidates_.emplace_back(std::exp(double(logprob[std::size_t(i)]) / options_.temperature - maxZ), i);
  // 2. order, 3. top-k
  auto byMass = [](const auto& a, const auto& b) {
    return a.first > b.first || (a.first == b.first && a.second < b.second);
  };
  std::size_t keep = candidates_.size();
  if (options_.topK > 0 && std::size_t(options_.topK) < keep) {
    keep = std::size_t(options_.topK);
    std::partial_sort(candidates_.begin(), candidates_.begin() + std::ptrdiff_t(keep), candidates_.end(), byMass);
  } else {
    std::sort(candidates_.begin(), candidates_.end(), byMass);
  }
  // 4. top-p
  double mass = 0;
  for (std::size_t i = 0; i < keep; ++i) mass += candidates_[i].first;
  if (options_.topP < 1.0) {
    double cum = 0;
    for (std::size_t i = 0; i < keep; ++i) {
      cum += candidates_[i].first;
      if (cum >= options_.topP * mass) {
        keep = i + 1;
        mass = cum;
        break;
      }
    }
  }
  // 5. draw
  const double u = double(rng_() >> 11) * 0x1.0p-53 * mass;
  double cum = 0;
  for (std::size_t i = 0; i < keep; ++i) {
    cum += candidates_[i].first;
    if (u < cum) return candidates_[i].second;
  }
  return candidates_[keep - 1].second;
}

}  // namespace txl::driver
