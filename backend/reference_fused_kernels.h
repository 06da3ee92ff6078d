// backend/reference_fused_kernels.h - reference kernels of the fused ops the
// passes introduce (rel_scores, fused_linear): plain loops, the ground truth
// their oneDNN lowerings (onednn_fused.cpp) are tested against.
//
//   Tensor s = ref::relScores(ac, bdRaw, ref::attnMask(q, m, m, false), 0.125, -INFINITY);
#pragma once

#include "ir/tensor.h"

namespace txl::backend::ref {

// ac, bd f32[..., Q, K], mask f32[Q, K]: `value` where masked, else
// scale * (ac[i, j] + bd[i, j + Q - 1 - i]) (bd term 0 past the last column).
ir::Tensor relScores(const ir::Tensor& ac, const ir::Tensor& bd, const ir::Tensor& mask, double scale, double value);

// linear(x, w, bias), then relu when asked, then + residual (null: none).
ir::Tensor fusedLinear(const ir::Tensor& x, const ir::Tensor& w, const ir::Tensor* bias, const ir::Tensor* residual,
                       bool relu);

}  // namespace txl::backend::ref
