// passes/fold_bias_terms.cpp - the u / v bias adds and the score scale, folded
// into the Q projections.
//
// The literal relative attention computes q = (W_qkv x)[rows m.., cols 0..HD)
// over all klen rows, then two copies q + u and q + v, then
// s · ((q+u)·k + shift((q+v)·r)). Since
//     s · ((q+u)·k) = (s·q + s·u)·k   and   (s·q + s·u) = x [s·W_q]ᵀ + s·u,
// both query operands come out of one linear over the last qlen rows of x
// (one folded constant s·W_q, one packed copy, one product) and a bias each:
//     q   = linear(x[m..], s·W_q)             [qlen, B, H·D]
//     q+u = q + s·u,   q+v = q + s·v
// and the scale op disappears; the adds are of qlen rows, not klen. The weight-side expressions
// (slices, scale of weights and biases) are constant subgraphs, evaluated once per plan by the
// backend's constant folding. Then the shared qkv projection is narrowed to
// the columns its remaining users read (k and v), so no run-time GEMM
// computes q for the memory rows. For the absolute baseline (attn_type 2)
// only the scale applies: linear(h, s·W_q).
//
// Algorithm:
//   1. Sites: every scale(S, s) with S = add(AC, shift(BD)) (either order;
//      shift = rel_shift or the literal pad pattern) or S = AC, where AC =
//      matmul(QA, K) and BD = matmul(QB, R), both with transpose_b.
//   2. Relative site: QA and QB lead through reshape / permute views to
//      add(qh, u) and add(qh, v) with one qh, u and v constant of qh's two
//      trailing dims; qh is a view of slices (rows of axis 0, columns of the
//      last axis) of linear(x, W) with constant W and no bias. Build the
//      linear and the two adds above and replace each add by a reshape of
//      its new add. The
//      scale folds in (s above) only when every node from the adds up to the
//      scale has one user; otherwise s = 1 and the scale stays.
//   3. Absolute site: QA leads through single-use views to a single-use
//      linear(h, W[, b]) with constant operands: scale W and b instead.
//   4. Narrow: a linear with constant weights whose every user is a slice of
//      its last axis computes only the columns those slices cover.
// Dead nodes are erased as the rewrites go (so users are exact for step 4).
// Each site is visited once, from a list made before the first rewrite.
#include "passes/fold_bias_terms.h"

#include <algorithm>
#include <map>
#include <set>

#include "passes/rewrite_utils.h"

namespace txl::passes {

using ir::Node;
using ir::OpKind;

namespace {

bool isScoreMatmul(const ir::Graph& g, Node n) {
  return g.kind(n) == OpKind::MatMul && !g.op(n).attrs.getBool("transpose_a") && g.op(n).attrs.getBool("transpose_b");
}

// BD of shift(BD), the shift being rel_shift or the literal pad pattern; appends the shift's nodes to path.
std::optional<Node> shiftedOperand(const ir::Graph& g, Node n, std::vector<Node>& path) {
  if (g.kind(n) == OpKind::RelShift) {
    path.push_back(n);
    return g.operand(n, 0);
  }
  auto x = rw::matchLiteralRelShift(g, n);
  if (!x) return std::nullopt;
  for (Node v = n; v != *x; v = g.operand(v, 0)) path.push_back(v);
  return x;
}

// The projection q is read from: linear(x, W) with rows [r0, r1) and columns [c0, c1).
struct QuerySource {
  Node linear, x, w;
  std::int64_t r0 = 0, r1 = 0, c0 = 0, c1 = 0;
};

std::optional<QuerySource> querySource(const ir::Graph& g, Node qh) {
  Node n = rw::throughViews(g, qh);
  std::optional<std::int64_t> r0, r1, c0, c1;
  while (g.kind(n) == OpKind::Slice) {
    const std::int64_t rank = g.type(g.operand(n, 0)).rank(), axis = rw::axisOf(g, n);
    const std::int64_t a = g.op(n).attrs.getInt("start"), b = g.op(n).attrs.getInt("end");
    if (axis == 0 && !r0) r0 = a, r1 = b;
    else if (axis == rank - 1 && rank > 1 && !c0) c0 = a, c1 = b;
    else return std::nullopt;
    n = g.operand(n, 0);
  }
  if (g.kind(n) != OpKind::Linear || g.numOperands(n) != 2 || !rw::isConstant(g, g.operand(n, 1))) return std::nullopt;
  const ir::TensorType& t = g.type(n);
  QuerySource src{n,
                  g.operand(n, 0),
                  g.operand(n, 1),
                  r0.value_or(0),
                  r1.value_or(t.shape[0]),
                  c0.value_or(0),
                  c1.value_or(t.shape.back())};
  // The view from the sliced [rows, ..., cols] value to qh must only split its last axis.
  const ir::Shape& q = g.type(qh).shape;
  if (t.rank() < 2 || std::int64_t(q.size()) != t.rank() + 1 || q[0] != src.r1 - src.r0) return std::nullopt;
  for (std::int64_t d = 1; d + 1 < t.rank(); ++d)
    if (q[d] != t.shape[d]) return std::nullopt;
  if (q[q.size() - 2] * q.back() != src.c1 - src.c0) return std::nullopt;
  return src;
}

struct BiasFolder {
  ir::Graph& g;
  Rewriter& rewriter;
  int relative = 0, absolute = 0, scalesFolded = 0, narrowed = 0;

  bool allSingleUse(const std::vector<Node>& nodes) {
    return std::all_of(nodes.begin(), nodes.end(), [&](Node n) { return rw::singleUse(g, n); });
  }

  // Step 2. Returns whether the site changed.
  bool relativeSite(Node sc, Node sum, Node ac, Node bd, std::vector<Node> shiftPath) {
    std::vector<Node> pathU{ac}, pathV{bd};
    Node addU = rw::throughViews(g, g.operand(ac, 0), &pathU);
    Node addV = rw::throughViews(g, g.operand(bd, 0), &pathV);
    if (g.kind(addU) != OpKind::Add || g.kind(addV) != OpKind::Add || addU == addV) return false;
    Node qh = g.operand(addU, 0);
    if (g.operand(addV, 0) != qh) return false;
    Node u = g.operand(addU, 1), v = g.operand(addV, 1);
    const ir::Shape& qs = g.type(qh).shape;
    if (qs.size() < 2) return false;
    const ir::Shape heads(qs.end() - 2, qs.end());
    for (Node b : {u, v})
      if (!rw::isConstant(g, b) || g.type(b).shape != heads || g.type(b).dtype != g.type(qh).dtype) return false;
    if (g.type(addU).shape != qs || g.type(addV).shape != qs) return false;
    auto src = querySource(g, qh);
    if (!src) return false;

    pathU.push_back(addU);
    pathV.push_back(addV);
    pathV.insert(pathV.end(), shiftPath.begin(), shiftPath.end());
    const bool foldScale = allSingleUse(pathU) && allSingleUse(pathV) && rw::singleUse(g, sum);
    const double s = foldScale ? g.op(sc).attrs.getFloat("factor") : 1.0;

    const std::int64_t hd = src->c1 - src->c0;
    const std::int64_t rows = g.type(src->x).shape[0];
    Node xq = src->r0 == 0 && src->r1 == rows ? src->x : rw::slice(g, src->x, 0, src->r0, src->r1);
    Node wq = rw::slice(g, src->w, 0, src->c0, src->c1);
    Node bu = rw::reshape(g, u, {hd}), bv = rw::reshape(g, v, {hd});
    if (s != 1.0) {
      wq = rw::scale(g, wq, s);
      bu = rw::scale(g, bu, s);
      bv = rw::scale(g, bv, s);
    }
    // One projection, then each bias: a [W_q; W_q] concat (or two linears
    // over s·W_q) would compute x · s·W_qᵀ twice.
    Node q = g.add(OpKind::Linear, {xq, wq});
    Node qu = g.add(OpKind::Add, {q, bu});
    Node qv = g.add(OpKind::Add, {q, bv});
    g.replaceAllUsesWith(addU, rw::reshape(g, qu, qs));
    g.replaceAllUsesWith(addV, rw::reshape(g, qv, qs));
    if (foldScale) {
      rewriter.replace(sc, sum);
      ++scalesFolded;
    }
    const std::uint64_t projection = g.op(src->linear).id;
    rewriter.eraseIfDead(addU);
    rewriter.eraseIfDead(addV);
    ++relative;
    if (!rewriter.erased(projection)) narrow(src->linear);
    return true;
  }

  // Step 3.
  bool absoluteSite(Node sc, Node ac) {
    std::vector<Node> path{ac};
    Node lin = rw::throughViews(g, g.operand(ac, 0), &path);
    path.push_back(lin);
    if (g.kind(lin) != OpKind::Linear || !allSingleUse(path)) return false;
    std::vector<Node> ops = g.operands(lin);
    for (std::size_t i = 1; i < ops.size(); ++i)
      if (!rw::isConstant(g, ops[i])) return false;
    const double s = g.op(sc).attrs.getFloat("factor");
    for (std::size_t i = 1; i < ops.size(); ++i) ops[i] = rw::scale(g, ops[i], s);
    g.replaceAllUsesWith(lin, g.add(OpKind::Linear, ops));
    rewriter.replace(sc, g.operand(sc, 0));
    rewriter.eraseIfDead(lin);
    ++absolute;
    ++scalesFolded;
    return true;
  }

  // Step 4.
  void narrow(Node lin) {
    if (!g.hasUsers(lin) || !rw::isConstant(g, g.operand(lin, 1))) return;
    const std::int64_t last = g.type(lin).rank() - 1, width = g.type(lin).shape[last];
    std::int64_t lo = width, hi = 0;
    for (Node u : g.users(lin)) {
      if (g.kind(u) != OpKind::Slice || rw::axisOf(g, u) != last) return;
      lo = std::min(lo, g.op(u).attrs.getInt("start"));
      hi = std::max(hi, g.op(u).attrs.getInt("end"));
    }
    if (lo == 0 && hi == width) return;
    std::vector<Node> ops = g.operands(lin);
    for (std::size_t i = 1; i < ops.size(); ++i) ops[i] = rw::slice(g, ops[i], 0, lo, hi);
    Node narrower = g.add(OpKind::Linear, ops);
    for (Node u : g.users(lin)) {
      const auto& a = g.op(u).attrs;
      rewriter.replace(u, rw::slice(g, narrower, last, a.getInt("start") - lo, a.getInt("end") - lo));
    }
    ++narrowed;
  }

  bool site(Node sc) {
    Node sum = g.operand(sc, 0);
    if (isScoreMatmul(g, sum)) return absoluteSite(sc, sum);
    if (g.kind(sum) != OpKind::Add) return false;
    for (int first = 0; first < 2; ++first) {
      Node ac = g.operand(sum, first);
      std::vector<Node> shiftPath;
      auto bd = shiftedOperand(g, g.operand(sum, 1 - first), shiftPath);
      if (isScoreMatmul(g, ac) && bd && isScoreMatmul(g, *bd)) return relativeSite(sc, sum, ac, *bd, shiftPath);
    }
    return false;
  }
};

}  // namespace

ir::PassResult FoldBiasTerms::run(ir::Graph& g, ir::PassContext& ctx) {
  // The sites as they are now (the Rewriter skips those a rewrite erases).
  std::vector<Node> sites;
  for (Node n : g.nodesOfKind(OpKind::Scale))
    if (g.hasUsers(n)) sites.push_back(n);
  Rewriter rewriter(g, ctx, name());
  BiasFolder folder{g, rewriter};
  const bool changed = rewriter.run(sites, [&](Node n) { return g.hasUsers(n) && folder.site(n); });
  if (folder.relative > 0)
    ctx.applied(name(), std::to_string(folder.relative) +
                            " attention block(s): u and v folded into one Q projection [W_q; W_q] with bias [u; v] "
                            "over the last qlen rows; q+u and q+v are views; qkv narrowed to k, v");
  if (folder.absolute > 0)
    ctx.applied(name(), std::to_string(folder.absolute) + " attention block(s): score scale folded into W_q");
  if (folder.scalesFolded < folder.relative + folder.absolute)
    ctx.skipped(name(), std::to_string(folder.relative + folder.absolute - folder.scalesFolded) +
                            " score scale(s) kept: an intermediate value has another user");
  return ir::PassResult::changedIf(changed);
}

}  // namespace txl::passes
