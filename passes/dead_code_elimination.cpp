// passes/dead_code_elimination.cpp - mark from the sinks, sweep the rest.
//
// Algorithm:
//   1. Every sink (output, mem_write) and every mem_window (it writes the
//      slot's state) is live.
//   2. Walking backwards from the live set, every operand of a live op is live.
//   3. Erase the dead ops in reverse topological order, so each has no users
//      when it goes.
// Graph inputs are kept even when unused: they are the graph's signature,
// which callers bind by name.
#include "passes/dead_code_elimination.h"

#include <set>

namespace txl::passes {

ir::PassResult DeadCodeElimination::run(ir::Graph& g, ir::PassContext&) {
  auto order = g.topologicalOrder();
  std::set<ir::Node> live;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    ir::OpKind kind = g.kind(*it);
    bool root = kind == ir::OpKind::Output || kind == ir::OpKind::MemWrite || kind == ir::OpKind::MemWindow ||
                kind == ir::OpKind::Input;
    if (root || live.count(*it)) {
      live.insert(*it);
      for (ir::Node o : g.operands(*it)) live.insert(o);
    }
  }
  bool changed = false;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    if (live.count(*it)) continue;
    g.erase(*it);
    changed = true;
  }
  return ir::PassResult::changedIf(changed);
}

}  // namespace txl::passes
