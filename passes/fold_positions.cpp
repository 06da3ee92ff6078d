// passes/fold_positions.cpp - one position table (and one W_r R per layer) for
// every segment shape of a model.
//
// Row m of pos_encoding{klen} encodes distance klen-1-m (clamped), so the
// table for a shorter klen is exactly the last klen rows of the table for
// kmax: rows kmax-klen .. kmax. Projections of the table (r = W_r R, and its
// head view [H, klen, D]) are row-wise, so they commute with that slice.
// After this pass every graph of a model computes the same constant cones
// (the table and W_r R for kmax) and reads suffix views of them; the
// backend's constant folding evaluates those once, at plan-compile time, and
// shares them across segment shapes.
//
// Algorithm:
//   1. kmax = PassContext::maxKlen, or the longest klen among the graph's
//      pos_encoding ops. A pos_encoding longer than maxKlen is an error.
//   2. Replace every pos_encoding{klen < kmax} by slice(pos_encoding{kmax}, 0, kmax-klen, kmax).
//   3. Sink every slice of a position table row-wise towards its run-time users
//      (a worklist of the slices made, passes/rewriter.h): linear(slice(T), W, b) with constant W, b becomes
//      slice(linear(T, W, b)); a reshape that keeps the sliced axis leading
//      and a permute move below the slice too (the slice follows its axis).
// Nodes left without users stay for dce.
#include "passes/fold_positions.h"

#include <algorithm>

#include "passes/rewrite_utils.h"

namespace txl::passes {

using ir::Node;
using ir::OpKind;

namespace {

// The user u of s = slice(t, axis, a, b), rebuilt over t and sliced after; nullopt when u is not row-wise.
std::optional<Node> sinkThrough(ir::Graph& g, Node s, Node u) {
  const Node t = g.operand(s, 0);
  const std::int64_t axis = rw::axisOf(g, s);
  const std::int64_t a = g.op(s).attrs.getInt("start"), b = g.op(s).attrs.getInt("end");
  switch (g.kind(u)) {
    case OpKind::Linear: {
      if (axis == g.type(t).rank() - 1 || g.operand(u, 0) != s) return std::nullopt;
      std::vector<Node> ops = g.operands(u);
      for (std::size_t i = 1; i < ops.size(); ++i)
        if (!rw::isConstant(g, ops[i])) return std::nullopt;
      ops[0] = t;
      return rw::slice(g, g.add(OpKind::Linear, ops), axis, a, b);
    }
    case OpKind::Reshape: {
      // Only reshapes that keep every axis up to the sliced one.
      const ir::Shape& from = g.type(s).shape;
      const ir::Shape& to = g.type(u).shape;
      if (std::int64_t(to.size()) <= axis || !std::equal(from.begin(), from.begin() + axis + 1, to.begin()))
        return std::nullopt;
      ir::Shape full = to;
      full[axis] = g.type(t).shape[axis];
      return rw::slice(g, rw::reshape(g, t, full), axis, a, b);
    }
    case OpKind::Permute: {
      const auto& perm = g.op(u).attrs.getInts("perm");
      const auto at = std::find(perm.begin(), perm.end(), axis) - perm.begin();
      return rw::slice(g, rw::permute(g, t, perm), at, a, b);
    }
    default:
      return std::nullopt;
  }
}

}  // namespace

ir::PassResult FoldPositions::run(ir::Graph& g, ir::PassContext& ctx) {
  auto tables = g.nodesOfKind(OpKind::PosEncoding);
  if (tables.empty()) return ir::PassResult::unchanged();
  std::int64_t longest = 0;
  for (Node p : tables) longest = std::max(longest, g.op(p).attrs.getInt("klen"));
  const std::int64_t kmax = ctx.maxKlen.value_or(longest);
  if (longest > kmax)
    return ir::PassResult::failure("maxKlen " + std::to_string(kmax) + " is shorter than a pos_encoding of klen " +
                                   std::to_string(longest));

  Rewriter rewriter(g, ctx, name());
  int suffixes = 0, projections = 0;
  bool changed = rewriter.run(tables, [&](Node p) {
    const ir::Attrs& attrs = g.op(p).attrs;
    const std::int64_t klen = attrs.getInt("klen");
    if (klen >= kmax) return false;
    ir::Attrs full = attrs;
    full.set("klen", kmax);
    Node table = g.add(OpKind::PosEncoding, {}, full);
    Node suffix = rw::slice(g, table, 0, kmax - klen, kmax);
    g.replaceAllUsesWith(p, suffix);
    ++suffixes;
    return true;
  });
  // 3. The worklist: each slice's users, and each slice sunk below one of them.
  std::vector<Node> slices;
  for (Node n : g.nodesOfKind(OpKind::Slice))
    if (g.kind(g.operand(n, 0)) == OpKind::PosEncoding && g.hasUsers(n)) slices.push_back(n);
  changed |= rewriter.run(slices, [&](Node s) {
    bool sank = false;
    for (Node u : g.users(s)) {
      auto sunk = sinkThrough(g, s, u);
      if (!sunk) continue;
      projections += g.kind(u) == OpKind::Linear;
      g.replaceAllUsesWith(u, *sunk);
      rewriter.revisit(*sunk);
      sank = true;
    }
    return sank;
  });
  if (changed)
    ctx.applied(name(), "position table built for klen " + std::to_string(kmax) + ": " + std::to_string(suffixes) +
                            " table(s) read as suffixes, " + std::to_string(projections) +
                            " projection(s) (W_r R) computed on the shared table");
  return ir::PassResult::changedIf(changed);
}

}  // namespace txl::passes
