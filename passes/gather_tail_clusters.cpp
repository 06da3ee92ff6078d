// passes/gather_tail_clusters.cpp - a tail cluster's projections only for the
// rows whose target lies in that cluster.
//
// After fuse-nll, a tail cluster i of the adaptive softmax is
//
//   logprob_pick(linear(h_i, W_i, b_i), t, y) {offset o, start a, end b, column c}
//   h_i = h, or matmul(h, P_i) (div_val > 1 or d_embed != d_model)
//
// and logprob_pick reads row p of the logits only when o <= t[p] < o + b - a.
// Every row of a linear (and of a matmul with a broadcast weight) is the
// same function of the same input row, whatever the other rows:
//
//   linear(h_i, W, b)[p] = linear(h_i[p], W, b)    (h · P)[p] = h[p] · P
//
// so the rows whose target is elsewhere need not be computed at all. The
// op logprob_pick_gathered (ir/ops.def) takes h, P, W, b, t, y and computes
// both products only for the rows in range: per position, the work of the
// one tail cluster that holds its target instead of every tail cluster. On
// WT103 ([20000, 40000, 200000]) the tail clusters are 247,735 of the
// 267,738 logits a position costs; the head stays as it is (every row reads
// it, as y of each tail cluster).
//
// The oneDNN lowering gathers the rows in range and runs the cluster's own
// matmul kernels on them (backend/onednn/onednn_gathered_nll.cpp), so the NLL
// is the same bits as the ungathered graph's; on the reference interpreter
// the op is the unfused chain.
//
// Algorithm:
//   1. Sites: logprob_pick with y (a tail cluster; the head's has none) over
//      x = linear(h_i, W, [b]) with W (and b) constant f32, x read by the
//      pick only. Otherwise skip with a remark naming the reader.
//   2. h_i = matmul(h, P) with P a constant f32 [d, e], no transposes, read by
//      the linear only: P becomes the op's proj operand and the op reads h;
//      else the op reads h_i itself.
//   3. Replace the pick by logprob_pick_gathered(h, W, t, [b], y, [P]) with
//      the pick's attributes plus {bias, proj}; the linear (and the
//      matmul) go with it.
// Runs before bf16-matmuls / int8-matmuls, which convert or quantize the
// op's W as they do a linear's.
#include "passes/gather_tail_clusters.h"

#include <string>
#include <vector>

#include "passes/rewrite_utils.h"

namespace txl::passes {

using ir::DType;
using ir::Node;
using ir::OpKind;

namespace {

std::string readerName(const ir::Graph& g, Node reader) {
  return std::string(ir::opInfo(g.kind(reader)).name) +
         (g.kind(reader) == OpKind::Output ? " \"" + g.op(reader).attrs.getString("name") + "\"" : "");
}

bool constantF32(const ir::Graph& g, Node n) { return g.type(n).dtype == DType::F32 && rw::isConstant(g, n); }

// The one user of n other than `except`, if any.
std::optional<Node> otherReader(const ir::Graph& g, Node n, Node except) {
  for (Node u : g.users(n))
    if (u != except) return u;
  return std::nullopt;
}

}  // namespace

ir::PassResult GatherTailClusters::run(ir::Graph& g, ir::PassContext& ctx) {
  Rewriter rewriter(g, ctx, name());
  int gathered = 0;
  rewriter.run(g.nodesOfKind(OpKind::LogprobPick), [&](Node pick) {
    if (g.numOperands(pick) != 3 || !g.hasUsers(pick)) return false;  // the head (no y), or dead
    const Node logits = g.operand(pick, 0), targets = g.operand(pick, 1), head = g.operand(pick, 2);
    const std::string where = "logprob_pick of " + g.type(logits).str();
    // 1. The cluster's linear, over a constant weight, read by the pick only.
    if (g.kind(logits) != OpKind::Linear || g.op(logits).attrs.has("out_dtype")) {
      rewriter.skipped(where + ": the logits are not a linear layer's");
      return false;
    }
    const Node w = g.operand(logits, 1);
    const bool bias = g.numOperands(logits) == 3;
    if (!constantF32(g, w) || (bias && !constantF32(g, g.operand(logits, 2)))) {
      rewriter.skipped(where + ": the cluster's weight or bias is not an f32 constant");
      return false;
    }
    if (auto reader = otherReader(g, logits, pick); reader || g.users(logits).size() != 1) {
      rewriter.skipped(where + ": the logits are also read by " + (reader ? readerName(g, *reader) : "the pick twice"));
      return false;
    }
    Node rows = g.operand(logits, 0);
    if (g.type(rows).dtype != DType::F32) {
      rewriter.skipped(where + ": the linear's input is " + g.type(rows).str() + ", not f32");
      return false;
    }
    // 2. The cluster's projection, when only this linear reads it.
    std::optional<Node> proj;
    if (g.kind(rows) == OpKind::MatMul && g.users(rows).size() == 1 && !g.op(rows).attrs.getBool("transpose_a") &&
        !g.op(rows).attrs.getBool("transpose_b")) {
      const Node h = g.operand(rows, 0), p = g.operand(rows, 1);
      if (constantF32(g, p) && g.type(p).rank() == 2 && g.type(h).dtype == DType::F32 &&
          g.type(h).shape.back() == g.type(p).shape[0]) {
        proj = p;
        rows = h;
      }
    }
    // 3. The gathered op in the pick's place.
    ir::Attrs attrs = g.op(pick).attrs;
    attrs.set("bias", bias);
    attrs.set("proj", proj.has_value());
    std::vector<Node> operands = {rows, w, targets};
    if (bias) operands.push_back(g.operand(logits, 2));
    operands.push_back(head);
    if (proj) operands.push_back(*proj);
    const Node fused = g.add(OpKind::LogprobPickGathered, operands, attrs);
    rewriter.replace(pick, fused);  // and, through it, the linear and the projection
    rewriter.applied(where + ": computed only for the rows whose target is in the cluster" +
                     (proj ? std::string(" (with its projection)") : std::string()));
    ++gathered;
    return true;
  });
  return ir::PassResult::changedIf(gathered > 0);
}

}  // namespace txl::passes
