// backend/reference/reference_fused_kernels.h - reference kernels of the fused ops the
// passes introduce (rel_scores, rel_attention, fused_linear, logprob_pick): plain loops, the ground truth
// their oneDNN lowerings (onednn_fused.cpp) are tested against.
//
//   Tensor s = ref::relScores(ac, bdRaw, ref::attnMask(q, m, m, false), 0.125, -INFINITY);
#pragma once

#include <optional>

#include "ir/tensor.h"

namespace txl::backend::ref {

// ac, bd f32[..., Q, K], mask f32[Q, K]: `value` where masked, else
// scale * (ac[i, j] + bd[i, j + Q - 1 - i]) (bd term 0 past the last column).
ir::Tensor relScores(const ir::Tensor& ac, const ir::Tensor& bd, const ir::Tensor& mask, double scale, double value);

// The rel_attention op (ir/ops.def): qu, qv [Q, B, H, D], k, v [K, B, H, D],
// rt [H, D, K], mask f32[Q, K], pad f32[K] or null; result [Q, B, H, D].
ir::Tensor relAttention(const ir::Tensor& qu, const ir::Tensor& qv, const ir::Tensor& k, const ir::Tensor& v,
                        const ir::Tensor& rt, const ir::Tensor& mask, const ir::Tensor* pad, double scale);

// linear(x, w, bias), then relu when asked, then + residual (null: none).
// The result dtype is x's, or `outType` when given.
ir::Tensor fusedLinear(const ir::Tensor& x, const ir::Tensor& w, const ir::Tensor* bias, const ir::Tensor* residual,
                       bool relu, std::optional<ir::DType> outType = std::nullopt);

// The logprob_pick op (ir/ops.def): x f32[..., N], idx i64[...], y f32[..., M]
// or null. For t = idx[p]: log_softmax(x)[p, start + t - offset]
// (+ log_softmax(y)[p, column]) when offset <= t < offset + end - start, else 0;
// t outside [0, classes) throws txl::Error, as pick does.
ir::Tensor logprobPick(const ir::Tensor& x, const ir::Tensor& idx, const ir::Tensor* y, std::int64_t offset,
                       std::int64_t start, std::int64_t end, std::int64_t classes, std::int64_t column);

}  // namespace txl::backend::ref
