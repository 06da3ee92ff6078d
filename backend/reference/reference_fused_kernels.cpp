// backend/reference/reference_fused_kernels.cpp - relScores(), relAttention(), fusedLinear()
// and logprobPick().
//
// fusedLinear and relAttention compose the unfused reference kernels, so a fused graph is
// bit-identical to the unfused one on the reference interpreter. relScores
// computes the unfused chain's arithmetic in the same order (f32 add, then
// the scale in double rounded to f32, as ref::add and ref::scale do), and so
// does logprobPick (ref::logSoftmax's double max / sum / log rounded to f32,
// then the f32 add of the head's column).
#include "backend/reference/reference_fused_kernels.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "backend/reference/reference_kernels.h"
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

ir::Tensor relAttention(const ir::Tensor& qu, const ir::Tensor& qv, const ir::Tensor& k, const ir::Tensor& v,
                        const ir::Tensor& rt, const ir::Tensor& mask, const ir::Tensor* pad, double scale) {
  // The chain fuse-attention replaces: head-major views, the two score
  // matmuls, rel_scores (then the padding keys' mask), softmax, P · V.
  const std::vector<std::int64_t> headMajor{1, 2, 0, 3};
  // bf16 keys and values (a bf16 state window) are widened: the products are f32.
  const ir::Tensor ac =
      matmul(permute(qu, headMajor), permute(ir::convertFloat(k, ir::DType::F32), headMajor), false, true);
  const ir::Tensor bd = matmul(permute(qv, headMajor), rt, false, false);
  constexpr double kNegInf = -std::numeric_limits<double>::infinity();
  ir::Tensor scores = relScores(ac, bd, mask, scale, kNegInf);
  if (pad) scores = maskedFill(scores, *pad, kNegInf);
  return permute(matmul(softmax(scores, -1), permute(ir::convertFloat(v, ir::DType::F32), headMajor), false, false),
                 {2, 0, 1, 3});
}

ir::Tensor fusedLinear(const ir::Tensor& x, const ir::Tensor& w, const ir::Tensor* bias, const ir::Tensor* residual,
                       bool relu, std::optional<ir::DType> outType) {
  ir::Tensor y = linear(x, w, bias, outType);
  if (relu) y = ref::relu(y);
  if (residual) y = add(y, *residual);
  return y;
}

namespace {

// log_softmax(row)[j] exactly as ref::logSoftmax computes it.
float logSoftmaxAt(const float* row, std::int64_t n, std::int64_t j) {
  double max = -std::numeric_limits<double>::infinity();
  for (std::int64_t i = 0; i < n; ++i) max = std::max(max, double(row[i]));
  double sum = 0.0;
  for (std::int64_t i = 0; i < n; ++i) sum += std::exp(double(row[i]) - max);
  return float((double(row[j]) - max) - std::log(sum));
}

}  // namespace

ir::Tensor logprobPick(const ir::Tensor& x, const ir::Tensor& idx, const ir::Tensor* y, std::int64_t offset,
                       std::int64_t start, std::int64_t end, std::int64_t classes, std::int64_t column) {
  TXL_CHECK(x.dtype() == ir::DType::F32 && idx.dtype() == ir::DType::I64 && x.type().rank() >= 1 &&
                x.numel() == idx.numel() * x.shape().back() && 0 <= start && start <= end && end <= x.shape().back(),
            "logprob_pick: x " + x.type().str() + ", idx " + idx.type().str());
  const std::int64_t n = x.shape().back(), m = y ? y->shape().back() : 0;
  TXL_CHECK(!y || (y->dtype() == ir::DType::F32 && y->numel() == idx.numel() * m && 0 <= column && column < m),
            "logprob_pick: y " + (y ? y->type().str() : std::string()));
  ir::Tensor out = ir::Tensor::zeros({ir::DType::F32, idx.shape()});
  for (std::int64_t p = 0; p < idx.numel(); ++p) {
    const std::int64_t t = idx.data<std::int64_t>()[p];
    if (t < 0 || t >= classes)
      throw Error("logprob_pick: index " + std::to_string(t) + " at position " + std::to_string(p) +
                  " is outside [0, " + std::to_string(classes) + ")");
    if (t < offset || t >= offset + (end - start)) continue;
    float v = logSoftmaxAt(x.data<float>() + p * n, n, start + t - offset);
    if (y) v += logSoftmaxAt(y->data<float>() + p * m, m, column);
    out.data<float>()[p] = v;
  }
  return out;
}

}  // namespace txl::backend::ref
