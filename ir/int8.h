// ir/int8.h - int8 rows with one f32 scale per row: what the quantize op
// computes (ir/ops.def) and what the oneDNN backend stores.
//
// Row r of a matrix is quantized symmetrically: s[r] = max_j |w[r, j]| / 127
// (1 for a row of zeros), q[r, j] = round-half-even(w[r, j] / s[r]) in
// [-127, 127]; the row it stands for is s[r] * q[r, j]. One scale per output
// channel of a linear weight [out, in] (docs/PRECISION.md says why rows).
//
//   float s = ir::int8RowScale(row, n);
//   for (j...) q[j] = ir::int8Quantize(row[j], s);  // s * q[j] is the value
#pragma once

#include <cstdint>

#include "ir/tensor.h"

namespace txl::ir {

// The scale of a row of `n` floats: max |row[j]| / 127, or 1 when every
// element is 0. A non-finite element makes it non-finite.
float int8RowScale(const float* row, std::int64_t n);

// round-half-even(v / scale) clamped to [-127, 127] (a NaN quotient gives 0).
std::int8_t int8Quantize(float v, float scale);

// Each row of `rows` rows of `n` floats at `w` into `q` (rows * n) and `scale` (rows).
void int8QuantizeRows(const float* w, std::int64_t rows, std::int64_t n, std::int8_t* q, float* scale);

// The f32 tensor [rows, n] that quantized rows of the f32 tensor t [rows, n]
// stand for: s[r] * q[r, j]. txl::InternalError unless t is f32 of rank 2.
Tensor int8RoundTrip(const Tensor& t);

}  // namespace txl::ir
