// passes/bf16_matmuls.cpp - every linear layer over a constant weight reads
// bf16 operands and accumulates and returns f32 (docs/PRECISION.md).
//
// The conversions are explicit convert ops, so inspect shows them and the
// memory plan sizes their values: the activation's convert is a per-segment
// reorder into a bf16 arena value; the weight's is a constant, which the
// oneDNN backend never materializes: each matmul packs the f32 weight
// straight into its bf16 blocked layout (backend/onednn/onednn_placement.cpp,
// convertedWhenPacked), so the model holds its matmul weights once, in bf16.
// fold-constants leaves a convert of a bare weight alone for that reason; a
// convert of a computed constant (the folded Q projection) is folded with its
// cone into one bf16 constant.
//
// The result stays f32 (out_dtype), so everything downstream - biases,
// ReLU and residual post-ops, layer norms, softmaxes, the NLL, the hidden
// states and log-probabilities the caller reads - is unchanged f32.
//
// Deliberately not converted: a linear whose weight is computed per segment
// (none in a Transformer-XL graph), and the attention's own score products
// (rel_attention, matmul), which read activations and the cached keys and
// values, not weights.
//
// Algorithm: runs last in the pipeline, after the fusions whose patterns
// match f32 linears. For each linear / fused_linear with f32 x and a constant
// f32 weight: replace x and w by convert {dtype = "bf16"} of them (one
// convert per converted value, shared by its readers) and set
// out_dtype = "f32". For each logprob_pick_gathered, its weight only (the op
// rounds its gathered rows to the weight's dtype).
#include "passes/bf16_matmuls.h"

#include <map>

#include "passes/rewrite_utils.h"

namespace txl::passes {

using ir::DType;
using ir::Node;
using ir::OpKind;

ir::PassResult Bf16Matmuls::run(ir::Graph& g, ir::PassContext& ctx) {
  std::map<Node, Node> converted;
  auto toBf16 = [&](Node x) {
    auto [it, fresh] = converted.try_emplace(x, Node{});
    if (fresh) it->second = g.add(OpKind::Convert, {x}, {{"dtype", std::string("bf16")}});
    return it->second;
  };
  int count = 0, skipped = 0;
  std::vector<Node> linears = g.nodesOfKind(OpKind::Linear);
  for (Node n : g.nodesOfKind(OpKind::FusedLinear)) linears.push_back(n);
  for (Node n : linears) {
    const Node x = g.operand(n, 0), w = g.operand(n, 1);
    if (g.type(x).dtype != DType::F32 || g.type(w).dtype != DType::F32) continue;
    if (!rw::isConstant(g, w)) {
      ++skipped;
      continue;
    }
    g.setOperand(n, 0, toBf16(x));
    g.setOperand(n, 1, toBf16(w));
    g.op(n).attrs.set("out_dtype", std::string("f32"));
    ++count;
  }
  // A gathered tail cluster (gather-tail-clusters) rounds its rows to bf16
  // itself when its weight is bf16: only the weight gets a convert.
  for (Node n : g.nodesOfKind(OpKind::LogprobPickGathered)) {
    const Node w = g.operand(n, 1);
    if (g.type(w).dtype != DType::F32 || !rw::isConstant(g, w)) continue;
    g.setOperand(n, 1, toBf16(w));
    ++count;
  }
  if (count > 0)
    ctx.applied(name(), std::to_string(count) + " linear layer(s) with bf16 inputs and f32 accumulation, " +
                            std::to_string(converted.size()) + " convert op(s)");
  if (skipped > 0)
    ctx.skipped(name(), std::to_string(skipped) + " linear layer(s) over a weight computed per segment stay f32");
  return ir::PassResult::changedIf(count > 0);
}

}  // namespace txl::passes
