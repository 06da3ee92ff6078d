// backend/onednn/onednn_arena.cpp - phase 5 of the oneDNN plan (onednn_phases.h):
// the arena's offsets, its one allocation, and every address bound.
//
// Only the arena values that own their memory (sameAs < 0) are requests to
// planMemory() (backend/memory_plan.h, greedy by size, 64-byte aligned); a
// value computed in place gets its owner's address. The plan is checked with
// findConflict() before anything is bound: an overlap of two live values is
// an internal error, never a wrong result. The arena is allocated once, and
// every dnnl::memory over an arena buffer gets its final handle here; those
// over input buffers are moved to the front of `bindings` and rebound by
// every run.
#include <algorithm>

#include "backend/onednn/onednn_phases.h"
#include "ir/check.h"

namespace txl::backend::onednn {

void placeArena(Plan& plan, const PlanOutputs& outputs) {
  const std::vector<ArenaValue>& values = plan.arenaValues;
  std::vector<BufferRequest> requests;
  std::vector<int> slot(values.size(), -1);  // an owner's index in the memory plan
  for (std::size_t i = 0; i < values.size(); ++i)
    if (values[i].sameAs < 0) {
      slot[i] = static_cast<int>(requests.size());
      requests.push_back(values[i].request);
    }
  plan.memory = planMemory(requests);
  if (std::string clash = findConflict(plan.memory); !clash.empty())
    throw InternalError("arena plan overlaps live buffers " + clash);
  char* arena = static_cast<char*>(plan.allocate(plan.memory.arenaBytes));
  for (std::size_t i = 0; i < values.size(); ++i)
    plan.buffers[values[i].buffer].ptr =
        arena + plan.memory.buffers[slot[memoryOwner(values, static_cast<int>(i))]].offset;
  for (const auto& [name, view] : outputs) plan.outputs[name] = ir::Tensor(view.type, plan.ptr(view), nullptr);
  std::stable_partition(plan.bindings.begin(), plan.bindings.end(),
                        [&](const Binding& b) { return plan.buffers[b.buffer].kind == BufferKind::Input; });
  for (const Binding& b : plan.bindings) {
    if (plan.buffers[b.buffer].kind == BufferKind::Input) ++plan.inputBindings;
    else b.mem.set_data_handle(static_cast<char*>(plan.buffers[b.buffer].ptr) + b.offset);
  }
}

}  // namespace txl::backend::onednn
