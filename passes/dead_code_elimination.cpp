// passes/dead_code_elimination.cpp - erase what no output, memory write or input needs.
//
// Algorithm: visit the nodes in reverse topological order and erase each
// that isTriviallyDead (passes/rewriter.h: unused, and Pure or only reading
// state). A node's users are visited before it, so when it is reached it
// has users exactly when one of them is live: one visit per node erases
// every value that reaches no sink. Sinks (output, mem_write) and mem_window
// (it writes the slot's state) are never dead; graph inputs are kept even
// when unused: they are the graph's signature, which callers bind by name.
#include "passes/dead_code_elimination.h"

#include "passes/rewriter.h"

namespace txl::passes {

ir::PassResult DeadCodeElimination::run(ir::Graph& g, ir::PassContext& ctx) {
  auto order = g.topologicalOrder();
  Rewriter rewriter(g, ctx, name());
  const bool changed = rewriter.run({order.rbegin(), order.rend()}, [&](ir::Node n) {
    if (!isTriviallyDead(g, n)) return false;
    rewriter.erase(n);
    return true;
  });
  return ir::PassResult::changedIf(changed);
}

}  // namespace txl::passes
