// passes/window_memory.cpp - [memory; x] and the memory update as one mem_window.
//
// The literal graph reads a slot's memory, concatenates the new rows behind
// it (a copy of mlen + qlen rows), and writes the last `keep` rows back (a
// second copy, of up to mem_len rows, every segment). With mem_window the
// session keeps each slot in a window buffer: the plan appends the qlen new
// rows after the remembered ones, attention reads [memory | segment] in
// place, and the session advances the window's start instead of moving rows,
// so the update costs O(qlen · row), not O(mem_len · row).
//
// Algorithm, for every mem_write(s) whose operand S = slice(X, axis 0, a, R)
// keeps the last rows of X (R = rows of X):
//   1. X = concat(mem_read(s), x) along axis 0: replace X by
//      mem_window(x) {slot s, mlen, keep = R - a}; S, the mem_write and the
//      mem_read go.
//   2. X = x with no memory (mlen 0): add mem_window(x) {mlen 0} (it has no
//      users: it only writes the state); S and the mem_write go.
//   3. Anything else (another user of the mem_read, another mem_read of the
//      slot, a slice that does not end at the last row): the slot is left
//      alone.
// Each mem_write is visited once; the mem_reads of each slot are listed once
// up front.
#include "passes/window_memory.h"

#include <map>

#include "ir/shape_inference.h"
#include "passes/rewriter.h"

namespace txl::passes {

using ir::Node;
using ir::OpKind;

namespace {

bool isRowSuffix(const ir::Graph& g, Node slice) {
  if (g.kind(slice) != OpKind::Slice) return false;
  const Node x = g.operand(slice, 0);
  return *ir::normalizeAxis(g.op(slice).attrs.getInt("axis"), g.type(x).rank()) == 0 &&
         g.op(slice).attrs.getInt("end") == g.type(x).shape[0];
}

}  // namespace

ir::PassResult WindowMemory::run(ir::Graph& g, ir::PassContext& ctx) {
  // The memory reads of each slot, listed once: a slot must not be read
  // outside its [memory; x] (nothing else may hold the state the window moves).
  std::map<std::int64_t, std::vector<Node>> reads;
  for (Node r : g.nodesOfKind(OpKind::MemRead)) reads[g.op(r).attrs.getInt("slot")].push_back(r);
  Rewriter rewriter(g, ctx, name());
  const bool changed = rewriter.run(g.nodesOfKind(OpKind::MemWrite), [&](Node write) {
    const std::int64_t slot = g.op(write).attrs.getInt("slot");
    const Node kept = g.operand(write, 0);
    if (!isRowSuffix(g, kept)) return false;
    const Node x = g.operand(kept, 0);
    const std::int64_t rows = g.type(x).shape[0];
    const std::int64_t keep = rows - g.op(kept).attrs.getInt("start");

    Node appended = x;
    std::int64_t mlen = 0;
    std::optional<Node> read;
    if (g.kind(x) == OpKind::Concat && g.numOperands(x) == 2 &&
        *ir::normalizeAxis(g.op(x).attrs.getInt("axis"), g.type(x).rank()) == 0 &&
        g.kind(g.operand(x, 0)) == OpKind::MemRead && g.op(g.operand(x, 0)).attrs.getInt("slot") == slot) {
      read = g.operand(x, 0);
      if (g.users(*read).size() != 1) return false;  // the memory is read elsewhere too
      appended = g.operand(x, 1);
      mlen = g.type(*read).shape[0];
    }
    for (Node r : reads[slot])
      if (!read || r != *read) return false;

    Node window = g.add(OpKind::MemWindow, {appended}, {{"slot", slot}, {"mlen", mlen}, {"keep", keep}});
    rewriter.erase(write);
    if (read) g.replaceAllUsesWith(x, window);  // (kept reads the window now; it goes next)
    rewriter.eraseIfDead(kept);
    if (read) rewriter.eraseIfDead(x);
    return true;
  });
  return ir::PassResult::changedIf(changed);
}

}  // namespace txl::passes
