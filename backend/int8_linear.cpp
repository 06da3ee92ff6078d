// backend/int8_linear.cpp - int8Linear(): tiles of MR rows by NR channels,
// the NR weight rows widened once per 16 values and shared by the MR rows.
// The AVX-512 form is chosen at run time (the rest of txlc targets baseline
// x86-64); the portable form computes the same sums in the same lane order.
#include "backend/int8_linear.h"

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

#include "ir/bf16.h"
#include "ir/host_memory.h"
#include "ir/int8.h"

namespace txl::backend::kernels {

namespace {

constexpr int kLanes = 16;
constexpr std::int64_t kChannelsPerTask = 16;  // channels a thread takes at a time (NR divides it)

// The epilogue of output (r, c) from its lane sum.
inline void finish(const Int8Rows& w, const Int8LinearArgs& a, std::int64_t r, std::int64_t c, float sum) {
  float v = w.scale[c] * sum;
  if (a.bias) v += a.bias[c];
  if (a.relu) v = std::max(v, 0.0f);
  if (a.residual) v += a.residual[r * w.n + c];
  const std::int64_t at = r * w.n + c;
  if (a.yBf16) static_cast<std::uint16_t*>(a.y)[at] = ir::floatToBf16(v);
  else static_cast<float*>(a.y)[at] = v;
}

// The lanes' sum in the order _mm512_reduce_add_ps takes (halves, then
// halves of those): the portable form must match the AVX-512 one.
inline float laneSum(const float (&l)[kLanes]) {
  float h8[8], h4[4], h2[2];
  for (int i = 0; i < 8; ++i) h8[i] = l[i] + l[i + 8];
  for (int i = 0; i < 4; ++i) h4[i] = h8[i] + h8[i + 4];
  for (int i = 0; i < 2; ++i) h2[i] = h4[i] + h4[i + 2];
  return h2[0] + h2[1];
}

void portableTile(const Int8Rows& w, const Int8LinearArgs& a, std::int64_t r, std::int64_t c) {
  float lanes[kLanes] = {};
  const float* x = a.x + r * w.k;
  const std::int8_t* q = w.q + c * w.k;
  for (std::int64_t k = 0; k < w.k; ++k) lanes[k % kLanes] = std::fma(float(q[k]), x[k], lanes[k % kLanes]);
  finish(w, a, r, c, laneSum(lanes));
}

#define TXL_AVX512 __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,fma")))
#define TXL_AVX512_INLINE __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,fma"), always_inline)) inline

TXL_AVX512_INLINE __m512 widen(const std::int8_t* q, __mmask16 m) {
  return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(m, q)));
}

// Rows [r, r + MR) by channels [c, c + NR).
template <int MR, int NR>
TXL_AVX512 void avx512Tile(const Int8Rows& w, const Int8LinearArgs& a, std::int64_t r, std::int64_t c) {
  __m512 acc[MR][NR];
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NR; ++j) acc[i][j] = _mm512_setzero_ps();
  const std::int64_t k = w.k;
  const float* x = a.x + r * k;
  const std::int8_t* q = w.q + c * k;
  // One row (a generated token) reads every weight byte once, from DRAM:
  // the rows two tiles ahead are prefetched, a cache line per step, so the
  // stream keeps enough lines in flight for one core (without it the
  // enwik8 qlen-1 step ran at about 60 % of the speed; docs/LOG.md).
  const char* next = reinterpret_cast<const char*>(q + 2 * NR * k);
  for (std::int64_t kk = 0; kk < k; kk += kLanes) {
    const __mmask16 m = k - kk >= kLanes ? __mmask16(0xffff) : __mmask16((1u << (k - kk)) - 1);
    if (MR == 1) _mm_prefetch(next + kk * NR, _MM_HINT_T0);
    __m512 wv[NR];
    for (int j = 0; j < NR; ++j) wv[j] = widen(q + j * k + kk, m);
    for (int i = 0; i < MR; ++i) {
      const __m512 xv = _mm512_maskz_loadu_ps(m, x + i * k + kk);
      for (int j = 0; j < NR; ++j) acc[i][j] = _mm512_fmadd_ps(wv[j], xv, acc[i][j]);
    }
  }
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NR; ++j) finish(w, a, r + i, c + j, _mm512_reduce_add_ps(acc[i][j]));
}

// Channels [c0, c1) for every row.
TXL_AVX512 void avx512Channels(const Int8Rows& w, const Int8LinearArgs& a, std::int64_t c0, std::int64_t c1) {
  constexpr int MR = 4, NR = 4;
  std::int64_t c = c0;
  for (; c + NR <= c1; c += NR) {
    std::int64_t r = 0;
    for (; r + MR <= a.rows; r += MR) avx512Tile<MR, NR>(w, a, r, c);
    for (; r < a.rows; ++r) avx512Tile<1, NR>(w, a, r, c);
  }
  for (; c < c1; ++c)
    for (std::int64_t r = 0; r < a.rows; ++r) avx512Tile<1, 1>(w, a, r, c);
}

bool haveAvx512() {
  static const bool have = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                           __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
                           __builtin_cpu_supports("fma");
  return have;
}

}  // namespace

bool int8LinearAvx512() { return haveAvx512(); }

Int8Rows allocateInt8Rows(std::int64_t n, std::int64_t k) {
  Int8Rows w;
  w.n = n;
  w.k = k;
  w.bytes = ir::allocateUntouched(std::max<std::size_t>(w.size(), 1));
  w.scale = static_cast<const float*>(w.bytes.get());
  w.q = reinterpret_cast<const std::int8_t*>(static_cast<const char*>(w.bytes.get()) + std::size_t(n) * sizeof(float));
  return w;
}

void quantizeInt8Rows(const float* weight, std::int64_t first, std::int64_t count, Int8Rows& into, int threads) {
  auto* scale = const_cast<float*>(into.scale);
  auto* q = const_cast<std::int8_t*>(into.q);
  const std::int64_t k = into.k;
#pragma omp parallel for schedule(static) num_threads(std::max(threads, 1))
  for (std::int64_t r = first; r < first + count; ++r) ir::int8QuantizeRows(weight + r * k, 1, k, q + r * k, scale + r);
}

void int8LinearPortable(const Int8Rows& w, const Int8LinearArgs& a) {
  for (std::int64_t c = 0; c < w.n; ++c)
    for (std::int64_t r = 0; r < a.rows; ++r) portableTile(w, a, r, c);
}

void int8Linear(const Int8Rows& w, const Int8LinearArgs& a, int threads) {
  if (a.rows == 0 || w.n == 0) return;
  const std::int64_t tasks = (w.n + kChannelsPerTask - 1) / kChannelsPerTask;
  const bool avx512 = haveAvx512();
#pragma omp parallel for schedule(static) num_threads(std::max(threads, 1))
  for (std::int64_t t = 0; t < tasks; ++t) {
    const std::int64_t c0 = t * kChannelsPerTask, c1 = std::min(w.n, c0 + kChannelsPerTask);
    if (avx512) {
      avx512Channels(w, a, c0, c1);
    } else {
      for (std::int64_t c = c0; c < c1; ++c)
        for (std::int64_t r = 0; r < a.rows; ++r) portableTile(w, a, r, c);
    }
  }
}

}  // namespace txl::backend::kernels

#pragma GCC diagnostic pop
