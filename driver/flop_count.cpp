// driver/flop_count.cpp - countFlops(): 2·M·N·K per matrix product, constants
// excluded, projections of remembered rows and of embedding lookups
// discounted (flop_count.h).
#include "driver/flop_count.h"

#include <optional>
#include <utility>

#include "passes/fold_embedding_projections.h"
#include "passes/rewrite_utils.h"
#include "driver/graph_stats.h"

namespace txl::driver {

namespace {

using ir::Node;
using ir::OpKind;

// When x is [memory; new rows] along axis 0 (a concat after a mem_read, or a
// mem_window, whose first mlen rows are the memory): the new rows' value and
// the count of memory rows.
std::optional<std::pair<Node, std::int64_t>> splitRows(const ir::Graph& g, Node x) {
  if (g.kind(x) == OpKind::Concat && g.op(x).attrs.getInt("axis") == 0 && g.numOperands(x) == 2 &&
      g.kind(g.operand(x, 0)) == OpKind::MemRead)
    return std::pair{g.operand(x, 1), g.type(g.operand(x, 0)).shape[0]};
  if (g.kind(x) == OpKind::MemWindow) return std::pair{g.operand(x, 0), g.op(x).attrs.getInt("mlen")};
  return std::nullopt;
}

// The fraction of the rows of linear n's input that are useful work: the new
// rows of this segment, (rows - mlen) / rows when the input is [mem_read;
// new] along axis 0 or a mem_window (whose first mlen rows are the memory),
// seen through row-wise ops (layer_norm, reshapes keeping the leading size);
// none when those new rows (or a slice of the new rows alone) are embedding
// rows that fold-embedding-projections turns into lookups (a plain linear
// straight over them); else 1.
double newRowFraction(const ir::Graph& g, Node n) {
  Node x = g.operand(n, 0);
  // Whether linear n projects `rows` straight (no layer norm between): a lookup when they are embedding rows.
  bool straight = g.kind(n) == OpKind::Linear && g.numOperands(n) == 2;
  const auto lookedUp = [&](Node rows) { return straight && passes::isEmbeddingProjection(g, rows, g.operand(n, 1)); };
  if (lookedUp(x)) return 0.0;
  const std::int64_t rows = g.type(x).rank() > 0 ? g.type(x).shape[0] : 1;
  for (int depth = 0; depth < 8; ++depth) {
    const OpKind k = g.kind(x);
    if (k == OpKind::LayerNorm ||
        (k == OpKind::Reshape && g.type(g.operand(x, 0)).rank() > 0 && g.type(g.operand(x, 0)).shape[0] == rows)) {
      straight = straight && k != OpKind::LayerNorm;
      x = g.operand(x, 0);
      continue;
    }
    if (k == OpKind::Slice && passes::rw::axisOf(g, x) == 0) {  // the new rows alone: all useful, or lookups
      const auto split = splitRows(g, g.operand(x, 0));
      if (split && g.op(x).attrs.getInt("start") >= split->second && lookedUp(split->first)) return 0.0;
      break;
    }
    if (const auto split = splitRows(g, x); split && rows > 0)
      return lookedUp(split->first) ? 0.0 : double(rows - split->second) / double(rows);
    break;
  }
  return 1.0;
}

}  // namespace

FlopCount countFlops(const ir::Graph& g) {
  FlopCount f;
  for (Node n : g.topologicalOrder()) {
    const double flops = ir::matrixProductFlops(g, n);
    if (flops == 0 || passes::rw::isConstant(g, n)) continue;
    const bool attention = g.kind(n) == OpKind::MatMul || g.kind(n) == OpKind::RelAttention;  // every key is read
    const double fraction = attention ? 1.0 : newRowFraction(g, n);
    f.graph += flops;
    f.useful += flops * fraction;
    f.byOp[std::string(ir::opInfo(g.kind(n)).name)] += flops * fraction;
  }
  return f;
}

}  // namespace txl::driver
