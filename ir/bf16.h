// ir/bf16.h - bfloat16 values and tensors.
//
// bf16 is the upper half of an IEEE f32: the same exponent range, 8
// significand bits. Widening is exact; narrowing rounds to nearest even, and
// a NaN stays a (quiet) NaN of the same sign.
//
//   std::uint16_t b = ir::floatToBf16(1.0f);        // 0x3f80
//   ir::Tensor f = ir::convertFloat(t, DType::F32);  // a bf16 tensor widened
#pragma once

#include <bit>
#include <cstdint>

#include "ir/tensor.h"

namespace txl::ir {

inline float bf16ToFloat(std::uint16_t bits) { return std::bit_cast<float>(std::uint32_t(bits) << 16); }

inline std::uint16_t floatToBf16(float value) {
  std::uint32_t bits = std::bit_cast<std::uint32_t>(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return std::uint16_t((bits >> 16) | 0x40);  // NaN: keep it quiet
  bits += 0x7fffu + ((bits >> 16) & 1u);                                              // round to nearest even
  return std::uint16_t(bits >> 16);
}

// `count` values of one float dtype as another (a copy when they are the same).
void convertFloats(DType from, const void* src, DType to, void* dst, std::int64_t count);

// t (f32 or bf16) as a tensor of `dtype` (f32 or bf16): t itself when it
// already is, else a converted copy. txl::InternalError for i64.
Tensor convertFloat(const Tensor& t, DType dtype);

}  // namespace txl::ir
