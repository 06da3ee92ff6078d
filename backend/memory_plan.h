// backend/memory_plan.h - offsets for buffers with known live ranges in one arena.
//
// An executor lists every intermediate it needs as a request: its size and
// the steps [first, last] of the schedule during which it must hold its value
// (inclusive: a buffer read by step t and one written by step t are both live
// at t). planMemory() gives each an offset so that two buffers live at a
// common step never share a byte, and reports how good the packing is:
//
//   arenaBytes       the arena's size (end of the highest buffer)
//   noReuseBytes     the sum of all buffers: the arena without any reuse
//   lowerBoundBytes  the most bytes live at any one step; no packing of these
//                    buffers can do better, so arenaBytes / lowerBoundBytes
//                    is the planner's overhead
//
// Sizes are rounded up to `alignment` first (every offset is a multiple of
// it), and the figures above count the rounded sizes.
//
// The planner is "greedy by size": buffers are placed largest first, each at
// the lowest offset where it fits between the already-placed buffers whose
// live ranges overlap its own (ties: the smallest such gap, then the earliest
// step). On transformer graphs, with a few large buffers and many equal ones,
// this lands within a few percent of the lower bound (docs/MEMORY.md).
//
//   MemoryPlan p = planMemory({{"x", 4096, 0, 2}, {"y", 4096, 1, 3}, {"z", 4096, 3, 4}});
//   // x and z share an offset; y sits beside them: arenaBytes == 8192
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace txl::backend {

struct BufferRequest {
  std::string label;  // what the buffer holds, for reports ("linear (node 12)")
  std::size_t bytes = 0;
  std::size_t first = 0;  // first step at which it is live
  std::size_t last = 0;   // last step at which it is live (>= first)
};

struct PlannedBuffer {
  BufferRequest request;
  std::size_t offset = 0;  // bytes from the arena's start
  std::size_t size = 0;    // request.bytes rounded up to the alignment
};

struct MemoryPlan {
  std::vector<PlannedBuffer> buffers;  // in the order of the requests
  std::size_t arenaBytes = 0;
  std::size_t noReuseBytes = 0;
  std::size_t lowerBoundBytes = 0;
};

MemoryPlan planMemory(const std::vector<BufferRequest>& requests, std::size_t alignment = 64);

// The first pair of buffers that are live at a common step and overlap in
// memory, as "label a and label b", or an empty string: a plan's invariant,
// for tests and for the executor's own check.
std::string findConflict(const MemoryPlan& plan);

}  // namespace txl::backend
