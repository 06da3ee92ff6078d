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
//   2. Repeat until a sweep changes nothing (chains such as
//      reshape(reshape(reshape(x))) collapse one link per sweep).
// A replaced node is erased, with the operands only it used, so that the
// passes after this one see exact use counts.
#include "passes/canonicalize.h"

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

ir::PassResult Canonicalize::run(ir::Graph& g, ir::PassContext&) {
  bool changed = false;
  for (bool sweep = true; sweep;) {
    sweep = false;
    for (Node n : g.topologicalOrder()) {
      if (!ir::opInfo(g.kind(n)).hasResult || !g.hasUsers(n)) continue;
      auto replacement = simplify(g, n);
      if (!replacement) continue;
      g.replaceAllUsesWith(n, *replacement);
      rw::eraseIfDead(g, n);  // n and its operands only: all visited already
      sweep = changed = true;
    }
  }
  return ir::PassResult::changedIf(changed);
}

}  // namespace txl::passes
