// backend/reference_fused_kernels.cpp - relScores() and fusedLinear().
//
// fusedLinear composes the unfused reference kernels, so a fused graph is
// bit-identical to the unfused one on the reference interpreter. relScores
// computes the unfused chain's arithmetic in the same order (f32 add, then
// the scale in double rounded to f32, as ref::add and ref::scale do).
#include "backend/reference_fused_kernels.h"

#include "backend/reference_kernels.h"
#include "ir/check.h"

namespace txl::backend::ref {

ir::Tensor relScores(const ir::Tensor& ac, const ir::Tensor& bd, const ir::Tensor& mask, double scale, double value) {
  TXL_CHECK(ac.dtype() == ir::DType::F32 && ac.type() == bd.type() && ac.type().rank() >= 2,
            "rel_scores: ac " + ac.type().str() + ", bd " + bd.type().str());
  const std::int64_t q = ac.shape()[ac.shape().size() - 2], k = ac.shape().back();
  TXL_CHECK(mask.dtype() == ir::DType::F32 && mask.numel() == q * k, "rel_scores: mask " + mask.type().str());
  ir::Tensor out = ir::Tensor::zeros(ac.type());
  const std::int64_t matrices = q * k == 0 ? 0 : ac.numel() / (q * k);
  const float* a = ac.data<float>();
  const float* b = bd.data<float>();
  const float* m = mask.data<float>();
  float* y = out.data<float>();
  for (std::int64_t t = 0; t < matrices; ++t)
    for (std::int64_t i = 0; i < q; ++i)
      for (std::int64_t j = 0; j < k; ++j) {
        const std::int64_t at = (t * q + i) * k + j, src = j + q - 1 - i;
        if (m[i * k + j] != 0.0f) {
          y[at] = float(value);
          continue;
        }
        const float shifted = src < k ? b[(t * q + i) * k + src] : 0.0f;
        y[at] = float(double(a[at] + shifted) * scale);
      }
  return out;
}

ir::Tensor fusedLinear(const ir::Tensor& x, const ir::Tensor& w, const ir::Tensor* bias, const ir::Tensor* residual,
                       bool relu) {
  ir::Tensor y = linear(x, w, bias);
  if (relu) y = ref::relu(y);
  if (residual) y = add(y, *residual);
  return y;
}

}  // namespace txl::backend::ref
