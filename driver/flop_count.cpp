// driver/flop_count.cpp - countFlops(): 2·M·N·K per matrix product, constants
// excluded, projections of remembered rows discounted (flop_count.h).
#include "driver/flop_count.h"

#include "passes/rewrite_utils.h"
#include "driver/graph_stats.h"

namespace txl::driver {

namespace {

using ir::Node;
using ir::OpKind;

// The fraction of the leading-axis rows of `x` that are new in this segment:
// (rows - mlen) / rows when x is [mem_read; new] along axis 0 or a
// mem_window (whose first mlen rows are the memory), seen through row-wise
// ops (layer_norm, reshapes keeping the leading size); else 1.
double newRowFraction(const ir::Graph& g, Node x) {
  const std::int64_t rows = g.type(x).rank() > 0 ? g.type(x).shape[0] : 1;
  for (int depth = 0; depth < 8; ++depth) {
    const OpKind k = g.kind(x);
    if (k == OpKind::LayerNorm ||
        (k == OpKind::Reshape && g.type(g.operand(x, 0)).rank() > 0 && g.type(g.operand(x, 0)).shape[0] == rows)) {
      x = g.operand(x, 0);
      continue;
    }
    if (k == OpKind::Concat && g.op(x).attrs.getInt("axis") == 0 && g.numOperands(x) == 2 &&
        g.kind(g.operand(x, 0)) == OpKind::MemRead && rows > 0) {
      const std::int64_t mem = g.type(g.operand(x, 0)).shape[0];
      return double(rows - mem) / double(rows);
    }
    if (k == OpKind::MemWindow && rows > 0) return double(rows - g.op(x).attrs.getInt("mlen")) / double(rows);
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
    const double fraction = attention ? 1.0 : newRowFraction(g, g.operand(n, 0));
    f.graph += flops;
    f.useful += flops * fraction;
    f.byOp[std::string(ir::opInfo(g.kind(n)).name)] += flops * fraction;
  }
  return f;
}

}  // namespace txl::driver
