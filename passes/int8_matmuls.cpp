// passes/int8_matmuls.cpp - every linear layer over a constant weight reads
// that weight as int8 rows with one f32 scale per output channel
// (docs/PRECISION.md).
//
// The quantization is an explicit quantize op (ir/ops.def), so inspect shows
// it and the reference backend computes exactly the values the int8 weights
// stand for. The oneDNN backend never materializes a quantize that only
// linear weights read: each linear quantizes the f32 weight into int8 rows
// once per model as it packs it (backend/kernels/int8_linear.h), and the f32 pages of
// a weight from a file are dropped, so the model holds its matmul weights
// once, at one byte each. fold-constants leaves every quantize alone and
// folds a computed weight (the folded Q projection) into an f32 constant
// first, which its linears then quantize the same way.
//
// Activations stay f32: the int8 weights are widened in registers and every
// product is accumulated in f32 (no activation quantization), so x, biases,
// the epilogues, layer norms, softmaxes and what the caller reads are f32 as
// before. out_dtype = "f32" is set so that bf16-state, which runs after this
// pass at --precision int8 (the keys and values stay bf16), can make a
// linear write its window's rows in bf16 directly.
//
// Algorithm: runs last in the pipeline, after the fusions whose patterns
// match f32 linears. For each linear / fused_linear with f32 x and a constant
// f32 weight [out, in]: replace the weight by quantize(weight) (one per
// weight, shared by its readers) and set out_dtype = "f32"; the weight of a
// logprob_pick_gathered likewise.
#include "passes/int8_matmuls.h"

#include <map>

#include "passes/rewrite_utils.h"

namespace txl::passes {

using ir::DType;
using ir::Node;
using ir::OpKind;

ir::PassResult Int8Matmuls::run(ir::Graph& g, ir::PassContext& ctx) {
  std::map<Node, Node> quantized;
  int count = 0, skipped = 0;
  std::vector<Node> linears = g.nodesOfKind(OpKind::Linear);
  for (Node n : g.nodesOfKind(OpKind::FusedLinear)) linears.push_back(n);
  for (Node n : linears) {
    const Node x = g.operand(n, 0), w = g.operand(n, 1);
    if (g.type(x).dtype != DType::F32 || g.type(w).dtype != DType::F32 || g.kind(w) == OpKind::Quantize) continue;
    if (!rw::isConstant(g, w)) {
      ++skipped;
      continue;
    }
    auto [it, fresh] = quantized.try_emplace(w, Node{});
    if (fresh) it->second = g.add(OpKind::Quantize, {w});
    g.setOperand(n, 1, it->second);
    g.op(n).attrs.set("out_dtype", std::string("f32"));
    ++count;
  }
  // A gathered tail cluster (gather-tail-clusters): its weight likewise.
  for (Node n : g.nodesOfKind(OpKind::LogprobPickGathered)) {
    const Node w = g.operand(n, 1);
    if (g.type(w).dtype != DType::F32 || g.kind(w) == OpKind::Quantize || !rw::isConstant(g, w)) continue;
    auto [it, fresh] = quantized.try_emplace(w, Node{});
    if (fresh) it->second = g.add(OpKind::Quantize, {w});
    g.setOperand(n, 1, it->second);
    ++count;
  }
  if (count > 0)
    ctx.applied(name(), std::to_string(count) + " linear layer(s) over int8 weights with f32 activations, " +
                            std::to_string(quantized.size()) + " quantize op(s)");
  if (skipped > 0)
    ctx.skipped(name(), std::to_string(skipped) + " linear layer(s) over a weight computed per segment stay f32");
  return ir::PassResult::changedIf(count > 0);
}

}  // namespace txl::passes
