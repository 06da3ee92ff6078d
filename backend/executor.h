// backend/executor.h - the interface both executors implement.
//
// An Executor compiles a verified graph at its static shapes, with its
// weights bound, into a CompiledGraph: an execution plan built once and run
// for every segment of that shape.
//
// Names: graph inputs are passed by their `name` attribute; the memory a
// mem_read of slot s reads is passed as "mem.<s>". Outputs are returned by
// their `name`; what a mem_write of slot s writes comes back as "mem.<s>".
// A mem_window of slot s is passed "mem.<s>": the caller's state window of
// the op's type [mlen + qlen, ...] whose first mlen rows hold the memory; the
// plan writes the new rows into it in place (the caller then keeps its last
// `keep` rows as the memory, without moving anything).
// Weights are looked up by the `name` of each weight op.
//
//   auto exe = makeReferenceExecutor();
//   auto plan = exe->compile(graph, weights);
//   const TensorMap& out = plan->run({{"tokens", tokens}, {"mem.0", mem0}});
//   out.at("hidden");   // valid until the next run()
//
// A plan also answers what it is made of, for reports, profiles and tests,
// without the caller knowing which executor made it:
//
//   if (plan->hasSteps())
//     for (const StepInfo& s : plan->steps()) std::cerr << s.op << " " << s.impl << "\n";
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backend/memory_plan.h"
#include "ir/graph.h"
#include "ir/segment_abi.h"
#include "ir/tensor.h"

namespace txl::backend {

using ir::TensorMap;

// One step of a plan, as a profiler or a test sees it.
struct StepInfo {
  std::string op;          // the IR op name ("linear")
  std::uint64_t node = 0;  // the node's id
  std::string primitive;   // "matmul", "reorder", ... or "kernel" for an own kernel
  std::string impl;        // impl_info_str() ("brg:avx512_core"), or the own kernel's name
  bool serial = false;     // runs on one thread however many the plan's team has
  // False for a step of one of a plan's two thread variants (the oneDNN
  // executor's ThreadPolicy::Auto): a run takes it or its twin, not both.
  bool everyRun = true;
};

class CompiledGraph {
 public:
  virtual ~CompiledGraph() = default;
  // Runs the plan. Inputs must have exactly the graph's declared types
  // (txl::Error otherwise). The returned tensors are owned by the plan and
  // stay valid until the next run(); one plan runs on one thread at a time.
  virtual const TensorMap& run(const TensorMap& inputs) = 0;

  // --- What the plan is made of ---
  // True for a plan of steps over a planned arena (the oneDNN executor's),
  // which fills the queries below. A plan without steps (the reference
  // interpreter walks the graph on every run) keeps their defaults: no
  // steps, an empty arena, no constants, nothing to profile.
  virtual bool hasSteps() const { return false; }
  // Every step in execution order (compile-time weight reorders are not steps).
  virtual const std::vector<StepInfo>& steps() const;
  // Bytes of the arena: intermediates, temporaries and scratchpads.
  virtual std::size_t arenaBytes() const { return 0; }
  // The arena's plan: every buffer's offset and live range, and its figures.
  virtual const MemoryPlan& memoryPlan() const;
  // Bytes of the plan's constant buffers (attribute-only ops, packed weights).
  virtual std::size_t constantBytes() const { return 0; }
  // The part of constantBytes that is a second layout of a constant whose
  // plain copy stays (the position tables packed for the attention kernels,
  // beside the folded table other plans read in place): memory beyond the
  // weights and folded constants.
  virtual std::size_t copiedConstantBytes() const { return 0; }
  // Per-step timing, off by default (run() then pays nothing for it): when on,
  // run() waits after every step and adds its wall time to stepSeconds()[i].
  virtual void setProfiling(bool /*on*/) {}
  virtual const std::vector<double>& stepSeconds() const;
};

class Executor {
 public:
  virtual ~Executor() = default;
  virtual std::string name() const = 0;
  // `weights` must outlive the returned plan. Throws txl::Error when a weight
  // is missing or has the wrong type.
  virtual std::unique_ptr<CompiledGraph> compile(const ir::Graph& graph, const TensorMap& weights) = 0;
};

// Checks that `inputs` holds a tensor of the declared type for every input
// and mem_read of `graph`; throws txl::Error naming the first mismatch.
void checkInputs(const ir::Graph& graph, const TensorMap& inputs);
// Checks that `weights` holds every weight of `graph` with its declared type.
void checkWeights(const ir::Graph& graph, const TensorMap& weights);

// The name under which a mem_read / mem_write of `slot` appears in TensorMaps (ir/segment_abi.h).
inline std::string memName(std::int64_t slot) { return ir::memoryName(slot); }

}  // namespace txl::backend
