// passes/pretranspose_constants.cpp - transposes of constant matmul operands
// moved into the permute that lays the constant out anyway.
//
// BD = matmul(q, R) {transpose_b} reads R = permute(W_r r, [1, 0, 2]) as
// [H, klen, D] and transposes it on the fly; R is constant (folded once per
// model by the backend), so it can as well be laid out [H, D, klen] once and
// read untransposed, which oneDNN's matmul runs faster (`txlc bench
// bench/enwik8_base.json --disable-pass pretranspose-constants` compares).
//
// Algorithm: for every matmul with transpose_b (transpose_a) whose b (a) is
// permute(c, p), constant (rw::isConstant) and read by this matmul only,
// replace the operand by permute(c, p') with the last two entries of p
// swapped, and drop the flag. A slice of such a permute (a segment shorter
// than the longest reads a suffix of the table, fold-positions) moves with
// it: slice(permute(c, p')) along the axis the sliced one moved to. Only a permute of a constant: it is folded into
// a constant buffer either way, so the rewrite costs no memory; a transpose
// of a value computed per segment would turn a row copy into a slow
// element-wise transposition, and of a plain weight would add a copy of it.
#include "passes/pretranspose_constants.h"

#include <utility>

#include "passes/rewrite_utils.h"

namespace txl::passes {

using ir::Node;
using ir::OpKind;

namespace {

// The operand laid out transposed, when it is permute(c, p) of a constant
// read by this matmul only, or slice(permute(c, p)) (a shorter segment's
// suffix of the position table), each link read once: permute(c, p') with
// the last two entries of p swapped, then the same slice along the axis it
// moved to. nullopt otherwise.
std::optional<Node> laidOutTransposed(ir::Graph& g, Node operand) {
  std::optional<Node> slice;
  Node p = operand;
  if (g.kind(p) == OpKind::Slice && rw::singleUse(g, p)) {
    slice = p;
    p = g.operand(p, 0);
  }
  if (g.kind(p) != OpKind::Permute || !rw::isConstant(g, p) || !rw::singleUse(g, p)) return std::nullopt;
  rw::Ints perm = g.op(p).attrs.getInts("perm");
  const std::int64_t rank = std::int64_t(perm.size());
  if (rank < 2) return std::nullopt;
  std::swap(perm[rank - 1], perm[rank - 2]);
  const Node laidOut = rw::permute(g, g.operand(p, 0), perm);
  if (!slice) return laidOut;
  std::int64_t axis = rw::axisOf(g, *slice);
  if (axis >= rank - 2) axis = 2 * rank - 3 - axis;  // the last two axes swapped
  const auto& a = g.op(*slice).attrs;
  return rw::slice(g, laidOut, axis, a.getInt("start"), a.getInt("end"));
}

}  // namespace

ir::PassResult PretransposeConstants::run(ir::Graph& g, ir::PassContext& ctx) {
  Rewriter rewriter(g, ctx, name());
  int moved = 0;
  rewriter.run(g.nodesOfKind(OpKind::MatMul), [&](Node n) {
    bool changed = false;
    for (std::size_t i : {std::size_t(0), std::size_t(1)}) {
      const char* flag = i == 0 ? "transpose_a" : "transpose_b";
      const Node old = g.operand(n, i);
      if (!g.op(n).attrs.getBool(flag)) continue;
      const auto laidOut = laidOutTransposed(g, old);
      if (!laidOut) continue;
      g.setOperand(n, i, *laidOut);
      g.op(n).attrs.erase(flag);
      rewriter.eraseIfDead(old);
      ++moved;
      changed = true;
    }
    return changed;
  });
  if (moved > 0)
    ctx.applied(name(), std::to_string(moved) + " transposed constant matmul operand(s) laid out transposed once");
  return ir::PassResult::changedIf(moved > 0);
}

}  // namespace txl::passes
