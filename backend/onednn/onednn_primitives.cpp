// backend/onednn/onednn_primitives.cpp - the primitive descriptors of the oneDNN
// lowering, built from types and attributes only, so that the target info
// (which has no data) asks oneDNN exactly what the lowering will get.
#include <numeric>

#include "backend/onednn/onednn_fused.h"
#include "backend/onednn/onednn_lowering.h"
#include "ir/check.h"
#include "ir/shape_inference.h"

namespace txl::backend::onednn {

using dnnl::memory;

memory::data_type dnnlType(ir::DType dtype) {
  switch (dtype) {
    case ir::DType::F32:
      return memory::data_type::f32;
    case ir::DType::BF16:
      return memory::data_type::bf16;
    case ir::DType::I64:
      throw Error("oneDNN primitives do not take i64 tensors");
  }
  throw InternalError("bad dtype");
}

memory::dims viewStrides(const View& v) {
  return v.strides.empty() ? denseStrides(v.type.shape) : memory::dims(v.strides);
}

memory::dims denseStrides(const ir::Shape& shape) {
  memory::dims strides(shape.size());
  std::int64_t s = 1;
  for (std::size_t d = shape.size(); d-- > 0;) {
    strides[d] = s;
    s *= shape[d];
  }
  return strides;
}

dnnl::primitive_attr scratchpadAttr() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

memory::desc Lowering::denseMd(const ir::TensorType& t) {
  if (t.rank() == 0) return memory::desc({1}, dnnlType(t.dtype), memory::dims{1});
  return memory::desc(t.shape, dnnlType(t.dtype), denseStrides(t.shape));
}

namespace {
std::int64_t rowsOf(const ir::TensorType& x) {
  return x.rank() == 0 ? 1 : x.numel() / std::max<std::int64_t>(x.shape.back(), 1);
}
}  // namespace

memory::desc linearPlainWeightsMd(const ir::TensorType& w) {
  // The [out, in] weight seen as the [in, out] matrix matmul wants: format ba.
  return memory::desc({w.shape[1], w.shape[0]}, dnnlType(w.dtype), memory::dims{1, w.shape[1]});
}

dnnl::matmul::primitive_desc linearPd(const dnnl::engine& eng, const ir::TensorType& x, const ir::TensorType& w,
                                      bool hasBias, bool anyWeights, std::optional<ir::DType> dst) {
  const std::int64_t m = rowsOf(x), in = w.shape[1], out = w.shape[0];
  const ir::DType dstType = dst.value_or(x.dtype);
  memory::desc srcMd({m, in}, dnnlType(x.dtype), memory::dims{in, 1});
  memory::desc dstMd({m, out}, dnnlType(dstType), memory::dims{out, 1});
  memory::desc weightsMd =
      anyWeights ? memory::desc({in, out}, dnnlType(w.dtype), memory::format_tag::any) : linearPlainWeightsMd(w);
  auto attr = scratchpadAttr();
  if (hasBias) {
    memory::desc biasMd({1, out}, dnnlType(dstType), memory::dims{out, 1});
    return {dnnl::matmul::desc(srcMd, weightsMd, biasMd, dstMd), attr, eng};
  }
  return {dnnl::matmul::desc(srcMd, weightsMd, dstMd), attr, eng};
}

MatMulMds matmulMds(const ir::TensorType& a, const ir::TensorType& b, const ir::TensorType& out, bool ta, bool tb,
                    const std::vector<std::int64_t>& aStrides, const std::vector<std::int64_t>& bStrides) {
  const std::size_t rank = out.shape.size();
  auto operand = [&](const ir::TensorType& t, bool transposed, const std::vector<std::int64_t>& viewStrides) {
    ir::Shape stored(rank - t.shape.size(), 1);
    stored.insert(stored.end(), t.shape.begin(), t.shape.end());
    memory::dims strides = denseStrides(stored);
    if (!viewStrides.empty())  // a strided view: its own strides (the padded leading 1s keep dense ones)
      std::copy(viewStrides.begin(), viewStrides.end(), strides.end() - std::ptrdiff_t(viewStrides.size()));
    memory::dims dims(stored.begin(), stored.end());
    if (transposed) {
      std::swap(dims[rank - 1], dims[rank - 2]);
      std::swap(strides[rank - 1], strides[rank - 2]);
    }
    return memory::desc(dims, dnnlType(t.dtype), strides);
  };
  return {operand(a, ta, aStrides), operand(b, tb, bStrides),
          memory::desc(out.shape, dnnlType(out.dtype), denseStrides(out.shape))};
}

dnnl::layer_normalization_forward::primitive_desc layerNormPd(const dnnl::engine& eng, const ir::TensorType& x,
                                                              float eps) {
  const std::int64_t n = x.rank() == 0 ? 1 : x.shape.back();
  memory::desc dataMd({rowsOf(x), n}, dnnlType(x.dtype), memory::dims{n, 1});
  auto flags = dnnl::normalization_flags::use_scale | dnnl::normalization_flags::use_shift;
  return {dnnl::layer_normalization_forward::desc(dnnl::prop_kind::forward_inference, dataMd, eps, flags),
          scratchpadAttr(), eng};
}

namespace {

// Softmax over `axis` as [outer, A, inner]; with inner > 1 the lowering runs
// it in the acb layout (axis innermost), where oneDNN has a jit kernel.
template <typename Prim>
typename Prim::primitive_desc softmaxPd(const dnnl::engine& eng, const ir::TensorType& x, std::int64_t axis) {
  std::int64_t outer = 1, inner = 1;
  for (std::int64_t d = 0; d < axis; ++d) outer *= x.shape[d];
  for (std::int64_t d = axis + 1; d < x.rank(); ++d) inner *= x.shape[d];
  const std::int64_t a = x.shape[axis];
  memory::desc md = inner == 1 ? memory::desc({outer, a}, dnnlType(x.dtype), memory::dims{a, 1})
                               : memory::desc({outer, a, inner}, dnnlType(x.dtype), memory::format_tag::acb);
  return {typename Prim::desc(dnnl::prop_kind::forward_inference, md, 1), scratchpadAttr(), eng};
}

}  // namespace

dnnl::softmax_forward::primitive_desc softmaxForwardPd(const dnnl::engine& eng, const ir::TensorType& x,
                                                       std::int64_t axis) {
  return softmaxPd<dnnl::softmax_forward>(eng, x, axis);
}
dnnl::logsoftmax_forward::primitive_desc logSoftmaxForwardPd(const dnnl::engine& eng, const ir::TensorType& x,
                                                             std::int64_t axis) {
  return softmaxPd<dnnl::logsoftmax_forward>(eng, x, axis);
}

std::optional<dnnl::primitive_desc> mainPrimitiveDesc(const dnnl::engine& eng, const ir::Graph& g, ir::Node n) {
  const ir::OpData& op = g.op(n);
  auto operandType = [&](std::size_t i) { return g.type(g.operand(n, i)); };
  switch (op.kind) {
    case ir::OpKind::Input:
    case ir::OpKind::Weight:
    case ir::OpKind::Constant:
    case ir::OpKind::MemRead:
    case ir::OpKind::PosEncoding:
    case ir::OpKind::AttnMask:
    case ir::OpKind::Output:
    case ir::OpKind::MemWrite:
    case ir::OpKind::MemWindow:
    case ir::OpKind::MaskedFill:
    case ir::OpKind::Concat:
    case ir::OpKind::Slice:
    case ir::OpKind::Reshape:
    case ir::OpKind::Permute:
    case ir::OpKind::Pad:
    case ir::OpKind::Embedding:
    case ir::OpKind::RelShift:
    case ir::OpKind::Pick:
    case ir::OpKind::RelScores:  // own kernels (onednn_fused.cpp, rel_attention.cpp, onednn_gathered_nll.cpp)
    case ir::OpKind::RelAttention:
    case ir::OpKind::LogprobPick:
    case ir::OpKind::LogprobPickGathered:
    case ir::OpKind::Convert:   // a reorder, or nothing (converted as its matmuls pack it)
    case ir::OpKind::Quantize:  // an own kernel, or nothing (quantized as its linears pack it)
      return std::nullopt;
    case ir::OpKind::FusedLinear:
      if (g.kind(g.operand(n, 1)) == ir::OpKind::Quantize) return std::nullopt;  // txl:int8_linear
      return fusedLinearPd(eng, operandType(0), operandType(1), op.attrs.getBool("bias"), op.attrs.getBool("residual"),
                           op.attrs.getBool("relu"), true, op.type->dtype);
    case ir::OpKind::Add:
    case ir::OpKind::Sub:
    case ir::OpKind::Mul:
    case ir::OpKind::Scale:
    case ir::OpKind::Relu:
      return std::nullopt;  // element-wise: jit:uni / jit:avx512_core, no ref concern
    case ir::OpKind::Linear:
      if (g.kind(g.operand(n, 1)) == ir::OpKind::Quantize) return std::nullopt;  // txl:int8_linear
      return linearPd(eng, operandType(0), operandType(1), g.numOperands(n) == 3, true, op.type->dtype);
    case ir::OpKind::MatMul: {
      bool ta = op.attrs.getBool("transpose_a"), tb = op.attrs.getBool("transpose_b");
      auto mds = matmulMds(operandType(0), operandType(1), *op.type, ta, tb);
      return dnnl::matmul::primitive_desc(dnnl::matmul::desc(mds.src, mds.weights, mds.dst), scratchpadAttr(), eng);
    }
    case ir::OpKind::LayerNorm:
      return layerNormPd(eng, operandType(0), static_cast<float>(op.attrs.getFloat("eps")));
    case ir::OpKind::Softmax:
    case ir::OpKind::LogSoftmax: {
      const auto& x = operandType(0);
      std::int64_t axis = *ir::normalizeAxis(op.attrs.getInt("axis"), x.rank());
      if (op.kind == ir::OpKind::Softmax) return softmaxForwardPd(eng, x, axis);
      return logSoftmaxForwardPd(eng, x, axis);
    }
  }
  return std::nullopt;
}

}  // namespace txl::backend::onednn
