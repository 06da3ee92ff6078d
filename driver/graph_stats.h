// driver/graph_stats.h - what one segment graph costs: ops per kind, FLOPs and
// bytes moved per segment (the per-node formulas are ir/node_cost.h).
//
//   GraphStats s = graphStats(g, /*hoistConstants=*/true);
//   s.flops;  s.ops.at("linear");
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "ir/graph.h"
#include "ir/node_cost.h"

namespace txl::driver {

struct GraphStats {
  std::map<std::string, std::int64_t> ops;  // node count per op name, as the IR prints it
  double flops = 0;                         // per segment
  double bytes = 0;                         // per segment
  double constantFlops = 0;                 // hoisted: computed once when a plan is compiled
};

// With hoistConstants, nodes whose value depends only on weights and
// attribute-only sources (evaluated once per plan by the backend's constant
// folding) count under constantFlops, not per segment. Without it every node
// counts, as the reference executes the literal graph.
GraphStats graphStats(const ir::Graph& g, bool hoistConstants);

// {"ops": {...}, "flops_per_segment": N, "bytes_per_segment": N}
nlohmann::json statsToJson(const GraphStats& s);

}  // namespace txl::driver
