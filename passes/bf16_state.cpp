// passes/bf16_state.cpp - every state window holds its rows in bf16
// (docs/PRECISION.md): half the bytes of the recurrent state, and half the
// bytes the attention of a generated token reads from it.
//
// In the kv form a window holds the projected keys and values; rel_attention
// reads them as bf16 (its kernels widen them to f32 and accumulate in f32).
// In the hidden form a window holds layer inputs, which bf16-matmuls already
// rounds to bf16 before the projections read them: the results are those of
// an f32 window. What the user reads (hidden states, log-probabilities, the
// NLL, a saved state) stays f32; the session converts the state at its
// boundary (backend/session.h).
//
// Algorithm, after bf16-matmuls, for every W = mem_window(x) with f32 x:
//   1. x16 = convert(x) to bf16 (bf16-matmuls' when there is one).
//   2. W16 = mem_window(x16) replaces W. W's readers are followed through
//      slice and reshape (the views of the keys and values); a rel_attention
//      reading one as k or v reads the bf16 view, a convert to bf16 is
//      replaced by the view, and any other reader reads convert(view, f32).
//   3. A window of mlen 0 has no readers: the attention reads x's own rows.
//      Those reaching a rel_attention's k or v through views read x16's
//      instead, so every segment's attention reads the rounded keys and
//      values, whatever its mlen (a padded warm-up plan and an unpadded one
//      see the same values).
//   4. When x is a linear that only x16 reads now, the convert is folded
//      into it (out_dtype bf16: the matmul writes the rounded rows itself).
//   5. A rel_attention left with one of k and v bf16 and the other f32 gets
//      the other converted too (k and v share one dtype).
// The driver declares the windows' slots bf16 at --precision bf16
// (driver::memorySlots), and the session checks each graph against it.
#include "passes/bf16_state.h"

#include <set>

#include "passes/rewrite_utils.h"

namespace txl::passes {

using ir::DType;
using ir::Graph;
using ir::Node;
using ir::OpKind;

namespace {

const ir::Attrs kToBf16{{"dtype", std::string("bf16")}};
const ir::Attrs kToF32{{"dtype", std::string("f32")}};

bool isConvertTo(const Graph& g, Node n, DType dtype) {
  return g.kind(n) == OpKind::Convert && g.type(n).dtype == dtype;
}

bool isView(const Graph& g, Node n) { return g.kind(n) == OpKind::Slice || g.kind(n) == OpKind::Reshape; }

// Makes the readers of the f32 value `v` that can take its bf16 form `b` read
// it (through views, to a rel_attention's k or v, or a convert to bf16). With
// `widenOthers`, every other reader reads convert(b, f32) (v is going away);
// else it keeps reading v. Erases what it leaves unread.
void retarget(Graph& g, Node v, Node b, bool widenOthers) {
  std::optional<Node> widened;
  for (Node u : g.users(v)) {
    if (u == b) continue;  // b = convert(v) itself
    if (isView(g, u)) {
      const Node ub = g.add(g.kind(u), {b}, g.op(u).attrs);
      retarget(g, u, ub, widenOthers);
      if (!g.hasUsers(ub)) g.erase(ub);
      if (!g.hasUsers(u)) g.erase(u);
      continue;
    }
    if (isConvertTo(g, u, DType::BF16)) {
      g.replaceAllUsesWith(u, b);
      g.erase(u);
      continue;
    }
    for (std::size_t i = 0; i < g.numOperands(u); ++i) {
      if (g.operand(u, i) != v) continue;
      if (g.kind(u) == OpKind::RelAttention && (i == 2 || i == 3)) {
        g.setOperand(u, i, b);
      } else if (widenOthers) {
        if (!widened) widened = g.add(OpKind::Convert, {b}, kToF32);
        g.setOperand(u, i, *widened);
      }
    }
  }
}

// x in bf16: bf16-matmuls' convert of x, or a new one.
Node bf16Of(Graph& g, Node x) {
  for (Node u : g.users(x))
    if (isConvertTo(g, u, DType::BF16)) return u;
  return g.add(OpKind::Convert, {x}, kToBf16);
}

// x16 = convert(x) folded into x when x is a linear that nothing else reads:
// the matmul writes bf16 itself.
void foldIntoLinear(Graph& g, Node x16) {
  const Node x = g.operand(x16, 0);
  if (g.kind(x) != OpKind::Linear || !g.op(x).attrs.has("out_dtype") || g.users(x).size() != 1) return;
  g.op(x).attrs.set("out_dtype", std::string("bf16"));
  g.op(x).type->dtype = DType::BF16;
  g.replaceAllUsesWith(x16, x);
  g.erase(x16);
}

}  // namespace

ir::PassResult Bf16State::run(Graph& g, ir::PassContext& ctx) {
  int windows = 0;
  for (Node w : g.nodesOfKind(OpKind::MemWindow)) {
    const Node x = g.operand(w, 0);
    if (g.type(x).dtype != DType::F32) continue;
    const Node x16 = bf16Of(g, x);
    const Node w16 = g.add(OpKind::MemWindow, {x16}, g.op(w).attrs);
    retarget(g, w, w16, true);
    g.erase(w);
    retarget(g, x, x16, false);  // step 3 (x's readers besides x16: none when mlen > 0)
    foldIntoLinear(g, x16);
    ++windows;
  }
  // Step 5.
  for (Node a : g.nodesOfKind(OpKind::RelAttention)) {
    const Node k = g.operand(a, 2), v = g.operand(a, 3);
    if (g.type(k).dtype == g.type(v).dtype) continue;
    const std::size_t f32 = g.type(k).dtype == DType::F32 ? 2 : 3;
    g.setOperand(a, f32, g.add(OpKind::Convert, {g.operand(a, f32)}, kToBf16));
  }
  if (windows > 0) ctx.applied(name(), std::to_string(windows) + " state window(s) in bf16");
  return ir::PassResult::changedIf(windows > 0);
}

}  // namespace txl::passes
