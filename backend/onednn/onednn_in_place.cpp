// backend/onednn/onednn_in_place.cpp - phase 3 of the oneDNN plan (onednn_phases.h):
// an elementwise-shaped node computes into its operand's memory when that
// operand's value dies at it.
//
// A node reads element i of its in-place operand only to write element i of
// its result (binary, eltwise, layer_norm, softmax, masked_fill; rel_scores
// over AC), so the two may share memory once nothing else reads the operand
// afterwards. Values that share form a group owned by the first one
// (ArenaValue::sameAs points towards it); the group's live range is the
// union of its members' and its label names every member. Only the owners
// are requests to the arena planner.
//
// Sharing is refused when the operand's value is not viewed whole and dense
// (a slice of it, a strided view), when another operand of the node reads
// the same group (it would see elements already overwritten), and when the
// group is still read after the node's step.
#include "backend/onednn/onednn_phases.h"

namespace txl::backend::onednn {

int inPlaceOperand(const ir::Graph& g, ir::Node n) {
  switch (g.kind(n)) {
    case ir::OpKind::Add:
    case ir::OpKind::Sub:
    case ir::OpKind::Mul:  // the operand the lowering makes src0
      if (g.type(g.operand(n, 0)) == g.type(n)) return 0;
      return g.type(n).dtype == ir::DType::F32 && g.type(g.operand(n, 1)) == g.type(n) ? 1 : -1;
    case ir::OpKind::Scale:
    case ir::OpKind::Relu:
    case ir::OpKind::LayerNorm:
    case ir::OpKind::Softmax:
    case ir::OpKind::LogSoftmax:
    case ir::OpKind::MaskedFill:
      return g.type(g.operand(n, 0)) == g.type(n) ? 0 : -1;
    case ir::OpKind::RelScores:  // AC: row element j is read only to write element j (kernels::relScores)
      return g.type(g.operand(n, 0)) == g.type(n) ? 0 : -1;
    default:
      return -1;
  }
}

int memoryOwner(const std::vector<ArenaValue>& values, int v) {
  while (values[v].sameAs >= 0) v = values[v].sameAs;
  return v;
}

void shareInPlace(const ir::Graph& g, const std::vector<ir::Node>& order, const Placement& placement,
                  std::vector<ArenaValue>& values) {
  for (std::size_t t = 0; t < order.size(); ++t) {
    const ir::Node n = order[t];
    const PlacedValue& np = placement.at(n);
    const int k = np.root >= 0 && !np.aliased ? inPlaceOperand(g, n) : -1;
    if (k < 0) continue;
    const ir::Node x = g.operand(n, k);
    const PlacedValue& xp = placement.at(x);
    if (xp.root < 0) continue;
    const int r = memoryOwner(values, xp.root);
    const View& xv = xp.view;
    const bool whole = xv.offset == 0 && xv.strides.empty() && xv.type.bytes() == values[r].request.bytes &&
                       values[xp.root].buffer == xv.buffer;
    bool shared = false;
    for (std::size_t i = 0; i < g.operands(n).size(); ++i)
      if (int ri = placement.at(g.operand(n, i)).root; i != std::size_t(k) && ri >= 0 && memoryOwner(values, ri) == r)
        shared = true;
    if (!whole || shared || values[r].request.last != t) continue;
    ArenaValue& v = values[np.root];
    v.sameAs = r;
    values[r].request.last = v.request.last;
    values[r].request.label += ", " + v.request.label + " in place";
  }
}

}  // namespace txl::backend::onednn
