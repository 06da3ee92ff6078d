// backend/kernels/int8_vnni.cpp - int8LinearVnni(): the activation rows quantized
// once per call, then tiles of MR rows by NR blocks of 16 channels, each
// group of 4 inputs one vpdpbusd per (row, block) with the row's 4 bytes
// broadcast; int32 accumulators start at minus the row's zero point times the
// channels' column sums.
// The AVX512-VNNI form is chosen at run time (the rest of txlc targets
// baseline x86-64); the portable form computes the same exact sums and the
// same epilogue.
#include "backend/kernels/int8_vnni.h"

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
#include <limits>
#include <vector>

#include "backend/platform.h"
#include "ir/bf16.h"
#include "ir/host_memory.h"
#include "ir/int8.h"

namespace txl::backend::kernels {

namespace {

constexpr std::int64_t kBlock = Int8Vnni::kBlock;

// The epilogue of output (r, c) from its exact sum and the row's scale.
inline void finish(const Int8Vnni& w, const Int8LinearArgs& a, std::int64_t r, std::int64_t c, std::int32_t sum,
                   float rowScale) {
  float v = std::fma(float(sum), rowScale * w.scale[c], a.bias ? a.bias[c] : 0.0f);
  if (a.relu) v = std::max(v, 0.0f);
  if (a.residual) v += a.residual[r * w.n + c];
  const std::int64_t at = r * w.n + c;
  if (a.yBf16) static_cast<std::uint16_t*>(a.y)[at] = ir::floatToBf16(v);
  else static_cast<float*>(a.y)[at] = v;
}

#define TXL_VNNI __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx512vnni,fma")))

// The scale and zero point of a row spanning [lo, hi] (lo <= 0 <= hi, both
// finite): the definition in int8_vnni.h, shared by both forms.
inline ActivationRow rowQuantization(float lo, float hi) {
  if (lo == 0.0f && hi == 0.0f) return {};
  ActivationRow q;
  q.scale = hi / 255.0f - lo / 255.0f;  // never overflows, unlike (hi - lo) / 255
  q.zero = std::int32_t(std::clamp(std::nearbyint(-lo / q.scale), 0.0f, 255.0f));
  return q;
}

// The byte standing for v: round-half-even(v / s) + z clamped to [0, 255].
inline std::uint8_t quantizeOne(float v, const ActivationRow& q) {
  return std::uint8_t(std::clamp(std::nearbyint(v / q.scale) + float(q.zero), 0.0f, 255.0f));
}

// quantizeActivationRow's AVX-512 form: the same range (a min or max is exact
// in any order), scale and zero point, the same quotients (IEEE division,
// rounding half to even as nearbyint does) and clamp.
TXL_VNNI ActivationRow quantizeRowAvx512(const float* x, std::int64_t k, std::uint8_t* u) {
  __m512 lo = _mm512_setzero_ps(), hi = _mm512_setzero_ps();
  __mmask16 bad = 0;
  for (std::int64_t j = 0; j < k; j += 16) {
    const __mmask16 in = k - j >= 16 ? __mmask16(0xffff) : __mmask16((1u << (k - j)) - 1);
    const __m512 v = _mm512_maskz_loadu_ps(in, x + j);
    bad |= _mm512_fpclass_ps_mask(v, 0x99);  // NaN or infinity
    lo = _mm512_min_ps(lo, v);
    hi = _mm512_max_ps(hi, v);
  }
  if (bad) {
    std::memset(u, 0, std::size_t(k));
    return {std::numeric_limits<float>::quiet_NaN(), 0};
  }
  const ActivationRow q = rowQuantization(_mm512_reduce_min_ps(lo), _mm512_reduce_max_ps(hi));
  const __m512 sv = _mm512_set1_ps(q.scale), zv = _mm512_set1_ps(float(q.zero)), top = _mm512_set1_ps(255.0f),
               zero = _mm512_setzero_ps();
  for (std::int64_t j = 0; j < k; j += 16) {
    const __mmask16 in = k - j >= 16 ? __mmask16(0xffff) : __mmask16((1u << (k - j)) - 1);
    const __m512 r = _mm512_roundscale_ps(_mm512_div_ps(_mm512_maskz_loadu_ps(in, x + j), sv),
                                          _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m512 c = _mm512_min_ps(_mm512_max_ps(_mm512_add_ps(r, zv), zero), top);
    _mm_mask_storeu_epi8(u + j, in, _mm512_cvtepi32_epi8(_mm512_cvtps_epi32(c)));
  }
  return q;
}

// acc += the 4-byte dot products of u8 `u` and s8 `s` per 32-bit lane, as
// _mm512_dpbusd_epi32; in asm because GCC 12 round-trips every accumulator of
// an unrolled tile through the stack around the intrinsic.
TXL_VNNI inline void dpbusd(__m512i& acc, __m512i u, __m512i s) {
  asm("vpdpbusd %[s], %[u], %[acc]" : [acc] "+v"(acc) : [u] "v"(u), [s] "v"(s));
}

// Rows [r, r + MR) by blocks [b, b + NR): u holds the rows' bytes (row
// stride `stride`), rows their scales and zero points.
template <int MR, int NR>
TXL_VNNI void vnniTile(const Int8Vnni& w, const Int8LinearArgs& a, const std::uint8_t* u, std::int64_t stride,
                       const ActivationRow* rows, std::int64_t r, std::int64_t b) {
  const std::int64_t groups = w.groups();
  __m512i acc[MR][NR];
#pragma GCC unroll 8
  for (int t = 0; t < NR; ++t) {
    const __m512i sum = _mm512_loadu_si512(w.colSum + (b + t) * kBlock);
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) acc[i][t] = _mm512_mullo_epi32(sum, _mm512_set1_epi32(-rows[r + i].zero));
  }
  const std::int8_t* q = w.q + b * groups * 64;
  const std::uint8_t* x = u + r * stride;
  for (std::int64_t g = 0; g < groups; ++g) {
    __m512i wv[NR];
#pragma GCC unroll 8
    for (int t = 0; t < NR; ++t) wv[t] = _mm512_loadu_si512(q + (t * groups + g) * 64);
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) {
      std::int32_t four;
      std::memcpy(&four, x + i * stride + g * 4, 4);
      const __m512i xv = _mm512_set1_epi32(four);
#pragma GCC unroll 8
      for (int t = 0; t < NR; ++t) dpbusd(acc[i][t], xv, wv[t]);
    }
  }
  const __m512 zero = _mm512_setzero_ps();
#pragma GCC unroll 8
  for (int t = 0; t < NR; ++t) {
    const std::int64_t c0 = (b + t) * kBlock, count = std::min(kBlock, w.n - c0);
    const __mmask16 in = count >= 16 ? __mmask16(0xffff) : __mmask16((1u << count) - 1);
    const __m512 scale = _mm512_loadu_ps(w.scale + c0);
    const __m512 bias = a.bias ? _mm512_maskz_loadu_ps(in, a.bias + c0) : zero;
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) {
      const std::int64_t row = r + i;
      __m512 v =
          _mm512_fmadd_ps(_mm512_cvtepi32_ps(acc[i][t]), _mm512_mul_ps(_mm512_set1_ps(rows[row].scale), scale), bias);
      // max(0, v): a NaN stays NaN, as std::max(v, 0) in the portable form.
      if (a.relu) v = _mm512_max_ps(zero, v);
      if (a.residual) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(in, a.residual + row * w.n + c0));
      if (a.yBf16) {
        alignas(64) float out[kBlock];
        _mm512_store_ps(out, v);
        auto* y = static_cast<std::uint16_t*>(a.y) + row * w.n + c0;
        for (std::int64_t c = 0; c < count; ++c) y[c] = ir::floatToBf16(out[c]);
      } else {
        _mm512_mask_storeu_ps(static_cast<float*>(a.y) + row * w.n + c0, in, v);
      }
    }
  }
}

// 6 rows by 4 blocks: 24 accumulators, 4 weight registers and a broadcast
// of the 32; per group of 4 inputs, 10 loads for 24 vpdpbusd.
constexpr int kMR = 6, kNR = 4;

template <int NR>
TXL_VNNI void vnniRows(const Int8Vnni& w, const Int8LinearArgs& a, const std::uint8_t* u, std::int64_t stride,
                       const ActivationRow* rows, std::int64_t b) {
  std::int64_t r = 0;
  for (; r + kMR <= a.rows; r += kMR) vnniTile<kMR, NR>(w, a, u, stride, rows, r, b);
  switch (a.rows - r) {
    case 5:
      vnniTile<5, NR>(w, a, u, stride, rows, r, b);
      break;
    case 4:
      vnniTile<4, NR>(w, a, u, stride, rows, r, b);
      break;
    case 3:
      vnniTile<3, NR>(w, a, u, stride, rows, r, b);
      break;
    case 2:
      vnniTile<2, NR>(w, a, u, stride, rows, r, b);
      break;
    case 1:
      vnniTile<1, NR>(w, a, u, stride, rows, r, b);
      break;
    default:
      break;
  }
}

TXL_VNNI void vnniBlocks(const Int8Vnni& w, const Int8LinearArgs& a, const std::uint8_t* u, std::int64_t stride,
                         const ActivationRow* rows, std::int64_t b0, std::int64_t b1) {
  std::int64_t b = b0;
  for (; b + kNR <= b1; b += kNR) vnniRows<kNR>(w, a, u, stride, rows, b);
  for (; b < b1; ++b) vnniRows<1>(w, a, u, stride, rows, b);
}

static_assert(kInt8VnniTileRows % kMR == 0);

// The shifted bytes of a tile's rows (kInt8VnniTileRows at most), reused
// across calls on one thread.
struct Scratch {
  std::vector<std::uint8_t> u;
  std::vector<ActivationRow> rows;
};
thread_local Scratch scratch;

// Rows [r0, r0 + n) of a call: its dense inputs, residuals and outputs from row r0.
Int8LinearArgs rowsOf(const Int8Vnni& w, const Int8LinearArgs& a, std::int64_t r0, std::int64_t n) {
  Int8LinearArgs part = a;
  part.x = a.x + r0 * w.k;
  part.rows = n;
  part.residual = a.residual ? a.residual + r0 * w.n : nullptr;
  part.y = a.yBf16 ? static_cast<void*>(static_cast<std::uint16_t*>(a.y) + r0 * w.n)
                   : static_cast<void*>(static_cast<float*>(a.y) + r0 * w.n);
  return part;
}

}  // namespace

ActivationRow quantizeActivationRow(const float* x, std::int64_t k, std::uint8_t* u) {
  float lo = 0.0f, hi = 0.0f;
  for (std::int64_t j = 0; j < k; ++j) {
    if (!std::isfinite(x[j])) {
      std::memset(u, 0, std::size_t(k));
      return {std::numeric_limits<float>::quiet_NaN(), 0};
    }
    lo = std::min(lo, x[j]);
    hi = std::max(hi, x[j]);
  }
  const ActivationRow q = rowQuantization(lo, hi);
  for (std::int64_t j = 0; j < k; ++j) u[j] = quantizeOne(x[j], q);
  return q;
}

bool int8LinearVnniNative() { return platform().avx512Vnni; }

std::size_t int8VnniScratchBytes() { return scratch.u.capacity() + scratch.rows.capacity() * sizeof(ActivationRow); }

std::shared_ptr<Int8Vnni> packInt8Vnni(const Int8Rows& rows, int threads) {
  auto w = std::make_shared<Int8Vnni>();
  w->n = rows.n;
  w->k = rows.k;
  w->bytes = ir::allocateUntouched(std::max<std::size_t>(w->size(), 1));
  const std::int64_t padded = w->blocks() * kBlock, groups = w->groups(), k = rows.k;
  auto* scale = static_cast<float*>(w->bytes.get());
  auto* colSum = reinterpret_cast<std::int32_t*>(scale + padded);
  auto* q = reinterpret_cast<std::int8_t*>(colSum + padded);
  w->scale = scale;
  w->colSum = colSum;
  w->q = q;
#pragma omp parallel for schedule(static) num_threads(std::max(threads, 1))
  for (std::int64_t b = 0; b < w->blocks(); ++b) {
    for (std::int64_t c = 0; c < kBlock; ++c) {
      const std::int64_t ch = b * kBlock + c;
      scale[ch] = ch < rows.n ? rows.scale[ch] : 0.0f;
      std::int32_t sum = 0;
      for (std::int64_t g = 0; g < groups; ++g)
        for (std::int64_t jj = 0; jj < 4; ++jj) {
          const std::int64_t j = g * 4 + jj;
          const std::int8_t v = j < k ? rows.q[(b * k + j) * kBlock + c] : std::int8_t(0);  // padding rows are 0
          q[(b * groups + g) * 64 + c * 4 + jj] = v;
          sum += v;
        }
      colSum[ch] = sum;
    }
  }
  return w;
}

void int8LinearVnniPortable(const Int8Vnni& w, const Int8LinearArgs& a) {
  std::vector<std::uint8_t> u(std::size_t(std::max<std::int64_t>(w.k, 1)));
  for (std::int64_t r = 0; r < a.rows; ++r) {
    const ActivationRow q = quantizeActivationRow(a.x + r * w.k, w.k, u.data());
    for (std::int64_t c = 0; c < w.n; ++c) {
      std::int64_t sum = 0;
      for (std::int64_t j = 0; j < w.k; ++j) sum += (std::int64_t(u[j]) - q.zero) * w.at(c, j);
      finish(w, a, r, c, std::int32_t(sum), q.scale);
    }
  }
}

void int8LinearVnni(const Int8Vnni& w, const Int8LinearArgs& a, int threads) {
  if (a.rows == 0 || w.n == 0) return;
  if (!platform().avx512Vnni) {
    // Rows are independent: split them over the threads.
#pragma omp parallel for schedule(static) num_threads(std::max(threads, 1))
    for (std::int64_t r = 0; r < a.rows; ++r) {
      int8LinearVnniPortable(w, rowsOf(w, a, r, 1));
    }
    return;
  }
  const std::int64_t stride = w.groups() * 4, tileRows = std::min(a.rows, kInt8VnniTileRows);
  if (scratch.u.size() < std::size_t(tileRows * stride)) scratch.u.resize(std::size_t(tileRows * stride));
  if (scratch.rows.size() < std::size_t(tileRows)) scratch.rows.resize(std::size_t(tileRows));
  std::uint8_t* u = scratch.u.data();
  ActivationRow* rows = scratch.rows.data();
  // A task is kNR blocks (64 channels) for every row of the tile: the
  // weight panel is read from cache once per kMR rows.
  const std::int64_t tasks = (w.blocks() + kNR - 1) / kNR;
#pragma omp parallel num_threads(std::max(threads, 1))
  for (std::int64_t r0 = 0; r0 < a.rows; r0 += tileRows) {
    const Int8LinearArgs tile = rowsOf(w, a, r0, std::min(tileRows, a.rows - r0));
#pragma omp for schedule(static)
    for (std::int64_t r = 0; r < tile.rows; ++r) {
      rows[r] = quantizeRowAvx512(tile.x + r * w.k, w.k, u + r * stride);
      // The group's padding inputs meet zero weights; any byte will do.
      for (std::int64_t j = w.k; j < stride; ++j) u[r * stride + j] = 0;
    }
#pragma omp for schedule(static)
    for (std::int64_t t = 0; t < tasks; ++t)
      vnniBlocks(w, tile, u, stride, rows, t * kNR, std::min(w.blocks(), (t + 1) * kNR));
  }
}

}  // namespace txl::backend::kernels

#pragma GCC diagnostic pop
