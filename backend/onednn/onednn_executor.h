// backend/onednn/onednn_executor.h - the oneDNN executor: a graph lowered to a plan
// of oneDNN primitives and a few own kernels, built once per static shape.
//
// compile() walks the graph in topological order and turns every op into one
// or more steps (a primitive with its argument map, or an own kernel from
// onednn_kernels.h) over buffers allocated at compile time: one arena for the
// intermediates, temporaries and scratchpads (offsets planned by liveness,
// backend/memory_plan.h), constant buffers for
// attribute-only ops (pos_encoding, attn_mask, constant) and for weights that a
// primitive wants in a blocked layout (packed once per executor, i.e. per
// model, and shared by its plans: backend/onednn/packed_weights.h), and the user's
// own weight and input buffers, bound without copying. run() rebinds the input handles, executes
// every step on one stream and returns views of the plan's buffers.
//
//   auto exe = makeOnednnExecutor();
//   auto plan = exe->compile(graph, weights);
//   const TensorMap& out = plan->run({{"tokens", tokens}, {"mem.0", mem0}});
//   for (const StepInfo& s : plan->steps())
//     std::cerr << s.op << " " << s.primitive << " " << s.impl << "\n";
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backend/executor.h"

namespace txl::backend {

// Which steps run on one OpenMP thread (backend/onednn/thread_policy.h):
// Loaded: those estimated under OnednnOptions::serialBelowNs; Idle: those
// under idleSerialBelowNs; Auto: per run, whichever of the two has been
// faster in the latest runs.
enum class ThreadPolicy { Auto, Idle, Loaded };

struct OnednnOptions {
  // Let matmul choose its weight layout (format `any`) for constant weights and
  // reorder them once at compile time; plain `ba` views of the user's [out, in]
  // weights otherwise (no copy, but slower matmuls at small M).
  bool blockedWeights = true;
  // A constant weight larger than this is read in place (plain `ba`) unless
  // its plain pages can be dropped once packed (a file-backed user weight,
  // with releasePackedPlainPages): a blocked copy of a vocabulary-sized
  // output layer held beside the plain one would double the model's resident
  // memory.
  std::size_t maxBlockedWeightBytes = std::size_t(64) << 20;
  // Once a plan is compiled, drop the resident pages of file-backed weights
  // that plans read only packed (backend/onednn/packed_weights.h): the packed copy
  // replaces the plain one in memory, the file still holds it.
  bool releasePackedPlainPages = true;
  // Matmuls with one row per batch index whose B is read along its rows (one
  // generated token's BD and p · V) run on the own kernel of backend/kernels/gemv.h
  // instead of oneDNN's, which is slower on these shapes (docs/LOG.md).
  bool ownGemv = true;
  // A step whose estimated one-thread time is under this many nanoseconds
  // (the larger of its bytes at 20 GB/s and its matrix products at 60 GFLOP/s) is lowered
  // and run on one OpenMP thread. Every parallel step ends at a barrier, and
  // when another process holds a core the team waits there for its thread
  // that lost its time slice: a step this short saves less with the team on
  // a free machine than it loses on a loaded one. 500 µs keeps every
  // benchmark spec and bundled model within 1.5x of one thread beside a CPU
  // hog and leaves the large steps (the matmuls of qlen 64 and up) on the
  // team (docs/PERFORMANCE.md, "Threads on a loaded machine"). 0 runs every
  // step on the team.
  double serialBelowNs = 500000;
  // With ThreadPolicy::Auto, a plan is also lowered with this threshold in
  // place of serialBelowNs (every step longer than about 20 µs on the team,
  // right for an idle machine) and each run takes the variant that has been
  // faster lately (backend/onednn/thread_policy.h).
  double idleSerialBelowNs = 20000;
  // Linears over int8 weights with more than one row quantize their
  // activations per row and run txl:int8_linear:vnni (u8 x s8 pair sums on
  // AVX512-VNNI, backend/kernels/int8_vnni.h) instead of txl:int8_linear's
  // f32 activations, except a linear over a constant input or the embedding
  // (docs/PRECISION.md, "The kernels"). Off: every int8 linear keeps f32
  // activations (for tests comparing the two kernels).
  bool int8Activations = true;
  ThreadPolicy threadPolicy = ThreadPolicy::Auto;
};

// A oneDNN plan. Every query is CompiledGraph's (hasSteps() is true); the
// type remains so a test can check that this executor made the plan.
class OnednnCompiledGraph : public CompiledGraph {};

std::unique_ptr<Executor> makeOnednnExecutor(const OnednnOptions& options = {});

}  // namespace txl::backend
