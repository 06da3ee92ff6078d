// passes/fuse_rel_shift.cpp - the score block in one pass over memory.
//
// The literal scores take four passes over a [B, H, qlen, klen] block after
// the two matmuls: the rel-shift copy (pad + reshape + slice), AC + BD, the
// scale and the mask. rel_scores(AC, BD, mask) {scale, value} reads BD at
// the shifted column directly (BD[i, j + qlen - 1 - i]) and writes each score
// once (ops.def). The shift's leftovers (entries with j > mlen + i, where the
// reference reads zeros or a neighbouring row) are not reproduced: rel_scores
// reads them as 0, so the pass fires only when the mask is an attn_mask of
// the block's own qlen and mlen, which masks every such entry; masked entries
// are replaced, never computed, so NaN cannot leak through them.
//
// Algorithm:
//   1. Sites: masked_fill(X, M) {value} with X = scale(Y, s) or X = Y (s = 1),
//      Y = add(AC, shift(BD)) in either order, shift = rel_shift or the
//      literal pad pattern, AC and BD of one type [.., Q, K], X and Y with no
//      other user.
//   2. M must be attn_mask {qlen = Q, mlen = K - Q}; otherwise skip with a
//      remark.
//   3. Build the candidate rel_scores and ask the target (Rewriter::keepIfFast:
//      a slow path drops it with the target's reason); else replace the
//      masked_fill by it and erase what only it used.
// Each site is visited once, from a list made before the first rewrite (the
// Rewriter skips sites an earlier rewrite erased).
//   4. When the masked_fill's only user is a softmax over the last axis, the
//      rel_scores computes that too ({softmax = true}): each score row is
//      normalized while it is still in cache, one pass over the block less.
#include "passes/fuse_rel_shift.h"

#include "ir/shape_inference.h"
#include "passes/rewrite_utils.h"

namespace txl::passes {

using ir::Node;
using ir::OpKind;

namespace {

std::optional<Node> unshifted(const ir::Graph& g, Node n) {
  if (g.kind(n) == OpKind::RelShift) return g.operand(n, 0);
  return rw::matchLiteralRelShift(g, n);
}

}  // namespace

ir::PassResult FuseRelShift::run(ir::Graph& g, ir::PassContext& ctx) {
  std::vector<Node> sites;
  for (Node n : g.nodesOfKind(OpKind::MaskedFill))
    if (g.hasUsers(n)) sites.push_back(n);
  Rewriter rewriter(g, ctx, name());
  int fused = 0, withSoftmax = 0;
  rewriter.run(sites, [&](Node fill) {
    Node x = g.operand(fill, 0), mask = g.operand(fill, 1);
    double scale = 1.0;
    Node y = x;
    if (g.kind(x) == OpKind::Scale) {
      if (!rw::singleUse(g, x)) return false;
      scale = g.op(x).attrs.getFloat("factor");
      y = g.operand(x, 0);
    }
    if (g.kind(y) != OpKind::Add || !rw::singleUse(g, y)) return false;
    std::optional<Node> ac, bd;
    for (int first = 0; first < 2 && !bd; ++first) {
      if (auto b = unshifted(g, g.operand(y, 1 - first))) {
        ac = g.operand(y, first);
        bd = b;
      }
    }
    if (!bd || g.type(*ac) != g.type(*bd) || g.type(*ac) != g.type(y)) return false;
    const ir::Shape& s = g.type(y).shape;
    const std::int64_t q = s[s.size() - 2], k = s.back();
    const std::string where = "score block " + g.type(y).str();
    if (g.kind(mask) != OpKind::AttnMask || g.op(mask).attrs.getInt("qlen") != q ||
        g.op(mask).attrs.getInt("mlen") != k - q) {
      rewriter.skipped(where +
                       ": the mask is not an attn_mask of this block's qlen and mlen, so the "
                       "shift's leftovers might be visible");
      return false;
    }
    // 4. The row softmax that only reads these scores.
    std::optional<Node> softmax;
    if (const auto users = g.users(fill);
        users.size() == 1 && g.kind(users[0]) == OpKind::Softmax &&
        ir::normalizeAxis(g.op(users[0]).attrs.getInt("axis"), std::int64_t(s.size())) == std::int64_t(s.size()) - 1)
      softmax = users[0];
    ir::Attrs attrs{{"scale", scale}, {"value", g.op(fill).attrs.getFloat("value")}};
    if (softmax) attrs.set("softmax", true);
    Node fusedNode = g.add(OpKind::RelScores, {*ac, *bd, mask}, attrs);
    if (!rewriter.keepIfFast(fusedNode, where)) return false;
    rewriter.replace(softmax ? *softmax : fill, fusedNode);  // and, through it, what only it read
    ++fused;
    withSoftmax += softmax.has_value();
    return true;
  });
  if (fused > 0)
    ctx.applied(name(),
                std::to_string(fused) +
                    " score block(s): AC + rel_shift(BD), scale and mask as one rel_scores op (no pad/reshape copy)" +
                    (withSoftmax > 0 ? ", " + std::to_string(withSoftmax) + " with its row softmax" : ""));
  return ir::PassResult::changedIf(fused > 0);
}

}  // namespace txl::passes
