// driver/sampler.h - choosing the next token from log-probabilities.
//
// Reproducible across standard libraries: the only randomness is
// std::mt19937_64 (whose output the standard fixes), turned into a uniform
// double in [0, 1) by its top 53 bits; the rest is plain arithmetic here.
//
// Algorithm (sample):
//   1. scale: z_i = logprob_i / temperature, p_i = exp(z_i - max z);
//   2. order the candidates by p descending (ties: lower id first);
//   3. keep the first top_k (0: all);
//   4. keep the shortest prefix whose mass reaches top_p of the kept mass
//      (the token that crosses the threshold stays);
//   5. draw u in [0, kept mass) and walk the prefix.
//
//   Sampler s({.temperature = 0.7, .topK = 40, .seed = 1});
//   std::int64_t id = s.next(logprobRow);
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <vector>

namespace txl::driver {

struct SamplerOptions {
  bool greedy = false;
  double temperature = 1.0;  // >= 0; 0 is greedy (as llama.cpp's and transformers' --temp 0)
  std::int64_t topK = 0;     // 0: no limit
  double topP = 1.0;         // (0, 1]
  std::uint64_t seed = 0;
};

// The one check of sampler options (txl::Error, one line naming the flag):
// temperature a number at least 0 (0: greedy), top_k >= 0, top_p in (0, 1].
void checkSamplerOptions(const SamplerOptions& options);

class Sampler {
 public:
  explicit Sampler(const SamplerOptions& options) : options_(options), rng_(options.seed) {}
  std::int64_t next(std::span<const float> logprob);

 private:
  SamplerOptions options_;
  std::mt19937_64 rng_;
  std::vector<std::pair<double, std::int64_t>> candidates_;
};

}  // namespace txl::driver
