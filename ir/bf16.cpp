// ir/bf16.cpp - conversions between f32 and bf16 buffers and tensors.
#include "ir/bf16.h"

#include <cstring>

#include "ir/check.h"

namespace txl::ir {

void convertFloats(DType from, const void* src, DType to, void* dst, std::int64_t count) {
  TXL_CHECK(from != DType::I64 && to != DType::I64, "convertFloats of i64");
  if (from == to) {
    std::memcpy(dst, src, std::size_t(count) * dtypeSize(from));
    return;
  }
  if (from == DType::F32) {
    const float* s = static_cast<const float*>(src);
    std::uint16_t* d = static_cast<std::uint16_t*>(dst);
    for (std::int64_t i = 0; i < count; ++i) d[i] = floatToBf16(s[i]);
  } else {
    const std::uint16_t* s = static_cast<const std::uint16_t*>(src);
    float* d = static_cast<float*>(dst);
    for (std::int64_t i = 0; i < count; ++i) d[i] = bf16ToFloat(s[i]);
  }
}

Tensor convertFloat(const Tensor& t, DType dtype) {
  if (t.dtype() == dtype) return t;
  Tensor out = Tensor::zeros({dtype, t.shape()});
  convertFloats(t.dtype(), t.raw(), dtype, out.raw(), t.numel());
  return out;
}

}  // namespace txl::ir
