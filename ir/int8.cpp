// ir/int8.cpp - per-row int8 quantization.
#include "ir/int8.h"

#include <cmath>

#include "ir/check.h"

namespace txl::ir {

float int8RowScale(const float* row, std::int64_t n) {
  float m = 0.0f;
  for (std::int64_t j = 0; j < n; ++j) {
    const float a = std::fabs(row[j]);
    if (!(a <= m)) m = a;  // a NaN wins too, so the scale is not finite
  }
  return m == 0.0f ? 1.0f : m / 127.0f;
}

std::int8_t int8Quantize(float v, float scale) {
  const float r = std::nearbyint(v / scale);  // the default rounding mode: half to even
  if (std::isnan(r)) return 0;
  return std::int8_t(std::fmin(std::fmax(r, -127.0f), 127.0f));
}

void int8QuantizeRows(const float* w, std::int64_t rows, std::int64_t n, std::int8_t* q, float* scale) {
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* row = w + r * n;
    const float s = int8RowScale(row, n);
    scale[r] = s;
    for (std::int64_t j = 0; j < n; ++j) q[r * n + j] = int8Quantize(row[j], s);
  }
}

Tensor int8RoundTrip(const Tensor& t) {
  TXL_CHECK(t.dtype() == DType::F32 && t.type().rank() == 2, "int8 rows of " + t.type().str());
  const std::int64_t rows = t.shape()[0], n = t.shape()[1];
  Tensor out = Tensor::zeros(t.type());
  const float* w = t.data<float>();
  float* y = out.data<float>();
  for (std::int64_t r = 0; r < rows; ++r) {
    const float s = int8RowScale(w + r * n, n);
    for (std::int64_t j = 0; j < n; ++j) y[r * n + j] = s * float(int8Quantize(w[r * n + j], s));
  }
  return out;
}

}  // namespace txl::ir
