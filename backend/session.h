// backend/session.h - a compiled model and the sessions that stream segments through it.
//
// A CompiledModel holds what every stream of a model shares: the weights, an
// executor, and a factory that builds (and optimizes) the graph of one
// segment for a given (qlen, mlen). It is immutable once made, so any number
// of Sessions, on any threads, can share it.
//
// A Session owns the per-stream state of `batch` streams: the recurrent
// memory of every slot (slot 0 the embedding, slot l the output of layer l-1,
// slot n_layer the final hidden state, as the reference keeps them). Each
// forward() runs one segment and advances the memory exactly as the
// reference: empty at the start, afterwards the last min(mem_len, mlen + qlen)
// positions. Plans for the shapes a stream meets (warm-up segments, a shorter
// last segment) are built on first use and cached in the session.
//
//   auto model = std::make_shared<CompiledModel>(info, weights, makeReferenceExecutor(), factory);
//   Session s(model);
//   auto out = s.forward(tokens, &targets);   // tokens i64[qlen, batch]
//   out.nll->data<float>();                   // valid until the next forward()
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <tuple>
#include <vector>

#include "backend/constant_folding.h"
#include "backend/executor.h"

namespace txl::backend {

// What a session must know of the model, independent of how it was specified.
struct ModelInfo {
  std::int64_t nLayer = 0;
  std::int64_t dModel = 0;
  std::int64_t nToken = 0;
  std::int64_t memLen = 0;  // memory kept after each segment
  std::int64_t batch = 1;
};

// What one segment graph computes besides the hidden state.
struct SegmentOutputs {
  bool logprob = true;
  bool nll = true;
  friend auto operator<=>(const SegmentOutputs&, const SegmentOutputs&) = default;
};

// Builds the (optimized) graph of one segment: qlen tokens against mlen
// remembered positions. Must be safe to call from several threads.
using GraphFactory = std::function<ir::Graph(std::int64_t qlen, std::int64_t mlen, SegmentOutputs outputs)>;

class CompiledModel {
 public:
  CompiledModel(ModelInfo info, TensorMap weights, std::shared_ptr<Executor> executor, GraphFactory factory)
      : info_(info), weights_(std::move(weights)), executor_(std::move(executor)), factory_(std::move(factory)) {}

  const ModelInfo& info() const { return info_; }
  const TensorMap& weights() const { return weights_; }
  Executor& executor() const { return *executor_; }
  ir::Graph buildGraph(std::int64_t qlen, std::int64_t mlen, SegmentOutputs outputs) const {
    return factory_(qlen, mlen, outputs);
  }
  // Constant values (folded at plan-compile time) shared by every plan.
  ConstantCache& constants() const { return constants_; }

 private:
  ModelInfo info_;
  TensorMap weights_;
  std::shared_ptr<Executor> executor_;
  GraphFactory factory_;
  mutable ConstantCache constants_;
};

struct ForwardResult {
  const ir::Tensor* hidden = nullptr;   // f32[qlen, batch, d_model]
  const ir::Tensor* logprob = nullptr;  // f32[qlen, batch, n_token], when asked for
  const ir::Tensor* nll = nullptr;      // f32[qlen, batch], when targets were given
};

class Session {
 public:
  explicit Session(std::shared_ptr<const CompiledModel> model);

  // Runs one segment. tokens and targets are i64[qlen, batch]; ids must be in
  // [0, n_token) (txl::Error otherwise). The result views buffers of the
  // session, valid until the next forward().
  ForwardResult forward(const ir::Tensor& tokens, const ir::Tensor* targets = nullptr, bool logprob = true);

  // Forgets the memory: the next segment starts a fresh stream.
  void reset();
  std::int64_t mlen() const { return mlen_; }
  const ir::Tensor memory(std::int64_t slot) const;  // f32[mlen, batch, d_model]

  // The state as named tensors ("mem.<slot>"), and back. loadState checks
  // shapes against the model (txl::Error naming the tensor otherwise).
  TensorMap saveState() const;
  void loadState(const TensorMap& state);

  // Plans built so far (one per distinct segment shape met).
  std::size_t planCount() const { return plans_.size(); }
  // The plan the last forward() ran (null before the first), for profilers.
  CompiledGraph* lastPlan() const { return lastPlan_; }
  const CompiledModel& model() const { return *model_; }

 private:
  CompiledGraph& plan(std::int64_t qlen, std::int64_t mlen, SegmentOutputs outputs);
  void checkIds(const ir::Tensor& ids, const char* what, std::int64_t qlen) const;

  std::shared_ptr<const CompiledModel> model_;
  struct Plan {
    std::unique_ptr<TensorMap> weights;  // the model's plus folded constants; outlives `graph`, never moves
    std::unique_ptr<CompiledGraph> graph;
  };
  std::map<std::tuple<std::int64_t, std::int64_t, SegmentOutputs>, Plan> plans_;
  std::vector<ir::Tensor> memory_;  // per slot, f32[mem_len, batch, d_model]; the first mlen_ rows are live
  std::int64_t mlen_ = 0;
  CompiledGraph* lastPlan_ = nullptr;
  TensorMap inputs_;                // reused across forwards
};

}  // namespace txl::backend
