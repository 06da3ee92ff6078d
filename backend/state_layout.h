// backend/state_layout.h - the recurrent state a segment graph reads and writes.
//
// A graph's memory slots and how each is updated: by mem_read + mem_write
// (the literal form: the plan returns the new memory, the session copies it)
// or by mem_window (the plan appends to the session's window in place). The
// slots are part of the segment ABI (ir/segment_abi.h), which defines them.
#pragma once

#include <vector>

#include "ir/segment_abi.h"

namespace txl::backend {

using SlotLayout = ir::MemorySlot;

// Slots in increasing order (ir::memorySlots).
inline std::vector<SlotLayout> stateLayout(const ir::Graph& g) { return ir::memorySlots(g); }

}  // namespace txl::backend
