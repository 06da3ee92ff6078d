// passes/rewrite_utils.cpp - builders, use tests, the literal rel-shift matcher.
#include "passes/rewrite_utils.h"

#include "ir/shape_inference.h"

namespace txl::passes::rw {

using ir::Node;
using ir::OpKind;

Node slice(ir::Graph& g, Node x, std::int64_t axis, std::int64_t start, std::int64_t end) {
  return g.add(OpKind::Slice, {x}, {{"axis", axis}, {"start", start}, {"end", end}});
}
Node reshape(ir::Graph& g, Node x, Ints shape) { return g.add(OpKind::Reshape, {x}, {{"shape", std::move(shape)}}); }
Node permute(ir::Graph& g, Node x, Ints perm) { return g.add(OpKind::Permute, {x}, {{"perm", std::move(perm)}}); }
Node scale(ir::Graph& g, Node x, double factor) { return g.add(OpKind::Scale, {x}, {{"factor", factor}}); }
Node concat(ir::Graph& g, const std::vector<Node>& xs, std::int64_t axis) {
  return g.add(OpKind::Concat, xs, {{"axis", axis}});
}

std::int64_t axisOf(const ir::Graph& g, Node n) {
  const ir::TensorType& t =
      g.kind(n) == OpKind::Slice || g.kind(n) == OpKind::Pad ? g.type(g.operand(n, 0)) : g.type(n);
  return *ir::normalizeAxis(g.op(n).attrs.getInt("axis"), t.rank());
}

bool singleUse(const ir::Graph& g, Node n) {
  std::vector<Node> users;
  for (Node u : g.users(n))  // users that are themselves unused are dead code, not uses
    if (g.hasUsers(u) || !ir::opInfo(g.kind(u)).hasResult) users.push_back(u);
  if (users.size() != 1) return false;
  int reads = 0;
  for (Node o : g.operands(users[0])) reads += o == n;
  return reads == 1;
}

Node throughViews(const ir::Graph& g, Node n, std::vector<Node>* path) {
  while (g.kind(n) == OpKind::Reshape || g.kind(n) == OpKind::Permute) {
    if (path) path->push_back(n);
    n = g.operand(n, 0);
  }
  return n;
}

std::optional<Node> matchLiteralRelShift(const ir::Graph& g, Node n) {
  if (g.kind(n) != OpKind::Reshape) return std::nullopt;
  Node sl = g.operand(n, 0);
  if (g.kind(sl) != OpKind::Slice) return std::nullopt;
  Node view = g.operand(sl, 0);
  if (g.kind(view) != OpKind::Reshape) return std::nullopt;
  Node pad = g.operand(view, 0);
  if (g.kind(pad) != OpKind::Pad) return std::nullopt;
  Node x = g.operand(pad, 0);
  const ir::Shape& xs = g.type(x).shape;
  const std::int64_t rank = static_cast<std::int64_t>(xs.size());
  if (rank < 2) return std::nullopt;
  const std::int64_t q = xs[rank - 2], k = xs[rank - 1];
  const auto& pa = g.op(pad).attrs;
  if (axisOf(g, pad) != rank - 1 || pa.getInt("before") != 1 || pa.getInt("after") != 0 || pa.getFloat("value") != 0.0)
    return std::nullopt;
  ir::Shape lead(xs.begin(), xs.end() - 2), viewed = lead, result = xs;
  viewed.push_back(k + 1);
  viewed.push_back(q);
  if (g.type(view).shape != viewed) return std::nullopt;
  const auto& sa = g.op(sl).attrs;
  if (axisOf(g, sl) != rank - 2 || sa.getInt("start") != 1 || sa.getInt("end") != k + 1) return std::nullopt;
  if (g.type(n).shape != result) return std::nullopt;
  return x;
}

}  // namespace txl::passes::rw
