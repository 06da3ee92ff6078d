// backend/state_layout.h - the recurrent state a segment graph reads and writes.
//
// A graph's memory slots and how each is updated: by mem_read + mem_write
// (the literal form: the plan returns the new memory, the session copies it)
// or by mem_window (the plan appends to the session's window in place). The
// slots are part of the segment ABI (ir/segment_abi.h), which defines them.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "ir/segment_abi.h"

namespace txl::backend {

using SlotLayout = ir::MemorySlot;

// Slots in increasing order (ir::memorySlots).
inline std::vector<SlotLayout> stateLayout(const ir::Graph& g) { return ir::memorySlots(g); }

// Rows of a slot's state window for segments of up to `qlen` tokens:
// 2·mem_len + qlen, none without a memory. The memory (at most mem_len rows)
// has room for a warm-up segment's padding before it (at most mem_len rows)
// and for the segment behind it; moving it to the front once every mem_len /
// qlen segments then costs O(qlen) rows per segment (backend/session.h).
inline std::int64_t stateWindowRows(std::int64_t memLen, std::int64_t qlen) {
  return memLen > 0 ? 2 * memLen + std::max<std::int64_t>(qlen, 1) : 0;
}

}  // namespace txl::backend
