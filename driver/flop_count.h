// driver/flop_count.h - the multiply-add work a segment graph must do.
//
// countFlops() walks the matrix products of a graph (linear, fused_linear,
// matmul) and counts 2·M·N·K floating-point operations for each. Two
// refinements make it the *useful* work of docs/PERFORMANCE.md rather than the
// work a particular graph happens to do:
//   - constant subgraphs (depending only on weights, constants, position
//     tables and masks: r_net over the position table) are evaluated once per
//     model by the backend, so they count 0;
//   - a projection whose rows are [memory; new rows] (a concat along time
//     with a mem_read in front, or a mem_window, possibly under a layer norm)
//     counts only the new rows: projections of remembered positions can be
//     cached, so they are not work the model must do per segment;
//   - a projection of embedding rows that fold-embedding-projections turns
//     into a lookup in a projected table (the first layer's of a character
//     model, straight over the rows or their [memory; new] form) counts 0:
//     the table is a constant, built once per model.
// `graph` is what the graph as written does (after the constant rule only);
// `useful` is with all three rules.
//
//   FlopCount f = countFlops(graph);
//   double gflops = f.useful / seconds / 1e9;
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "ir/graph.h"

namespace txl::driver {

struct FlopCount {
  double useful = 0;                   // FLOPs the optimized computation must do
  double graph = 0;                    // FLOPs this graph does per run (constant cones excluded)
  std::map<std::string, double> byOp;  // useful FLOPs per op name ("linear", "matmul", ...)
};

FlopCount countFlops(const ir::Graph& g);

}  // namespace txl::driver
