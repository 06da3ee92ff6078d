// backend/onednn_fused.cpp - the oneDNN lowering of rel_scores and fused_linear.
//
// rel_scores is an own kernel: per score row, one loop over the keys that the
// shifted BD row covers (a select between the mask value and
// scale * (ac + bd), which compilers vectorize), then one over the rest. BD
// is read at an offset of q - 1 - i inside its own row, so the pad / reshape
// copy of the reference shift never exists, and a masked entry is written
// from the mask value alone (NaN or garbage in BD cannot leak).
//
// fused_linear is lowerLinear plus a post-op chain: eltwise_relu, then
// binary_add with the residual as a dense [M, out] src1 (the form oneDNN 2.6
// keeps on brg:avx512_core; a broadcast src1 would fall back to ref:any).
#include "backend/onednn_fused.h"

#include <algorithm>

#include "backend/onednn_lowering.h"
#include "ir/check.h"

namespace txl::backend {

namespace kernels {

void relScores(const float* ac, const float* bd, const float* mask, std::int64_t matrices, std::int64_t q,
               std::int64_t k, float scale, float value, float* out) {
  for (std::int64_t t = 0; t < matrices; ++t)
    for (std::int64_t i = 0; i < q; ++i) {
      const std::int64_t row = (t * q + i) * k;
      const float* a = ac + row;
      const float* b = bd + row + (q - 1 - i);  // b[j] = bd[i, j + q - 1 - i]
      const float* m = mask + i * k;
      float* y = out + row;
      const std::int64_t covered = std::clamp<std::int64_t>(k - q + 1 + i, 0, k);
      for (std::int64_t j = 0; j < covered; ++j) y[j] = m[j] != 0.0f ? value : scale * (a[j] + b[j]);
      for (std::int64_t j = covered; j < k; ++j) y[j] = m[j] != 0.0f ? value : scale * a[j];
    }
}

}  // namespace kernels

namespace onednn {

using dnnl::memory;

dnnl::matmul::primitive_desc fusedLinearPd(const dnnl::engine& eng, const ir::TensorType& x, const ir::TensorType& w,
                                           bool bias, bool residual, bool relu, bool anyWeights) {
  const std::int64_t in = w.shape[1], out = w.shape[0];
  const std::int64_t m = x.rank() == 0 ? 1 : x.numel() / std::max<std::int64_t>(in, 1);
  memory::desc srcMd({m, in}, dnnlType(x.dtype), memory::dims{in, 1});
  memory::desc dstMd({m, out}, dnnlType(x.dtype), memory::dims{out, 1});
  memory::desc weightsMd = anyWeights ? memory::desc({in, out}, dnnlType(w.dtype), memory::format_tag::any)
                                      : linearPlainWeightsMd(w);
  dnnl::post_ops po;
  if (relu) po.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
  if (residual) po.append_binary(dnnl::algorithm::binary_add, dstMd);
  auto attr = scratchpadAttr();
  attr.set_post_ops(po);
  if (bias) {
    memory::desc biasMd({1, out}, dnnlType(w.dtype), memory::dims{out, 1});
    return {dnnl::matmul::desc(srcMd, weightsMd, biasMd, dstMd), attr, eng};
  }
  return {dnnl::matmul::desc(srcMd, weightsMd, dstMd), attr, eng};
}

void Lowering::lowerFusedLinear(ir::Node n, const std::vector<View>& ops, const View& out) {
  const auto& attrs = g_.op(n).attrs;
  const bool bias = attrs.getBool("bias"), residual = attrs.getBool("residual"), relu = attrs.getBool("relu");
  const View& x = ops[0];
  const View& w = ops[1];
  const bool constW = isConstant(w) && opt_.blockedWeights;
  auto pd = fusedLinearPd(plan_.engine, x.type, w.type, bias, residual, relu, constW);
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, mem(x, pd.src_desc())}, {DNNL_ARG_DST, mem(out, pd.dst_desc())}};
  args[DNNL_ARG_WEIGHTS] =
      constW ? constantWeights(w, linearPlainWeightsMd(w.type), pd.weights_desc()) : mem(w, pd.weights_desc());
  if (bias) args[DNNL_ARG_BIAS] = mem(ops[2], pd.bias_desc());
  if (residual) {
    const int index = relu ? 1 : 0;  // the binary post-op's position in the chain
    args[DNNL_ARG_ATTR_MULTIPLE_POST_OP(index) | DNNL_ARG_SRC_1] = mem(ops.back(), pd.dst_desc());
  }
  addPrimitive(n, pd, "matmul", std::move(args));
}

void Lowering::lowerRelScores(ir::Node n, const std::vector<View>& ops, const View& out) {
  const auto& attrs = g_.op(n).attrs;
  TXL_CHECK(out.type.dtype == ir::DType::F32 && ops[2].type.dtype == ir::DType::F32, "rel_scores takes f32 only");
  const std::int64_t q = out.type.shape[out.type.rank() - 2], k = out.type.shape[out.type.rank() - 1];
  if (out.type.numel() == 0) return;
  addKernel(n, "txl:rel_scores",
            [p = &plan_, ac = ops[0], bd = ops[1], mask = ops[2], out, q, k,
             scale = static_cast<float>(attrs.getFloat("scale")), value = static_cast<float>(attrs.getFloat("value"))] {
              kernels::relScores(reinterpret_cast<const float*>(p->ptr(ac)), reinterpret_cast<const float*>(p->ptr(bd)),
                                 reinterpret_cast<const float*>(p->ptr(mask)), out.type.numel() / (q * k), q, k, scale,
                                 value, reinterpret_cast<float*>(p->ptr(out)));
            });
}

}  // namespace onednn
}  // namespace txl::backend
