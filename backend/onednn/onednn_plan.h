// backend/onednn/onednn_plan.h - the execution plan of the oneDNN executor: its
// buffers, the views of values in them, the steps and the late bindings
// (internal to backend/).
//
// Every value is a dense row-major tensor at a byte offset in a buffer. A
// buffer is one value in the arena (an intermediate, a node's temporary or a
// primitive's scratchpad; its address is known once the whole plan is
// lowered and the arena planned), a constant allocation, a user input
// (rebound on every run) or a user weight (bound once). dnnl::memory objects
// over arena and input buffers are listed in `bindings` and bound late.
// The phases that fill a plan are in backend/onednn/onednn_phases.h.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "backend/executor.h"
#include "backend/memory_plan.h"
#include "backend/onednn/packed_weights.h"
#include "backend/onednn/thread_policy.h"
#include "ir/tensor.h"

namespace txl::backend::onednn {

enum class BufferKind { Arena, Constant, Input, Weight };

struct Buffer {
  BufferKind kind = BufferKind::Arena;
  void* ptr = nullptr;                 // Input: set on every run; Arena: set once the arena is planned
  const ir::Tensor* weight = nullptr;  // Weight: the user's tensor (outlives the plan)
};

// An arena buffer's request. A value computed in place over an operand's
// value (shareInPlace, onednn_phases.h) shares that one's memory: `sameAs` >= 0.
struct ArenaValue {
  int buffer = -1;
  BufferRequest request;
  int sameAs = -1;
};

// A tensor at `offset` bytes into buffer `buffer`: dense row-major, or with
// explicit `strides` (elements) for a slice viewed in place because its only
// reader is a permute, or a permute viewed in place because its only reader
// is a small-M matmul (placeValues, onednn_phases.h); only reshape, permute,
// matmul and rel_attention accept one.
struct View {
  int buffer = -1;
  std::size_t offset = 0;
  ir::TensorType type;
  std::vector<std::int64_t> strides = {};  // empty: dense
  // Set on a converted constant (a convert of a weight that only matmuls
  // read): the bytes are still in this dtype, `type` is what the readers
  // see; they convert it as they pack it (Lowering::constantWeights).
  std::optional<ir::DType> storedAs = {};
  // Set on a quantized constant (a quantize of a dense f32 constant that only
  // linear weights read): the bytes are the f32 weight; its readers quantize
  // it into int8 rows as they pack it (Lowering::int8Weights).
  bool quantized = false;
};

struct Step {
  std::optional<dnnl::primitive> primitive;
  std::unordered_map<int, dnnl::memory> args;
  std::function<void()> kernel;  // an own kernel when `primitive` is empty
  bool serial = false;           // lowered for, and run on, one OpenMP thread (OnednnOptions::serialBelowNs)
  LoadSet loads = kEveryLoad;    // the thread variants whose runs take it (backend/onednn/thread_policy.h)
};

struct Binding {
  dnnl::memory mem;
  int buffer;
  std::size_t offset;
};

struct PlanInput {
  std::string name;
  ir::TensorType type;
  int buffer;
};

struct Plan {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  std::vector<Buffer> buffers;
  std::vector<std::shared_ptr<void>> storage;  // owned allocations
  std::vector<std::shared_ptr<const PackedWeight>>
      packs;                           // packed constant weights, shared with the model's other plans
  std::vector<PackedRows> packedRows;  // user-weight rows read packed (embedding lookups read tied rows there)
  std::shared_ptr<const void> alive = std::make_shared<int>(0);  // expires with the plan (PackedWeights' readers)
  std::vector<Step> steps;
  std::vector<StepInfo> info;
  std::vector<Binding> bindings;  // memories over Input and Arena buffers (Input ones first after compile)
  std::size_t inputBindings = 0;  // how many of `bindings` are over inputs
  std::vector<PlanInput> inputs;
  ir::TensorMap outputs;
  std::vector<ArenaValue> arenaValues;
  MemoryPlan memory;  // offsets of the arena values that own their memory
  std::size_t constantBytes = 0;

  std::size_t copiedConstantBytes = 0;  // of constantBytes: second layouts of constants kept plain too

  // Counts a constant shared with other plans (a pack, int8 rows) in
  // constantBytes once, however many steps (both thread variants) read it;
  // a copy (of a constant whose plain form stays) in copiedConstantBytes too.
  void countShared(const void* id, std::size_t bytes, bool copy = false) {
    if (std::find(counted.begin(), counted.end(), id) != counted.end()) return;
    counted.push_back(id);
    constantBytes += bytes;
    if (copy) copiedConstantBytes += bytes;
  }
  std::vector<const void*> counted;  // countShared's ids

  char* ptr(const View& v) const { return static_cast<char*>(buffers[v.buffer].ptr) + v.offset; }
  int addBuffer(BufferKind kind, void* ptr = nullptr) {
    buffers.push_back({kind, ptr});
    return static_cast<int>(buffers.size()) - 1;
  }
  // A fresh zeroed 64-byte aligned allocation owned by the plan.
  void* allocate(std::size_t bytes);
  // A new arena buffer of `bytes`, live during steps [first, last] of the schedule.
  int addArenaValue(std::string label, std::size_t bytes, std::size_t first, std::size_t last) {
    const int b = addBuffer(BufferKind::Arena);
    arenaValues.push_back({b, {std::move(label), bytes, first, last}, -1});
    return b;
  }
};

}  // namespace txl::backend::onednn
