// driver/graph_stats.h - what one segment graph costs: ops per kind, FLOPs and
// bytes moved per segment (formulas in docs/PASSES.md).
//
//   GraphStats s = graphStats(g, /*hoistConstants=*/true);
//   s.flops;  s.ops.at("linear");
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "ir/graph.h"

namespace txl::driver {

struct GraphStats {
  std::map<std::string, std::int64_t> ops;  // node count per op name, as the IR prints it
  double flops = 0;                         // per segment
  double bytes = 0;                         // per segment
  double constantFlops = 0;                 // hoisted: computed once when a plan is compiled
};

// 2·M·N·K of a matrix product (linear, fused_linear, matmul); 0 for any other op.
double matrixProductFlops(const ir::Graph& g, ir::Node n);

// FLOPs and bytes of one node as docs/PASSES.md defines them: a matrix
// product's plus its fused element-wise epilogue, and the element-wise,
// normalization and softmax costs.
double nodeFlops(const ir::Graph& g, ir::Node n);
double nodeBytes(const ir::Graph& g, ir::Node n);

// With hoistConstants, nodes whose value depends only on weights and
// attribute-only sources (evaluated once per plan by the backend's constant
// folding) count under constantFlops, not per segment. Without it every node
// counts, as the reference executes the literal graph.
GraphStats graphStats(const ir::Graph& g, bool hoistConstants);

// {"ops": {...}, "flops_per_segment": N, "bytes_per_segment": N}
nlohmann::json statsToJson(const GraphStats& s);

}  // namespace txl::driver
