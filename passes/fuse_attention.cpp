// passes/fuse_attention.cpp - a layer's attention as one rel_attention op.
//
// After fuse-rel-shift, a layer's attention is still five steps that write
// and read [B, H, Q, K] blocks and head-major copies: permutes of q+u, q+v,
// k and v to [B, H, ., D], AC = (q+u) · kᵀ and BD = (q+v) · rt, rel_scores
// (shift, scale, mask and softmax), P · V, and the permute back to
// [Q, B, H, D]. rel_attention(qu, qv, k, v, rt, mask[, pad]) reads the
// operands where they are and computes the scores per key block in
// registers (backend/kernels/rel_attention.h): neither the scores nor the copies
// exist. What that buys is measured by `txlc bench ... --disable-pass
// fuse-attention` (docs/PERFORMANCE.md).
//
// Algorithm:
//   1. Sites: rel_scores(AC, BD, mask) {value = -inf} with P = the rel_scores
//      itself when {softmax}, or P = softmax(masked_fill(rel_scores, pad)
//      {value = -inf}) over the last axis with pad f32[B, 1, 1, K] (a padded
//      graph's padding keys, per stream), each link read only by the next.
//   2. P's only user is matmul(P, permute(v, [1, 2, 0, 3])), whose only user
//      is permute(., [2, 0, 1, 3]) (back to [Q, B, H, D]); AC is
//      matmul(permute(qu), permute(k)) {transpose_b}, BD is matmul(permute(qv),
//      rt) with rt [H, D, K] (pretranspose-constants' layout; run after it),
//      every permute head-major [1, 2, 0, 3] of a [., B, H, D] value.
//   3. Build the candidate rel_attention and ask the target
//      (Rewriter::keepIfFast: a slow path drops it with the target's
//      reason); else replace the final permute by it and erase what only it
//      used. When k and v come from state windows that bf16-state will make
//      bf16 (PassContext::stateDType), the target is asked about the op
//      reading them as bf16, the op it will lower.
#include "passes/fuse_attention.h"

#include <algorithm>
#include <cmath>

#include "ir/shape_inference.h"
#include "passes/rewrite_utils.h"

namespace txl::passes {

using ir::Node;
using ir::OpKind;

namespace {

const rw::Ints kHeadMajor{1, 2, 0, 3};
const rw::Ints kRowMajor{2, 0, 1, 3};

// x when n = permute(x, perm) is read only by its user; else nullopt.
std::optional<Node> permuted(const ir::Graph& g, Node n, const rw::Ints& perm) {
  if (g.kind(n) != OpKind::Permute || g.op(n).attrs.getInts("perm") != perm || !rw::singleUse(g, n))
    return std::nullopt;
  return g.operand(n, 0);
}

bool plainMatMul(const ir::Graph& g, Node n, bool transposeB) {
  const auto& a = g.op(n).attrs;
  return g.kind(n) == OpKind::MatMul && !a.getBool("transpose_a") && a.getBool("transpose_b") == transposeB &&
         rw::singleUse(g, n);
}

bool minusInfinity(const ir::Graph& g, Node n) {
  const double v = g.op(n).attrs.getFloat("value");
  return std::isinf(v) && v < 0;
}

// Whether n is (a slice / reshape view of) a state window, or of a window's
// new rows: what bf16-state makes bf16.
bool readsWindow(const ir::Graph& g, Node n) {
  while (g.kind(n) == OpKind::Slice || g.kind(n) == OpKind::Reshape) n = g.operand(n, 0);
  if (g.kind(n) == OpKind::MemWindow) return true;
  const auto users = g.users(n);
  return std::any_of(users.begin(), users.end(), [&](Node u) { return g.kind(u) == OpKind::MemWindow; });
}

// The only user of n, if n has exactly one.
std::optional<Node> onlyUser(const ir::Graph& g, Node n) {
  const auto users = g.users(n);
  if (users.size() != 1 || !rw::singleUse(g, n)) return std::nullopt;
  return users[0];
}

struct Site {
  Node result;              // permute(P · V) [Q, B, H, D]: what rel_attention replaces
  Node qu, qv, k, v, rt;    // its operands, row-major
  std::optional<Node> pad;  // pad [B, 1, 1, K] of the padding keys' masked_fill
};

std::optional<Site> match(const ir::Graph& g, Node rs) {
  if (!minusInfinity(g, rs)) return std::nullopt;
  std::optional<Node> padding;
  Node p = rs;
  if (!g.op(rs).attrs.getBool("softmax")) {  // 1. masked_fill(., pad) then softmax
    auto fill = onlyUser(g, rs);
    if (!fill || g.kind(*fill) != OpKind::MaskedFill || g.operand(*fill, 0) != rs || !minusInfinity(g, *fill))
      return std::nullopt;
    const Node pad = g.operand(*fill, 1);
    const auto& shape = g.type(rs).shape;
    if (g.type(pad).shape != ir::Shape{shape[0], 1, 1, shape.back()}) return std::nullopt;
    auto softmax = onlyUser(g, *fill);
    if (!softmax || g.kind(*softmax) != OpKind::Softmax ||
        ir::normalizeAxis(g.op(*softmax).attrs.getInt("axis"), std::int64_t(shape.size())) !=
            std::int64_t(shape.size()) - 1)
      return std::nullopt;
    padding = pad;
    p = *softmax;
  }
  // 2. P · V, back to row-major; AC and BD.
  auto pv = onlyUser(g, p);
  if (!pv || !plainMatMul(g, *pv, false) || g.operand(*pv, 0) != p) return std::nullopt;
  auto back = onlyUser(g, *pv);
  if (!back || g.kind(*back) != OpKind::Permute || g.op(*back).attrs.getInts("perm") != kRowMajor) return std::nullopt;
  const Node ac = g.operand(rs, 0), bd = g.operand(rs, 1);
  if (!plainMatMul(g, ac, true) || !plainMatMul(g, bd, false)) return std::nullopt;
  auto qu = permuted(g, g.operand(ac, 0), kHeadMajor), k = permuted(g, g.operand(ac, 1), kHeadMajor),
       qv = permuted(g, g.operand(bd, 0), kHeadMajor), v = permuted(g, g.operand(*pv, 1), kHeadMajor);
  if (!qu || !k || !qv || !v) return std::nullopt;
  return Site{*back, *qu, *qv, *k, *v, g.operand(bd, 1), padding};
}

}  // namespace

ir::PassResult FuseAttention::run(ir::Graph& g, ir::PassContext& ctx) {
  Rewriter rewriter(g, ctx, name());
  int fused = 0;
  rewriter.run(g.nodesOfKind(OpKind::RelScores), [&](Node rs) {
    if (!g.hasUsers(rs)) return false;
    const auto site = match(g, rs);
    if (!site) return false;
    std::vector<Node> operands{site->qu, site->qv, site->k, site->v, site->rt, g.operand(rs, 2)};
    if (site->pad) operands.push_back(*site->pad);
    // The op's type check rejects operands in other layouts, e.g. a position
    // table per batch index ([B, H, D, K]): leave those sites as they are.
    const ir::Attrs attrs{{"scale", g.op(rs).attrs.getFloat("scale")}};
    std::vector<ir::TensorType> types;
    for (Node o : operands) types.push_back(g.type(o));
    const std::string where = "attention " + g.type(site->result).str();
    if (auto inferred = ir::inferType(OpKind::RelAttention, types, attrs); !inferred.ok()) {
      rewriter.skipped(where + ": " + inferred.error);
      return false;
    }
    std::vector<Node> asked = operands, converts;
    if (ctx.stateDType == ir::DType::BF16 && readsWindow(g, site->k) && readsWindow(g, site->v))
      for (std::size_t i : {2, 3})
        converts.push_back(asked[i] = g.add(OpKind::Convert, {operands[i]}, {{"dtype", std::string("bf16")}}));
    const Node fusedNode = g.add(OpKind::RelAttention, asked, attrs);
    const bool fast = rewriter.keepIfFast(fusedNode, where);
    if (fast && !converts.empty()) g.setOperands(fusedNode, operands);
    for (Node c : converts) rewriter.erase(c);
    if (!fast) return false;
    rewriter.replace(site->result, fusedNode);
    ++fused;
    return true;
  });
  if (fused > 0)
    ctx.applied(name(), std::to_string(fused) +
                            " attention block(s) as one rel_attention op (no score block, no head-major copies)");
  return ir::PassResult::changedIf(fused > 0);
}

}  // namespace txl::passes
