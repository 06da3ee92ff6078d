// backend/onednn_executor.h - the oneDNN executor: a graph lowered to a plan
// of oneDNN primitives and a few own kernels, built once per static shape.
//
// compile() walks the graph in topological order and turns every op into one
// or more steps (a primitive with its argument map, or an own kernel from
// onednn_kernels.h) over buffers allocated at compile time: one arena for the
// intermediates, temporaries and scratchpads (offsets planned by liveness,
// backend/memory_plan.h), constant buffers for
// attribute-only ops (pos_encoding, attn_mask, constant) and for weights that a
// primitive wants in a blocked layout (packed once per executor, i.e. per
// model, and shared by its plans: backend/packed_weights.h), and the user's
// own weight and input buffers, bound without copying. run() rebinds the input handles, executes
// every step on one stream and returns views of the plan's buffers.
//
//   auto exe = makeOnednnExecutor();
//   auto plan = exe->compile(graph, weights);
//   const TensorMap& out = plan->run({{"tokens", tokens}, {"mem.0", mem0}});
//   for (const StepInfo& s : dynamic_cast<OnednnCompiledGraph&>(*plan).steps())
//     std::cerr << s.op << " " << s.primitive << " " << s.impl << "\n";
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backend/executor.h"
#include "backend/memory_plan.h"

namespace txl::backend {

struct OnednnOptions {
  // Let matmul choose its weight layout (format `any`) for constant weights and
  // reorder them once at compile time; plain `ba` views of the user's [out, in]
  // weights otherwise (no copy, but measured 2-4x slower at small M).
  bool blockedWeights = true;
  // A constant weight larger than this is read in place (plain `ba`) unless
  // its plain pages can be dropped once packed (a file-backed user weight,
  // with releasePackedPlainPages): a blocked copy of a vocabulary-sized
  // output layer held beside the plain one (WT103: 439 MB) would double the
  // model's resident memory.
  std::size_t maxBlockedWeightBytes = std::size_t(64) << 20;
  // Once a plan is compiled, drop the resident pages of file-backed weights
  // that plans read only packed (backend/packed_weights.h): the packed copy
  // replaces the plain one in memory, the file still holds it.
  bool releasePackedPlainPages = true;
  // Matmuls with one row per batch index whose B is read along its rows (one
  // generated token's BD and p · V) run on the own kernel of backend/gemv.h
  // instead of oneDNN's (1.2-1.3x slower on these shapes).
  bool ownGemv = true;
};

// One step of the plan, as a profiler or a test sees it.
struct StepInfo {
  std::string op;         // the IR op name ("linear")
  std::uint64_t node = 0; // the node's id
  std::string primitive;  // "matmul", "reorder", ... or "kernel" for an own kernel
  std::string impl;       // impl_info_str() ("brg:avx512_core"), or the own kernel's name
};

class OnednnCompiledGraph : public CompiledGraph {
 public:
  // Every step in execution order (compile-time weight reorders are not steps).
  virtual const std::vector<StepInfo>& steps() const = 0;
  // Bytes of the arena: intermediates, temporaries and scratchpads.
  virtual std::size_t arenaBytes() const = 0;
  // The arena's plan: every buffer's offset and live range, and its figures.
  virtual const MemoryPlan& memoryPlan() const = 0;
  virtual std::size_t constantBytes() const = 0;
  // Per-step timing, off by default (run() then pays nothing for it): when on,
  // run() waits after every step and adds its wall time to stepSeconds()[i].
  virtual void setProfiling(bool on) = 0;
  virtual const std::vector<double>& stepSeconds() const = 0;
};

std::unique_ptr<Executor> makeOnednnExecutor(const OnednnOptions& options = {});

}  // namespace txl::backend
