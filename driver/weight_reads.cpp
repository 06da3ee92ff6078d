// driver/weight_reads.cpp - rowReadWeights() (weight_reads.h).
#include "driver/weight_reads.h"

#include <vector>

#include "passes/rewrite_utils.h"

namespace txl::driver {

std::set<std::string> rowReadWeights(const ir::Graph& g) {
  std::set<std::string> out;
  for (ir::Node w : g.nodesOfKind(ir::OpKind::Weight)) {
    // Follow w's constant values to their first readers that run per step.
    bool whole = false, lookedUp = false;
    std::vector<ir::Node> values{w};
    std::set<ir::Node> seen{w};
    while (!values.empty() && !whole) {
      const ir::Node v = values.back();
      values.pop_back();
      for (ir::Node u : g.users(v)) {
        if (passes::rw::isConstant(g, u)) {
          if (seen.insert(u).second) values.push_back(u);
        } else if (g.kind(u) == ir::OpKind::Embedding && g.operand(u, 0) == v && g.operand(u, 1) != v) {
          lookedUp = true;
        } else {
          whole = true;
          break;
        }
      }
    }
    if (lookedUp && !whole) out.insert(g.op(w).attrs.getString("name"));
  }
  return out;
}

}  // namespace txl::driver
