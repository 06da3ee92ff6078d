// backend/kernels/gemv.cpp - gemv(): per (batch index, block of n) one pass down B's
// rows. The loop over one block is cloned for AVX-512 (the rest of txlc
// targets baseline x86-64), as in onednn_fused.cpp.
#include "backend/kernels/gemv.h"

#include <algorithm>
#include <cmath>

namespace txl::backend::kernels {

namespace {

constexpr std::int64_t kBlockN = 256;  // outputs summed in registers / L1 per work item

// c[i, j0 + j] = Σ_k a[i, k] · B[i, k, j0 + j] for j < len <= kBlockN, k in
// increasing order, each step one fused multiply-add, explicit so that no
// optimization level changes it. That is how oneDNN's one-row products
// accumulate too, and the padded warm-up plan must agree bit for bit with
// the unpadded plans, which do not run every such product here (test
// `session: warm-up runs one padded plan…`; with plain multiply-adds it
// failed at -O1 and with -ffp-contract=off).
__attribute__((target_clones("avx512f", "default"))) void block(const float* a, const float* b, const GemvLayout& l,
                                                                std::int64_t i, std::int64_t j0, std::int64_t len,
                                                                float* c) {
  float acc[kBlockN];
  std::fill(acc, acc + len, 0.0f);
  const float* bi = b + l.b[i] + j0;
  for (std::int64_t kk = 0; kk < l.k; ++kk) {
    const float av = a[l.a[i] + kk * l.aK];
    const float* row = bi + kk * l.bK;
#pragma omp simd
    for (std::int64_t j = 0; j < len; ++j) acc[j] = std::fma(av, row[j], acc[j]);
  }
  std::copy(acc, acc + len, c + l.c[i] + j0);
}

}  // namespace

bool gemvSupports(const GemvLayout& l) {
  return l.batch >= 1 && l.k >= 1 && l.n >= 1 && std::int64_t(l.a.size()) == l.batch &&
         std::int64_t(l.b.size()) == l.batch && std::int64_t(l.c.size()) == l.batch;
}

void gemv(const float* a, const float* b, float* c, const GemvLayout& l, int threads) {
  const std::int64_t blocks = (l.n + kBlockN - 1) / kBlockN;
#pragma omp parallel for collapse(2) schedule(static) num_threads(std::max(threads, 1))
  for (std::int64_t i = 0; i < l.batch; ++i)
    for (std::int64_t bl = 0; bl < blocks; ++bl)
      block(a, b, l, i, bl * kBlockN, std::min(kBlockN, l.n - bl * kBlockN), c);
}

}  // namespace txl::backend::kernels
