// passes/canonicalize.cpp - the canonical forms the Transformer-XL passes match.
//
// Implements these rewrites, each exact (the result is bit-identical on the
// reference interpreter, except scale∘scale, which rounds once instead of twice):
//   - the reference rel-shift, pad(x, last axis, 1, 0, 0) -> reshape [.., K+1, Q]
//     -> slice rows 1..K+1 -> reshape [.., Q, K], becomes rel_shift(x)
//     (ops.def defines rel_shift with the same leftovers);
//   - scale(scale(x, a), b) -> scale(x, a·b); scale(x, 1) -> x;
//   - reshape, permute or slice that changes nothing -> its operand;
//   - reshape(reshape(x)) -> reshape(x); permute(permute(x, p), q) -> permute(x, p∘q);
//     slice(slice(x)) along one axis -> one slice.
//
// Algorithm:
//   1. Visit the nodes in topological order; for each, try the patterns above
//      in turn, each returning early on a mismatch. A match builds the
//      replacement and redirects every use of the node to it.
//   2. Revisit, round by round in topological order, what a rewrite may have
//      made matchable: the replacement and its users up to three links up
//      (the literal rel-shift is the deepest pattern: reshape(slice(reshape(pad)))),
//      until a round changes nothing. Chains such as
//      reshape(reshape(reshape(x))) collapse one link per round.
// A replaced node is erased, with the operands only it used, so that the
// passes after this one see exact use counts.
#include "passes/canonicalize.h"

#include <functional>
#include <numeric>

#include "passes/rewrite_utils.h"

namespace txl::passes {

using ir::Node;
using ir::OpKind;

namespace {

// The replacement of n, or nullopt when no pattern applies.
std::optional<Node> simplify(ir::Graph& g, Node n) {
  const ir::Attrs& a = g.op(n).attrs;
  switch (g.kind(n)) {
    case OpKind::Reshape: {
      if (auto x = rw::matchLiteralRelShift(g, n)) return g.add(OpKind::RelShift, {*x});
      Node x = g.operand(n, 0);
      if (g.type(x).shape == g.type(n).shape) return x;
      if (g.kind(x) == OpKind::Reshape) return rw::reshape(g, g.operand(x, 0), a.getInts("shape"));
      return std::nullopt;
    }
    case OpKind::Permute: {
      Node x = g.operand(n, 0);
      const auto& perm = a.getInts("perm");
      std::vector<std::int64_t> identity(perm.size());
      std::iota(identity.begin(), identity.end(), 0);
      if (perm == identity) return x;
      if (g.kind(x) == OpKind::Permute) {
        const auto& inner = g.op(x).attrs.getInts("perm");
        std::vector<std::int64_t> composed(perm.size());
        for (std::size_t i = 0; i < perm.size(); ++i) composed[i] = inner[perm[i]];
        return rw::permute(g, g.operand(x, 0), composed);
      }
      return std::nullopt;
    }
    case OpKind::Slice: {
      Node x = g.operand(n, 0);
      if (g.type(x).shape == g.type(n).shape) return x;
      if (g.kind(x) == OpKind::Slice && rw::axisOf(g, x) == rw::axisOf(g, n)) {
        const std::int64_t start = g.op(x).attrs.getInt("start");
        return rw::slice(g, g.operand(x, 0), rw::axisOf(g, n), start + a.getInt("start"), start + a.getInt("end"));
      }
      return std::nullopt;
    }
    case OpKind::Scale: {
      Node x = g.operand(n, 0);
      if (a.getFloat("factor") == 1.0) return x;
      if (g.kind(x) == OpKind::Scale)
        return rw::scale(g, g.operand(x, 0), g.op(x).attrs.getFloat("factor") * a.getFloat("factor"));
      return std::nullopt;
    }
    default:
      return std::nullopt;
  }
}

}  // namespace

ir::PassResult Canonicalize::run(ir::Graph& g, ir::PassContext& ctx) {
  Rewriter rewriter(g, ctx, name());
  // The nodes whose match may depend on n: n and its users, up to `depth` links up.
  std::function<void(Node, int)> revisitAround = [&](Node n, int depth) {
    rewriter.revisit(n);
    if (depth > 0)
      for (Node u : g.users(n)) revisitAround(u, depth - 1);
  };
  const bool changed = rewriter.run(
      g.topologicalOrder(),
      [&](Node n) {
        if (!ir::opInfo(g.kind(n)).hasResult || !g.hasUsers(n)) return false;
        auto replacement = simplify(g, n);
        if (!replacement) return false;
        rewriter.replace(n, *replacement);  // n and its operands only: all visited already
        revisitAround(*replacement, 3);
        return true;
      },
      Rewriter::Revisit::InTopologicalOrder);
  return ir::PassResult::changedIf(changed);
}

}  // namespace txl::passes
