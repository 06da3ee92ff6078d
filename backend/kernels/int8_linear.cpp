// backend/kernels/int8_linear.cpp - int8Linear(): tiles of MR rows by NR blocks of
// 16 channels; per input, each block's 16 weights are widened once and
// multiplied with the MR rows' input (no horizontal sums).
// The AVX-512 form is chosen at run time (the rest of txlc targets baseline
// x86-64); the portable form computes the same sums in the same order.
#include "backend/kernels/int8_linear.h"

// GCC 12's AVX-512 intrinsics start from _mm512_undefined_ps(), which its
// -Wuninitialized reports once inlined (GCC bug 105593): silenced for them.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "backend/platform.h"
#include "ir/bf16.h"
#include "ir/host_memory.h"
#include "ir/int8.h"

namespace txl::backend::kernels {

namespace {

constexpr std::int64_t kBlock = Int8Rows::kBlock;

// The epilogue of output (r, c) from its sum.
inline void finish(const Int8Rows& w, const Int8LinearArgs& a, std::int64_t r, std::int64_t c, float sum) {
  float v = w.scale[c] * sum;
  if (a.bias) v += a.bias[c];
  if (a.relu) v = std::max(v, 0.0f);
  if (a.residual) v += a.residual[r * w.n + c];
  const std::int64_t at = r * w.n + c;
  if (a.yBf16) static_cast<std::uint16_t*>(a.y)[at] = ir::floatToBf16(v);
  else static_cast<float*>(a.y)[at] = v;
}

void portableBlock(const Int8Rows& w, const Int8LinearArgs& a, std::int64_t b) {
  const std::int64_t c0 = b * kBlock, count = std::min(kBlock, w.n - c0);
  const std::int8_t* q = w.q + b * w.k * kBlock;
  for (std::int64_t r = 0; r < a.rows; ++r) {
    float acc[kBlock] = {};
    const float* x = a.x + r * w.k;
    for (std::int64_t j = 0; j < w.k; ++j)
      for (std::int64_t c = 0; c < kBlock; ++c) acc[c] = std::fma(x[j], float(q[j * kBlock + c]), acc[c]);
    for (std::int64_t c = 0; c < count; ++c) finish(w, a, r, c0 + c, acc[c]);
  }
}

#define TXL_AVX512 __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,fma")))
#define TXL_AVX512_INLINE __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,fma"), always_inline)) inline

TXL_AVX512_INLINE __m512 widen(const std::int8_t* q) {
  return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q))));
}

// Rows [r, r + MR) by the NR blocks from block b: per input j, each block's
// 16 weights widened once and multiplied with the MR rows' x[j].
template <int MR, int NR>
TXL_AVX512 void avx512Tile(const Int8Rows& w, const Int8LinearArgs& a, std::int64_t r, std::int64_t b) {
  __m512 acc[MR][NR];
  for (int i = 0; i < MR; ++i)
    for (int t = 0; t < NR; ++t) acc[i][t] = _mm512_setzero_ps();
  const std::int64_t k = w.k;
  const float* x = a.x + r * k;
  const std::int8_t* q = w.q + b * k * kBlock;
  // One row (a generated token) reads every weight byte once, from DRAM:
  // the tile two tiles ahead (NR contiguous blocks) is prefetched as many
  // bytes per input as this one reads, so the stream keeps enough lines in
  // flight for one core (without it the enwik8 qlen-1 step ran at about
  // 60 % of the speed; docs/LOG.md).
  const char* next = reinterpret_cast<const char*>(q + 2 * NR * k * kBlock);
  for (std::int64_t j = 0; j < k; ++j) {
    if (MR == 1 && (j * NR * kBlock) % 64 == 0) _mm_prefetch(next + j * NR * kBlock, _MM_HINT_T0);
    __m512 wv[NR];
    for (int t = 0; t < NR; ++t) wv[t] = widen(q + (t * k + j) * kBlock);
    for (int i = 0; i < MR; ++i) {
      const __m512 xv = _mm512_set1_ps(x[i * k + j]);
      for (int t = 0; t < NR; ++t) acc[i][t] = _mm512_fmadd_ps(xv, wv[t], acc[i][t]);
    }
  }
  for (int t = 0; t < NR; ++t) {
    const std::int64_t c0 = (b + t) * kBlock, count = std::min(kBlock, w.n - c0);
    for (int i = 0; i < MR; ++i) {
      alignas(64) float sums[kBlock];
      _mm512_store_ps(sums, acc[i][t]);
      for (std::int64_t c = 0; c < count; ++c) finish(w, a, r + i, c0 + c, sums[c]);
    }
  }
}

// Blocks [b0, b1) for every row.
template <int MR, int NR>
TXL_AVX512 void avx512Blocks(const Int8Rows& w, const Int8LinearArgs& a, std::int64_t b0, std::int64_t b1) {
  std::int64_t b = b0;
  for (; b + NR <= b1; b += NR) {
    std::int64_t r = 0;
    for (; r + MR <= a.rows; r += MR) avx512Tile<MR, NR>(w, a, r, b);
    for (; r < a.rows; ++r) avx512Tile<1, NR>(w, a, r, b);
  }
  for (; b < b1; ++b)
    for (std::int64_t r = 0; r < a.rows; ++r) avx512Tile<1, 1>(w, a, r, b);
}

}  // namespace

bool int8LinearAvx512() { return platform().avx512; }

Int8Rows allocateInt8Rows(std::int64_t n, std::int64_t k) {
  Int8Rows w;
  w.n = n;
  w.k = k;
  w.bytes = ir::allocateUntouched(std::max<std::size_t>(w.size(), 1));
  w.scale = static_cast<const float*>(w.bytes.get());
  w.q = reinterpret_cast<const std::int8_t*>(static_cast<const char*>(w.bytes.get()) + std::size_t(n) * sizeof(float));
  // The padding rows of the last block are read (and never stored): zeros.
  if (const std::int64_t pad = w.blocks() * kBlock - n; pad > 0)
    for (std::int64_t j = 0; j < k; ++j)
      std::memset(const_cast<std::int8_t*>(w.q) + ((w.blocks() - 1) * k + j) * kBlock + (kBlock - pad), 0,
                  std::size_t(pad));
  return w;
}

void quantizeInt8Rows(const float* weight, std::int64_t first, std::int64_t count, Int8Rows& into, int threads) {
  auto* scale = const_cast<float*>(into.scale);
  auto* q = const_cast<std::int8_t*>(into.q);
  const std::int64_t k = into.k;
#pragma omp parallel for schedule(static) num_threads(std::max(threads, 1))
  for (std::int64_t r = first; r < first + count; ++r) {
    const float* row = weight + r * k;
    const float s = ir::int8RowScale(row, k);
    scale[r] = s;
    std::int8_t* block = q + (r / kBlock) * k * kBlock + r % kBlock;
    for (std::int64_t j = 0; j < k; ++j) block[j * kBlock] = ir::int8Quantize(row[j], s);
  }
}

void int8LinearPortable(const Int8Rows& w, const Int8LinearArgs& a) {
  for (std::int64_t b = 0; b < w.blocks(); ++b) portableBlock(w, a, b);
}

void int8Linear(const Int8Rows& w, const Int8LinearArgs& a, int threads) {
  if (a.rows == 0 || w.n == 0) return;
  // A task is 4 blocks (64 channels): one tile of one row, or two of many.
  constexpr std::int64_t kBlocksPerTask = 4;
  const std::int64_t tasks = (w.blocks() + kBlocksPerTask - 1) / kBlocksPerTask;
  const bool avx512 = platform().avx512;
#pragma omp parallel for schedule(static) num_threads(std::max(threads, 1))
  for (std::int64_t t = 0; t < tasks; ++t) {
    const std::int64_t b0 = t * kBlocksPerTask, b1 = std::min(w.blocks(), b0 + kBlocksPerTask);
    if (!avx512) {
      for (std::int64_t b = b0; b < b1; ++b) portableBlock(w, a, b);
    } else if (a.rows == 1) {
      avx512Blocks<1, 4>(w, a, b0, b1);
    } else {
      avx512Blocks<8, 2>(w, a, b0, b1);
    }
  }
}

}  // namespace txl::backend::kernels

#pragma GCC diagnostic pop
