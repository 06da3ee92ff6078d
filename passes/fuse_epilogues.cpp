// passes/fuse_epilogues.cpp - a linear and the element-wise ops after it as one op.
//
// fused_linear(x, w, [bias], [residual]) {bias, relu, residual} (ops.def)
// lowers to one oneDNN matmul whose bias and post-ops (eltwise_relu, then
// binary_add of a dense residual) run while the output tile is still in
// registers: the feed-forward's first linear + ReLU, and every residual
// add (h + o_net(...), y + CoreNet.3(...)) become epilogues instead of
// passes over memory.
//
// Algorithm:
//   1. In topological order, relu(L) with L a linear used only by the relu
//      becomes fused_linear{relu}(L's operands).
//   2. Then add(P, R) (either order) with P a linear, or a fused_linear with
//      no residual yet, used only by the add, and R of the add's type,
//      becomes fused_linear{residual}(P's operands, R).
//   3. Each candidate is asked of the target (Rewriter::slowPathReason); a
//      slow lowering (a `ref` matmul) keeps the unfused ops and is reported
//      with the reason, one remark per reason with its count.
// The relus, then the adds, are each visited once, from lists made when
// their step starts.
#include "passes/fuse_epilogues.h"

#include <map>

#include "passes/rewrite_utils.h"

namespace txl::passes {

using ir::Node;
using ir::OpKind;

namespace {

struct Fuser {
  ir::Graph& g;
  Rewriter& rewriter;
  std::map<std::string, int> applied, skipped;

  // The candidate fused_linear for `root` (a relu or add), or nullopt.
  std::optional<Node> candidate(Node root) {
    if (g.kind(root) == OpKind::Relu) {
      Node lin = g.operand(root, 0);
      if (g.kind(lin) != OpKind::Linear || !rw::singleUse(g, lin)) return std::nullopt;
      return g.add(OpKind::FusedLinear, g.operands(lin), {{"bias", g.numOperands(lin) == 3}, {"relu", true}});
    }
    if (g.kind(root) != OpKind::Add) return std::nullopt;
    for (int first = 0; first < 2; ++first) {
      Node p = g.operand(root, first), r = g.operand(root, 1 - first);
      if (!rw::singleUse(g, p) || g.type(r) != g.type(root)) continue;
      if (g.kind(p) == OpKind::Linear)
        return g.add(OpKind::FusedLinear,
                     [&] {
                       auto o = g.operands(p);
                       o.push_back(r);
                       return o;
                     }(),
                     {{"bias", g.numOperands(p) == 3}, {"residual", true}});
      if (g.kind(p) == OpKind::FusedLinear && !g.op(p).attrs.getBool("residual")) {
        ir::Attrs attrs = g.op(p).attrs;
        attrs.set("residual", true);
        auto ops = g.operands(p);
        ops.push_back(r);
        return g.add(OpKind::FusedLinear, ops, attrs);
      }
    }
    return std::nullopt;
  }

  bool visit(Node root) {
    auto fused = candidate(root);
    if (!fused) return false;
    const std::string what = g.kind(root) == OpKind::Relu ? "bias + ReLU" : "residual add";
    if (auto why = rewriter.slowPathReason(*fused)) {
      ++skipped[what + " not fused: " + *why];
      return false;
    }
    rewriter.replace(root, *fused);
    ++applied[what];
    return true;
  }
};

}  // namespace

ir::PassResult FuseEpilogues::run(ir::Graph& g, ir::PassContext& ctx) {
  Rewriter rewriter(g, ctx, name());
  Fuser f{g, rewriter, {}, {}};
  bool changed = false;
  for (OpKind kind : {OpKind::Relu, OpKind::Add})
    changed |= rewriter.run(g.nodesOfKind(kind), [&](Node n) { return g.hasUsers(n) && f.visit(n); });
  for (const auto& [what, count] : f.applied)
    ctx.applied(name(), std::to_string(count) + " " + what + " as matmul post-ops of fused_linear");
  for (const auto& [why, count] : f.skipped) ctx.skipped(name(), std::to_string(count) + " " + why);
  return ir::PassResult::changedIf(changed);
}

}  // namespace txl::passes
