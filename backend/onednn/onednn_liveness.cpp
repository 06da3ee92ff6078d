// backend/onednn/onednn_liveness.cpp - phase 2 of the oneDNN plan (onednn_phases.h):
// how long every arena value must hold its contents.
//
// An aliased node (a reshape, a slice or permute viewed in place, a sink of
// an arena value) shares its operand's arena value (PlacedValue::root), so a
// read of the alias is a read of that value: the value lives from its own
// step to the last step reading it or any alias of it. What a sink returns
// is read after the plan ran, so its value lives to the last step.
#include <algorithm>

#include "backend/onednn/onednn_phases.h"

namespace txl::backend::onednn {

void extendLiveness(const ir::Graph& g, const std::vector<ir::Node>& order, const Placement& placement,
                    std::vector<ArenaValue>& values) {
  const std::size_t kForever = order.empty() ? 0 : order.size() - 1;  // results live to the last step
  for (std::size_t t = 0; t < order.size(); ++t) {
    const ir::Node n = order[t];
    for (ir::Node o : g.operands(n))
      if (const int r = placement.at(o).root; r >= 0) values[r].request.last = std::max(values[r].request.last, t);
    const ir::OpKind kind = g.kind(n);
    if (kind == ir::OpKind::Output || kind == ir::OpKind::MemWrite)
      if (const int r = placement.at(n).root; r >= 0) values[r].request.last = kForever;
  }
}

}  // namespace txl::backend::onednn
