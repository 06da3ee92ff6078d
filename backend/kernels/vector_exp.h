// backend/kernels/vector_exp.h - exp of a non-positive float, written so that a
// `#pragma omp simd` loop calling it vectorizes (no libm call, no branch):
// the own kernels' softmax and log-sum-exp (onednn_fused.cpp) share it.
//
//   #pragma omp simd reduction(+ : sum)
//   for (std::int64_t j = 0; j < n; ++j) sum += kernels::expNonPositive(x[j] - max);
//
// Cody-Waite reduction (x = n ln 2 + r, ln 2 in two parts) and a degree-6
// polynomial for e^r: 6e-8 relative error; exactly 0 for -inf. Arguments
// below -87 are clamped there (e^-87 ~ 1.6e-38, the bottom of f32's normal
// range): for a softmax or a sum of exps whose largest term is 1, they are
// 0 to within f32 rounding. Positive arguments are outside its contract.
//
// expNonPositive16 is the AVX-512 form the attention kernels call on 16
// lanes at once (rel_attention.cpp, rel_attention_rows.cpp).
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

namespace txl::backend::kernels {

[[gnu::always_inline]] inline float expNonPositive(float d) {
  const float x = std::max(d, -87.0f);
  const float n = std::nearbyint(x * 1.44269504088896341f);
  const float r = x - n * 0.693359375f + n * 2.12194440e-4f;  // x - n ln 2, in two parts
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  const std::int32_t bits = (static_cast<std::int32_t>(n) + 127) << 23;  // 2^n
  float twoN;
  std::memcpy(&twoN, &bits, sizeof twoN);
  return d == -std::numeric_limits<float>::infinity() ? 0.0f : p * twoN;
}

// e^d for d <= 0 on 16 lanes (d = -inf included: clamped, then zeroed by
// the caller's mask): 2^t, t = d log2(e), as 2^(t - n) by a degree-6
// polynomial (Chebyshev interpolation on [-1/2, 1/2], 1e-7 relative) scaled
// by 2^n with scalef. 11 instructions where expNonPositive's form takes 18:
// at d = 64 the exps are a third of the attention's FMA-port work otherwise.
// Callable from functions compiled for AVX-512 (its target attribute).
__attribute__((target("avx512f"), always_inline)) inline __m512 expNonPositive16(__m512 d) {
  const __m512 log2e = _mm512_set1_ps(1.44269504088896341f);
  const __m512 x = _mm512_max_ps(d, _mm512_set1_ps(-87.0f));
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, log2e), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m512 f = _mm512_fmsub_ps(x, log2e, n);  // t - n in [-1/2, 1/2], t rounded once
  __m512 p = _mm512_set1_ps(1.5461444855e-4f);
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.3400427997e-3f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(9.6180569381e-3f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(5.5503271520e-2f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(2.4022650719e-1f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(6.9314718246e-1f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0f));
  return _mm512_scalef_ps(p, n);
}

}  // namespace txl::backend::kernels
