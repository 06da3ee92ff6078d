// backend/state_layout.cpp - stateLayout().
#include "backend/state_layout.h"

#include <map>

#include "ir/check.h"

namespace txl::backend {

std::vector<SlotLayout> stateLayout(const ir::Graph& g) {
  std::map<std::int64_t, SlotLayout> slots;
  auto note = [&](std::int64_t slot, const ir::TensorType& type, bool windowed) {
    TXL_CHECK(type.rank() >= 1, "memory of rank 0");
    SlotLayout layout{slot, ir::Shape(type.shape.begin() + 1, type.shape.end()), windowed};
    auto [it, fresh] = slots.emplace(slot, layout);
    TXL_CHECK(fresh || it->second == layout, "memory slot " + std::to_string(slot) + " used inconsistently");
  };
  for (ir::Node n : g.nodes()) {
    const ir::OpData& op = g.op(n);
    switch (op.kind) {
      case ir::OpKind::MemRead: note(op.attrs.getInt("slot"), *op.type, false); break;
      case ir::OpKind::MemWrite: note(op.attrs.getInt("slot"), g.type(g.operand(n, 0)), false); break;
      case ir::OpKind::MemWindow: note(op.attrs.getInt("slot"), *op.type, true); break;
      default: break;
    }
  }
  std::vector<SlotLayout> out;
  for (auto& [slot, layout] : slots) out.push_back(layout);
  return out;
}

}  // namespace txl::backend
