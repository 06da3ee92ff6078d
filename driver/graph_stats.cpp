// driver/graph_stats.cpp - a graph's totals of the per-node formulas of ir/node_cost.h.
#include "driver/graph_stats.h"

#include "passes/rewrite_utils.h"

namespace txl::driver {

GraphStats graphStats(const ir::Graph& g, bool hoistConstants) {
  GraphStats s;
  for (ir::Node n : g.nodes()) {
    ++s.ops[std::string(ir::opInfo(g.kind(n)).name)];
    const double f = ir::nodeFlops(g, n);
    if (hoistConstants && passes::rw::isConstant(g, n)) {
      s.constantFlops += f;
      continue;
    }
    s.flops += f;
    s.bytes += ir::nodeBytes(g, n);
  }
  return s;
}

nlohmann::json statsToJson(const GraphStats& s) {
  return {{"ops", s.ops},
          {"flops_per_segment", static_cast<std::int64_t>(s.flops)},
          {"bytes_per_segment", static_cast<std::int64_t>(s.bytes)}};
}

}  // namespace txl::driver
