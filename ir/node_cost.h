// ir/node_cost.h - what one node costs: the FLOPs and bytes of its op as
// docs/PASSES.md defines them. The driver sums them into graph statistics;
// the backend estimates from them whether a step is worth a thread team.
//
//   double f = nodeFlops(g, n), b = nodeBytes(g, n);
#pragma once

#include "ir/graph.h"

namespace txl::ir {

// 2·M·N·K of a matrix product (linear, fused_linear, matmul); 0 for any other op.
double matrixProductFlops(const Graph& g, Node n);

// FLOPs and bytes of one node as docs/PASSES.md defines them: a matrix
// product's plus its fused element-wise epilogue, and the element-wise,
// normalization and softmax costs.
double nodeFlops(const Graph& g, Node n);
double nodeBytes(const Graph& g, Node n);

}  // namespace txl::ir
