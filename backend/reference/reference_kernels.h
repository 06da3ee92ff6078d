// backend/reference/reference_kernels.h - one plain-loop kernel per IR op: the ground truth.
//
// Each function computes exactly what ir/ops.def says its op computes, over
// host tensors, and returns a fresh tensor (reshape returns a view: tensors are
// never modified after they are produced). Arithmetic is float32 with dot
// products and reductions accumulated in double; ids and indices are i64.
// Ops that only move data (concat, slice, reshape, permute, pad, rel_shift,
// embedding, pick, constant) accept any dtype; add/sub/mul also accept i64;
// the float ops take f32, or bf16 widened to f32 with a bf16 result rounded
// back (the result has the dtype shape inference gives it). Another dtype
// throws txl::Error naming the op. Shapes are assumed to be what shape
// inference allows (checked with TXL_CHECK).
//
//   Tensor s = ref::matmul(q, k, /*transposeA=*/false, /*transposeB=*/true);
//   Tensor p = ref::softmax(ref::maskedFill(s, ref::attnMask(3, 2, 2, true), -INFINITY), -1);
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "ir/bf16.h"
#include "ir/tensor.h"

namespace txl::backend::ref {

using ir::Shape;
using ir::Tensor;
using ir::TensorType;

// --- Sources ----------------------------------------------------------------
// Every element equal to `value` (converted to the dtype).
Tensor constant(const TensorType& type, double value);
// f32[klen, d]; row m encodes distance klen-1-m (clamped to clampLen when > 0).
Tensor posEncoding(std::int64_t klen, std::int64_t d, std::int64_t clampLen);
// f32[qlen, mlen + qlen]; 1 where masked.
Tensor attnMask(std::int64_t qlen, std::int64_t mlen, std::int64_t memLen, bool sameLength);

// --- Elementwise and shape --------------------------------------------------
Tensor add(const Tensor& a, const Tensor& b);  // numpy broadcasting
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor scale(const Tensor& x, double factor);
Tensor relu(const Tensor& x);
// `value` where mask != 0; mask (any dtype) broadcasts against x's trailing dims.
Tensor maskedFill(const Tensor& x, const Tensor& mask, double value);
Tensor concat(const std::vector<Tensor>& xs, std::int64_t axis);
Tensor slice(const Tensor& x, std::int64_t axis, std::int64_t start, std::int64_t end);
Tensor reshape(const Tensor& x, const Shape& shape);  // a view of x's buffer
Tensor permute(const Tensor& x, const std::vector<std::int64_t>& perm);
Tensor pad(const Tensor& x, std::int64_t axis, std::int64_t before, std::int64_t after, double value);

// --- Compute ----------------------------------------------------------------
// table [rows, E], ids i64[...] -> [..., E]; ids outside [lo, lo + rows) give zero rows.
Tensor embedding(const Tensor& table, const Tensor& ids, std::int64_t lo);
// x [..., in], w [out, in], bias [out] or null -> x w^T + bias.
// The result is x's dtype, or `outType` when given (linear's out_dtype).
Tensor linear(const Tensor& x, const Tensor& w, const Tensor* bias = nullptr,
              std::optional<ir::DType> outType = std::nullopt);
// x as `dtype` (f32 or bf16; bf16 rounded to nearest even).
Tensor convert(const Tensor& x, ir::DType dtype);
// a [..., M, K], b [..., K, N] (transposed first when asked); batch dims broadcast.
Tensor matmul(const Tensor& a, const Tensor& b, bool transposeA, bool transposeB);
// Over the last axis, biased variance (as PyTorch).
Tensor layerNorm(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps);
// Max-subtracted; a slice that is entirely -inf gives NaN, as in PyTorch.
Tensor softmax(const Tensor& x, std::int64_t axis);
Tensor logSoftmax(const Tensor& x, std::int64_t axis);
// The reference's _rel_shift on the last two axes, leftovers included.
Tensor relShift(const Tensor& x);
// x [..., N], idx i64[...] -> x[..., idx]; an index outside [0, N) throws txl::Error.
Tensor pick(const Tensor& x, const Tensor& idx);

// bf16 <-> f32 (ir/bf16.h).
using ir::bf16ToFloat;
using ir::floatToBf16;

}  // namespace txl::backend::ref
