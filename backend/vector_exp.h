// backend/vector_exp.h - exp of a non-positive float, written so that a
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
#pragma once

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

}  // namespace txl::backend::kernels
