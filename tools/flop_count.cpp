// tools/flop_count.cpp - countFlops(): 2·M·N·K per matrix product, constants
// excluded, projections of remembered rows discounted (flop_count.h).
#include "tools/flop_count.h"

#include <unordered_set>

namespace txl::tools {

namespace {

using ir::Node;
using ir::OpKind;

bool isConstantSource(OpKind k) {
  return k == OpKind::Weight || k == OpKind::Constant || k == OpKind::PosEncoding || k == OpKind::AttnMask;
}

// The fraction of the leading-axis rows of `x` that are new in this segment:
// (rows - mlen) / rows when x is [mem_read; new] along axis 0, seen through
// row-wise ops (layer_norm, reshapes keeping the leading size); else 1.
double newRowFraction(const ir::Graph& g, Node x) {
  const std::int64_t rows = g.type(x).rank() > 0 ? g.type(x).shape[0] : 1;
  for (int depth = 0; depth < 8; ++depth) {
    const OpKind k = g.kind(x);
    if (k == OpKind::LayerNorm || (k == OpKind::Reshape && g.type(g.operand(x, 0)).rank() > 0 &&
                                   g.type(g.operand(x, 0)).shape[0] == rows)) {
      x = g.operand(x, 0);
      continue;
    }
    if (k == OpKind::Concat && g.op(x).attrs.getInt("axis") == 0 && g.numOperands(x) == 2 &&
        g.kind(g.operand(x, 0)) == OpKind::MemRead && rows > 0) {
      const std::int64_t mem = g.type(g.operand(x, 0)).shape[0];
      return double(rows - mem) / double(rows);
    }
    break;
  }
  return 1.0;
}

}  // namespace

FlopCount countFlops(const ir::Graph& g) {
  FlopCount f;
  std::unordered_set<Node> constant;
  for (Node n : g.topologicalOrder()) {
    const OpKind k = g.kind(n);
    bool isConst = isConstantSource(k);
    if (!isConst && g.numOperands(n) > 0 && k != OpKind::Input && k != OpKind::MemRead) {
      isConst = true;
      for (Node o : g.operands(n)) isConst = isConst && constant.count(o);
    }
    if (isConst) {
      constant.insert(n);
      continue;
    }
    double flops = 0, fraction = 1;
    if (k == OpKind::Linear || k == OpKind::FusedLinear) {
      const double in = double(g.type(g.operand(n, 1)).shape[1]);
      flops = 2.0 * double(g.type(n).numel()) * in;
      fraction = newRowFraction(g, g.operand(n, 0));
    } else if (k == OpKind::MatMul) {
      const auto& a = g.type(g.operand(n, 0));
      const bool ta = g.op(n).attrs.getBool("transpose_a");
      flops = 2.0 * double(g.type(n).numel()) * double(a.shape[a.rank() - (ta ? 2 : 1)]);
    }
    if (flops == 0) continue;
    f.graph += flops;
    f.useful += flops * fraction;
    f.byOp[std::string(ir::opInfo(k).name)] += flops * fraction;
  }
  return f;
}

}  // namespace txl::tools
