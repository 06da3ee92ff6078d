// backend/onednn/onednn_int8.cpp - the lowering of int8-matmuls' graphs: linears
// over quantized weights run txl:int8_linear on the model's int8 rows of each
// weight (backend/kernels/int8_linear.h), or, for more than a few rows on a CPU with
// AVX512-VNNI, txl:int8_linear:vnni on the same values in the VNNI layout
// (backend/kernels/int8_vnni.h); either is made once per model through PackedWeights
// and shared by every plan. A quantize some other op reads is computed.
#include <algorithm>
#include <vector>

#include "backend/kernels/int8_linear.h"
#include "backend/kernels/int8_vnni.h"
#include "backend/platform.h"
#include "backend/onednn/onednn_lowering.h"
#include "backend/onednn/onednn_probe.h"
#include "ir/check.h"
#include "ir/int8.h"

namespace txl::backend::onednn {

namespace {

// Whether value `v` is the model's (scaled) embedding: an embedding lookup,
// or a scale, reshape, slice or linear of one, or a sum of such (the adaptive
// embedding's projections, summed), before any layer norm or attention; in
// the hidden memory form also the remembered rows of such a value (a
// mem_window of it, or a concat of a mem_read of its slot and it).
// A slot's mem_write reads the slot itself: `reading` holds the slots whose
// writes are being checked, which are taken to hold the embedding meanwhile.
bool isEmbedding(const ir::Graph& g, ir::Node v, std::vector<std::int64_t>& reading) {
  switch (g.kind(v)) {
    case ir::OpKind::Embedding:
      return true;
    case ir::OpKind::Scale:
    case ir::OpKind::Reshape:
    case ir::OpKind::Slice:
    case ir::OpKind::Linear:
    case ir::OpKind::FusedLinear:
    case ir::OpKind::MemWindow:
      return isEmbedding(g, g.operand(v, 0), reading);
    case ir::OpKind::Add:
    case ir::OpKind::Concat:
      for (const ir::Node x : g.operands(v))
        if (!isEmbedding(g, x, reading)) return false;
      return true;
    case ir::OpKind::MemRead: {
      const std::int64_t slot = g.op(v).attrs.getInt("slot");
      if (std::find(reading.begin(), reading.end(), slot) != reading.end()) return true;
      reading.push_back(slot);
      bool written = false, embedding = true;
      for (const ir::Node w : g.nodesOfKind(ir::OpKind::MemWrite))
        if (g.op(w).attrs.getInt("slot") == slot) {
          written = true;
          embedding = embedding && isEmbedding(g, g.operand(w, 0), reading);
        }
      reading.pop_back();
      return written && embedding;
    }
    default:
      return false;
  }
}

bool readsEmbedding(const ir::Graph& g, ir::Node v) {
  std::vector<std::int64_t> reading;
  return isEmbedding(g, v, reading);
}

}  // namespace

// The kernel is chosen by the linear's input and the CPU, never by the row
// count, so a row's result is the same in every plan (a generated token's as
// a scored segment's) and a plan always runs the same arithmetic (docs/PRECISION.md, "The kernels").
// Two kinds of linear keep f32 activations (docs/PRECISION.md, "The
// kernels"): one whose input is a constant (W_r R, computed once per plan,
// so rounding it would buy no time), and one that reads the embedding:
// nothing normalises its scale before the first layer's projections, and
// their rounding error moves that layer's attention logits in proportion.
bool Lowering::int8Activations(ir::Node input, const View& x, std::int64_t k) const {
  return opt_.int8Activations && !isConstant(x) && !readsEmbedding(g_, input) && k <= kernels::kInt8VnniMaxK &&
         platform().avx512Vnni;
}

std::shared_ptr<const kernels::Int8Vnni> Lowering::int8VnniWeights(const View& w, std::int64_t k) {
  TXL_CHECK(w.quantized && w.strides.empty() && w.type.rank() == 2 && w.type.dtype == ir::DType::F32,
            "int8 rows of " + w.type.str());
  const ir::Tensor* user = plan_.buffers[w.buffer].weight;
  const PackedWeights::Source source{user, w.offset};
  auto packed =
      packs_.getInt8Vnni(reinterpret_cast<const float*>(plan_.ptr(w)), w.type.shape[0], k, threadCount(), &source);
  plan_.countShared(packed.get(), packed->size());
  packedNow_.push_back(w.buffer);
  if (user) packs_.notePacked(*user, w.offset, w.type.bytes());
  return packed;
}

std::shared_ptr<const kernels::Int8Rows> Lowering::int8Weights(const View& w) {
  TXL_CHECK(w.quantized && w.strides.empty() && w.type.rank() == 2 && w.type.dtype == ir::DType::F32,
            "int8 rows of " + w.type.str());
  const ir::Tensor* user = plan_.buffers[w.buffer].weight;
  const PackedWeights::Source source{user, w.offset};
  auto rows = packs_.getInt8(reinterpret_cast<const float*>(plan_.ptr(w)), w.type.shape[0], w.type.shape[1],
                             threadCount(), &source);
  plan_.countShared(rows.get(), rows->size());
  packedNow_.push_back(w.buffer);
  if (user) packs_.notePacked(*user, w.offset, w.type.bytes());
  return rows;
}

void Lowering::lowerInt8Linear(ir::Node n, const std::vector<View>& ops, const View& out) {
  const auto& attrs = g_.op(n).attrs;
  const bool fused = g_.kind(n) == ir::OpKind::FusedLinear;
  const bool bias = fused ? attrs.getBool("bias") : ops.size() == 3;
  const bool residual = fused && attrs.getBool("residual");
  const View& x = ops[0];
  TXL_CHECK(
      x.type.dtype == ir::DType::F32 && x.strides.empty() && out.strides.empty() &&
          (out.type.dtype == ir::DType::F32 || out.type.dtype == ir::DType::BF16),
      "txl:int8_linear takes dense f32 x and writes dense f32 or bf16, got " + x.type.str() + " -> " + out.type.str());
  if (residual)
    TXL_CHECK(ops.back().strides.empty() && ops.back().type.dtype == ir::DType::F32, "int8 linear residual");
  if (bias) TXL_CHECK(ops[2].strides.empty() && ops[2].type.dtype == ir::DType::F32, "int8 linear bias");
  const View& w = ops[1];
  const std::int64_t k = w.type.rank() == 2 ? w.type.shape[1] : 0;
  const std::int64_t count = k == 0 ? 0 : x.type.numel() / k;
  auto args = [p = &plan_, x, out, b = bias ? std::optional<View>(ops[2]) : std::nullopt,
               r = residual ? std::optional<View>(ops.back()) : std::nullopt, count,
               relu = fused && attrs.getBool("relu")] {
    kernels::Int8LinearArgs a;
    a.x = reinterpret_cast<const float*>(p->ptr(x));
    a.rows = count;
    if (b) a.bias = reinterpret_cast<const float*>(p->ptr(*b));
    if (r) a.residual = reinterpret_cast<const float*>(p->ptr(*r));
    a.relu = relu;
    a.y = p->ptr(out);
    a.yBf16 = out.type.dtype == ir::DType::BF16;
    return a;
  };
  if (int8Activations(g_.operand(n, 0), x, k)) {
    auto packed = int8VnniWeights(w, k);
    addKernel(n, "txl:int8_linear:vnni",
              [packed, args, t = threadCount()] { kernels::int8LinearVnni(*packed, args(), t); });
    return;
  }
  auto rows = int8Weights(w);
  addKernel(n, "txl:int8_linear", [rows, args, t = threadCount()] { kernels::int8Linear(*rows, args(), t); });
}

void Lowering::lowerQuantize(ir::Node n, const View& w, const View& out) {
  TXL_CHECK(w.strides.empty() && !w.storedAs && !w.quantized, "quantize of a strided or converted view");
  addKernel(n, "txl:quantize", [p = &plan_, w, out] {
    const std::int64_t rows = w.type.shape[0], k = w.type.shape[1];
    const auto* from = reinterpret_cast<const float*>(p->ptr(w));
    auto* to = reinterpret_cast<float*>(p->ptr(out));
    for (std::int64_t r = 0; r < rows; ++r) {  // as ir::int8RoundTrip
      const float s = ir::int8RowScale(from + r * k, k);
      for (std::int64_t j = 0; j < k; ++j) to[r * k + j] = s * float(ir::int8Quantize(from[r * k + j], s));
    }
  });
}

}  // namespace txl::backend::onednn
