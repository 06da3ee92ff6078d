// tests/bench/spec_case.h - a benchmark spec (bench/*.json) at a reduced
// mem_len, and random token ids for it: what the bench tests run.
#pragma once

#include <cstdint>
#include <random>

#include "ir/tensor.h"

namespace txl::testing {

struct SpecCase {
  const char* spec;  // a file of bench/
  std::int64_t batch, qlen, memLen;
  bool nll;
};

// i64[qlen, batch] ids in [0, n).
inline ir::Tensor randomIds(std::int64_t qlen, std::int64_t batch, std::int64_t n, std::mt19937_64& rng) {
  ir::Tensor t = ir::Tensor::zeros({ir::DType::I64, {qlen, batch}});
  for (auto& v : t.span<std::int64_t>()) v = std::int64_t(rng() % std::uint64_t(n));
  return t;
}

}  // namespace txl::testing
