// backend/state_layout.h - the recurrent state a segment graph reads and writes.
//
// A graph's memory slots and how each is updated: by mem_read + mem_write
// (the literal form: the plan returns the new memory, the session copies it)
// or by mem_window (the plan appends to the session's window in place). The
// row shape is what one position holds: [batch, d_model] for hidden states,
// [batch, 2·H·D] for cached keys and values.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/graph.h"

namespace txl::backend {

struct SlotLayout {
  std::int64_t slot = 0;
  ir::Shape rowShape;     // the shape of one remembered position
  bool windowed = false;  // updated by a mem_window
  friend bool operator==(const SlotLayout&, const SlotLayout&) = default;
};

// Slots in increasing order. Throws txl::InternalError if a slot is both
// windowed and read or written otherwise.
std::vector<SlotLayout> stateLayout(const ir::Graph& g);

}  // namespace txl::backend
