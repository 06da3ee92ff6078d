// backend/onednn/onednn_executor.cpp - compile a graph into a oneDNN plan; run it.
//
// compile() runs the phases of backend/onednn/onednn_phases.h in order: placement,
// liveness, in place, lowering, arena. run() binds the input handles,
// executes the steps of the thread variant ThreadChoice picks
// (backend/onednn/thread_policy.h) on one stream, waits, and tells the
// choice how long it took; a serial step runs with OpenMP's thread count set
// to 1 (OnednnOptions::serialBelowNs).
#include "backend/onednn/onednn_executor.h"

#include <chrono>

#include <omp.h>

#include "backend/library_calls.h"
#include "backend/onednn/onednn_lowering.h"
#include "backend/onednn/onednn_phases.h"
#include "backend/onednn/thread_policy.h"
#include "ir/check.h"

namespace txl::backend {

namespace {

using onednn::Plan;

// Switches OpenMP's thread count between the team's and 1 as the steps ask,
// and restores the team's on destruction (also when a step throws).
class TeamSwitch {
 public:
  void before(const onednn::Step& s) {
    if (s.serial == serial_ || team_ == 1) return;
    omp_set_num_threads(s.serial ? 1 : team_);
    serial_ = s.serial;
  }
  ~TeamSwitch() {
    if (serial_) omp_set_num_threads(team_);
  }

 private:
  int team_ = omp_get_max_threads();
  bool serial_ = false;
};

class OnednnPlan final : public OnednnCompiledGraph {
 public:
  OnednnPlan(const ir::Graph& graph, const TensorMap& weights, const OnednnOptions& options,
             onednn::PackedWeights& packs)
      : threads_(options.threadPolicy == ThreadPolicy::Auto,
                 options.threadPolicy == ThreadPolicy::Idle ? onednn::Load::Idle : onednn::Load::Loaded) {
    compile(graph, weights, options, packs);
  }
  const TensorMap& run(const TensorMap& inputs) override;
  bool hasSteps() const override { return true; }
  const std::vector<StepInfo>& steps() const override { return plan_.info; }
  std::size_t arenaBytes() const override { return plan_.memory.arenaBytes; }
  const MemoryPlan& memoryPlan() const override { return plan_.memory; }
  std::size_t constantBytes() const override { return plan_.constantBytes; }
  std::size_t copiedConstantBytes() const override { return plan_.copiedConstantBytes; }
  void setProfiling(bool on) override {
    profiling_ = on;
    stepSeconds_.assign(plan_.steps.size(), 0.0);
  }
  const std::vector<double>& stepSeconds() const override { return stepSeconds_; }

 private:
  void compile(const ir::Graph& graph, const TensorMap& weights, const OnednnOptions& options,
               onednn::PackedWeights& packs);
  void execute(onednn::Step& s);
  void runProfiled(std::size_t& i, TeamSwitch& team, onednn::LoadSet variant);
  Plan plan_;
  onednn::ThreadChoice threads_;
  bool profiling_ = false;
  std::vector<double> stepSeconds_;
};

void OnednnPlan::compile(const ir::Graph& g, const TensorMap& weights, const OnednnOptions& options,
                         onednn::PackedWeights& packs) {
  checkWeights(g, weights);
  const std::vector<ir::Node> order = g.topologicalOrder();
  const onednn::Placement placement = onednn::placeValues(g, order, weights, plan_);
  onednn::extendLiveness(g, order, placement, plan_.arenaValues);
  onednn::shareInPlace(g, order, placement, plan_.arenaValues);
  const onednn::PlanOutputs outputs = onednn::lowerGraph(plan_, g, order, placement, options, packs);
  // Before the arena is allocated: the pages of weights this plan reads only packed go first.
  if (options.releasePackedPlainPages) packs.releasePlainPages();
  onednn::placeArena(plan_, outputs);
}

const TensorMap& OnednnPlan::run(const TensorMap& inputs) {
  for (const onednn::PlanInput& in : plan_.inputs) {
    auto it = inputs.find(in.name);
    if (it == inputs.end()) throw Error("input '" + in.name + "' is missing");
    if (it->second.type() != in.type)
      throw Error("input '" + in.name + "': expected " + in.type.str() + ", got " + it->second.type().str());
    plan_.buffers[in.buffer].ptr = const_cast<void*>(it->second.raw());
  }
  const auto t0 = std::chrono::steady_clock::now();
  const onednn::Load load = threads_.next();
  const onednn::LoadSet variant = onednn::loadBit(load);
  std::size_t i = 0;
  try {
    for (std::size_t b = 0; b < plan_.inputBindings; ++b) {
      const onednn::Binding& bind = plan_.bindings[b];
      LibraryCall call;
      bind.mem.set_data_handle(static_cast<char*>(plan_.buffers[bind.buffer].ptr) + bind.offset);
    }
    TeamSwitch team;
    if (profiling_) runProfiled(i, team, variant);
    for (; i < plan_.steps.size(); ++i) {
      if (!(plan_.steps[i].loads & variant)) continue;
      team.before(plan_.steps[i]);
      execute(plan_.steps[i]);
    }
    LibraryCall call;
    plan_.stream.wait();
    threads_.observe(load, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  } catch (const dnnl::error& e) {
    std::string where = i < plan_.info.size() ? plan_.info[i].op + " (node " + std::to_string(plan_.info[i].node) + ")"
                                              : std::string("input binding");
    throw InternalError("oneDNN execution of " + where + ": " + e.what());
  }
  return plan_.outputs;
}

// A primitive is enqueued on the stream; an own kernel runs once the stream
// has drained.
void OnednnPlan::execute(onednn::Step& s) {
  if (s.primitive) {
    LibraryCall call;
    s.primitive->execute(plan_.stream, s.args);
  } else {
    {
      LibraryCall call;
      plan_.stream.wait();
    }
    s.kernel();
  }
}

// run()'s loop with a wait and a clock reading around every step.
void OnednnPlan::runProfiled(std::size_t& i, TeamSwitch& team, onednn::LoadSet variant) {
  plan_.stream.wait();
  for (; i < plan_.steps.size(); ++i) {
    if (!(plan_.steps[i].loads & variant)) continue;
    team.before(plan_.steps[i]);
    const auto t0 = std::chrono::steady_clock::now();
    execute(plan_.steps[i]);
    plan_.stream.wait();
    stepSeconds_[i] += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
}

class OnednnExecutor final : public Executor {
 public:
  explicit OnednnExecutor(const OnednnOptions& options) : options_(options), packs_(options.releasePackedPlainPages) {}
  std::string name() const override { return "onednn"; }
  std::unique_ptr<CompiledGraph> compile(const ir::Graph& graph, const TensorMap& weights) override {
    try {
      return std::make_unique<OnednnPlan>(graph, weights, options_, packs_);
    } catch (const dnnl::error& e) {
      throw InternalError(std::string("oneDNN: ") + e.what());
    }
  }

 private:
  OnednnOptions options_;
  onednn::PackedWeights packs_;  // shared by every plan this executor compiles
};

}  // namespace

std::unique_ptr<Executor> makeOnednnExecutor(const OnednnOptions& options) {
  return std::make_unique<OnednnExecutor>(options);
}

}  // namespace txl::backend
