// backend/session.h - a compiled model and the sessions that stream segments through it.
//
// A CompiledModel holds what every stream of a model shares: the weights, an
// executor, and a factory that builds (and optimizes) the graph of one
// segment for a given (qlen, mlen) (driver/compile.h makes them). Every graph
// is checked against the segment ABI (ir/segment_abi.h) before it is compiled. It is immutable once made, so any number
// of Sessions, on any threads, can share it.
//
// A Session owns the per-stream state of `batch` streams: the recurrent
// memory of every slot the graph has (backend/state_layout.h). In the hidden
// form slot 0 is the embedding, slot l the output of layer l-1 and slot
// n_layer the final hidden state, as the reference keeps them; in the kv form
// slot l holds layer l's projected keys and values. Each forward() runs one
// segment and advances the memory exactly as the reference: empty at the
// start (or mem_len positions of the model's initial rows,
// ModelInfo::fullInitialMemory), afterwards the last min(mem_len, mlen + qlen)
// positions. Plans for
// the shapes a stream meets (warm-up segments, a shorter last segment) are
// built on first use and cached in the session. Once every shape a stream
// meets has its plan, forward() allocates nothing of its own.
//
// Each slot lives in a window buffer of `capacity` positions: the memory is
// rows [start, start + mlen), with at least mem_len - mlen rows before it, so
// that a warm-up segment can run the padded plan of mlen = mem_len over rows
// [start - (mem_len - mlen), start + mlen + qlen), the padding masked
// (ir::Segment::padded; their contents are finite leftovers or zeros, never
// read into a result). A windowed slot's plan appends the segment's
// rows right behind it, attention reads [memory | segment] in place, and the
// session only moves `start`; when the window reaches the end of the buffer
// the memory is moved to the front once. With capacity 2·mem_len + qlen
// (stateWindowRows, backend/state_layout.h) that costs mem_len rows every
// mem_len / qlen segments: O(qlen) rows per segment, whatever mem_len is
// (stateRowsMoved() counts them).
//
// The streams share the window, but each remembers its own number of
// positions (streamMlen(b) <= mlen()): resetStream(b) starts stream b afresh
// while the others go on. Its positions are masked by the padded plan's
// per-stream pad_mask (the same exactness argument as a warm-up segment's
// padding), or, with a full initial memory, refilled with the initial rows.
// Streams do not mix in any op, so what a stream computes does not depend on
// what its neighbours hold.
//
//   auto model = std::make_shared<CompiledModel>(info, weights, makeReferenceExecutor(), factory);
//   Session s(model);
//   auto out = s.forward(tokens, &targets);   // tokens i64[qlen, batch]
//   out.nll->data<float>();                   // valid until the next forward()
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <vector>

#include "backend/constant_folding.h"
#include "backend/executor.h"
#include "backend/state_layout.h"
#include "ir/segment.h"

namespace txl::backend {

// What a session must know of the model, independent of how it was specified.
struct ModelInfo {
  std::int64_t nLayer = 0;
  std::int64_t dModel = 0;
  std::int64_t nToken = 0;
  std::int64_t memLen = 0;  // memory kept after each segment
  std::int64_t batch = 1;
  std::int64_t qlen = 1;       // the usual segment length (sizes the state windows)
  std::int64_t clampLen = -1;  // clamp_len of every segment graph
  bool sameLength = false;     // same_length of every segment graph
  // Warm-up segments (mlen < memLen) run the padded graph of mlen = memLen
  // (ir::Segment::padded): one plan per qlen, not one per mlen.
  bool padWarmup = false;
  // A stream starts with memLen remembered positions per slot, each holding
  // the slot's initial row (CompiledModel::initialRow: Hugging Face's zero
  // layer inputs, in the slot's form), instead of an empty memory. Only the
  // state differs: every segment runs the plan it would run on a full memory.
  bool fullInitialMemory = false;
  // The memory slots every segment graph has (ir/segment_abi.h), declared by
  // whoever makes the model (driver::memorySlots) and checked against each graph.
  std::vector<SlotLayout> memory;

  // The segment of this model's batch, mem_len, clamp_len and same_length:
  // qlen tokens against mlen remembered positions (ir/segment.h).
  ir::Segment segment(std::int64_t qlen, std::int64_t mlen, bool logprob, bool nll, bool padded = false) const {
    return ir::Segment{batch, qlen, mlen, memLen, clampLen, sameLength, logprob, nll, padded};
  }
};

// Builds the (optimized) graph of one segment. With `constants`, the graph is
// the one to compile: its pipeline ends with fold-constants through them
// (PassContext::constants; passes::foldConstants for a graph optimized
// earlier). Must be safe to call from several threads.
using GraphFactory = std::function<ir::Graph(const ir::Segment& segment, ir::ConstantEvaluator* constants)>;
// The content of one remembered position of a slot's initial memory, f32[slot.rowShape]
// (ModelInfo::fullInitialMemory); called once per slot and model.
using InitialRowFactory = std::function<ir::Tensor(const SlotLayout& slot)>;

// A segment's plan and what it binds.
struct SegmentPlan {
  std::unique_ptr<TensorMap> weights;  // the model's plus folded constants; outlives `graph`, never moves
  std::unique_ptr<CompiledGraph> graph;
};

class CompiledModel {
 public:
  CompiledModel(ModelInfo info, TensorMap weights, std::shared_ptr<Executor> executor, GraphFactory factory,
                InitialRowFactory initialRow = {})
      : info_(info),
        weights_(std::move(weights)),
        executor_(std::move(executor)),
        factory_(std::move(factory)),
        initialRowFactory_(std::move(initialRow)) {}

  const ModelInfo& info() const { return info_; }
  const TensorMap& weights() const { return weights_; }
  Executor& executor() const { return *executor_; }
  // The executor, for another compiled model of the same weights to share
  // (its packed weights: driver::compile's `sharedWith`).
  std::shared_ptr<Executor> sharedExecutor() const { return executor_; }
  // The optimized graph of one segment; folded through `constants` when given.
  ir::Graph buildGraph(const ir::Segment& segment, ir::ConstantEvaluator* constants = nullptr) const {
    return factory_(segment, constants);
  }
  const InitialRowFactory& initialRowFactory() const { return initialRowFactory_; }
  // Builds (folding its constants) and compiles the graph of one segment (what a Session caches per shape).
  SegmentPlan compileSegment(const ir::Segment& segment) const;
  // Constant values (folded at plan-compile time) shared by every plan.
  ConstantCache& constants() const { return constants_; }
  // The memory slots of this model's graphs (ModelInfo::memory).
  const std::vector<SlotLayout>& stateLayout() const { return info_.memory; }
  // Per layout slot, the row every position of a fresh stream's memory holds
  // (empty unless info().fullInitialMemory); computed once.
  const std::vector<ir::Tensor>& initialRows() const;

 private:
  ModelInfo info_;
  TensorMap weights_;
  std::shared_ptr<Executor> executor_;
  GraphFactory factory_;
  InitialRowFactory initialRowFactory_;
  mutable ConstantCache constants_;
  mutable std::once_flag initialOnce_;
  mutable std::vector<ir::Tensor> initialRows_;
};

struct ForwardResult {
  const ir::Tensor* hidden = nullptr;   // f32[qlen, batch, d_model]
  const ir::Tensor* logprob = nullptr;  // f32[qlen, batch, n_token], when asked for
  const ir::Tensor* nll = nullptr;      // f32[qlen, batch], when targets were given
};

// Checks the types of a state ("mem.<slot>" → f32[mlen, batch, width])
// against `model`'s slots, before anything is read or converted: every slot
// present, one mlen <= mem_len for all, the row shape of the slot, no other
// tensor (txl::Error "state: ..." naming the first mismatch).
void checkStateTypes(const CompiledModel& model, const std::map<std::string, ir::TensorType>& types);

class Session {
 public:
  explicit Session(std::shared_ptr<const CompiledModel> model);

  // Runs one segment. tokens and targets are i64[qlen, batch]; ids must be in
  // [0, n_token) (txl::Error otherwise). The result views buffers of the
  // session, valid until the next forward().
  ForwardResult forward(const ir::Tensor& tokens, const ir::Tensor* targets = nullptr, bool logprob = true);

  // Forgets the memory: the next segment starts a fresh stream (an empty
  // memory, or the model's full initial memory).
  void reset();
  // Forgets the memory of stream `b` only (see above). txl::Error for a
  // stream outside [0, batch), or when other streams remember positions and
  // the model cannot pad (ModelInfo::padWarmup false: not attn_type 0).
  void resetStream(std::int64_t b);
  std::int64_t mlen() const { return mlen_; }
  // Positions stream `b` remembers: the last rows of the shared window.
  std::int64_t streamMlen(std::int64_t b) const { return streamMlen_.at(std::size_t(b)); }
  // With `on` (and a model that pads), every segment runs the padded plan of
  // mlen = mem_len, also once every stream remembers mem_len positions: the
  // plan a segment runs then depends on its length alone, never on what the
  // other streams remember, so a stream's results cannot depend on its
  // neighbours through the choice of plan (documents scoring).
  void padAlways(bool on) { padAlways_ = on; }
  // The memory of a slot: f32[mlen, batch, width] (txl::Error for a slot the
  // model does not have); a view of the window, or a widened copy of a bf16 one.
  ir::Tensor memory(std::int64_t slot) const;
  const std::vector<SlotLayout>& layout() const { return model_->stateLayout(); }
  // Rows of state moved so far by the session itself (window compaction,
  // growth, and the copies of the literal mem_write form), over all slots.
  std::uint64_t stateRowsMoved() const { return rowsMoved_; }
  // Bytes of the state windows (every slot's buffer at its current capacity).
  std::size_t stateBytes() const;

  // The state as named tensors ("mem.<slot>" f32[mlen, batch, width]), and
  // back (every stream then remembers mlen positions). A bf16 window
  // (SlotLayout::dtype) is widened on the way out and rounded on the way in,
  // so a state file is f32 whatever the precision. loadState checks the slots and shapes against the model
  // (txl::Error naming the tensor otherwise).
  TensorMap saveState() const;
  void loadState(const TensorMap& state);

  // Stream `b`'s memory alone, as a batch-1 state ("mem.<slot>"
  // f32[streamMlen(b), 1, width]: what a batch-1 session's saveState()
  // gives), and back: loadStream(b, state) makes stream b remember exactly
  // `state` while the other streams go on as they were. A stream moves
  // between sessions of different batch this way (driver/stream_server.h
  // batches streams so), and its results are those it would have had in the
  // session it came from, up to the tolerance of a different batch's plans.
  // txl::Error for a stream outside [0, batch), a state of the wrong slots or
  // shapes, or streams of different lengths in a model that cannot pad.
  TensorMap saveStream(std::int64_t b) const;
  void loadStream(std::int64_t b, const TensorMap& state);
  // loadStream(b, from.saveStream(fromStream)) without the f32 state between:
  // the rows are copied as they are stored (both sessions' slots must have
  // the same dtypes and row widths, txl::Error otherwise), so a stream moves
  // between a batch-1 session and a pool's lane at the cost of a copy.
  void copyStream(std::int64_t b, const Session& from, std::int64_t fromStream);

  // Plans built so far (one per distinct segment shape met).
  std::size_t planCount() const { return plans_.size(); }
  // The plan the last forward() ran (null before the first), for profilers.
  CompiledGraph* lastPlan() const { return lastPlan_; }
  // Its segment (meaningful once lastPlan() is not null).
  const ir::Segment& lastKey() const { return lastKey_; }
  const CompiledModel& model() const { return *model_; }

 private:
  CompiledGraph& plan(const ir::Segment& segment);
  void checkIds(const ir::Tensor& ids, const char* what, std::int64_t qlen) const;
  // Makes room for a window of klen rows at start_: moves the memory to the
  // front, or grows the buffers.
  void ensureRoom(std::int64_t klen);
  ir::Tensor rows(std::size_t index, std::int64_t first, std::int64_t count) const;
  void checkStream(std::int64_t b, const char* what) const;
  // Makes stream b remember m positions (the window moved or grown as
  // needed) and has `fill(slot index, row, to)` write each of its rows' parts.
  void placeStream(std::int64_t b, std::int64_t m, const std::function<void(std::size_t, std::int64_t, char*)>& fill);
  char* rowPtr(std::size_t index, std::int64_t first);  // row `first` of slot `index`'s window
  const char* rowPtr(std::size_t index, std::int64_t first) const;
  std::size_t rowBytes(std::size_t index, std::int64_t count) const;  // bytes of `count` rows of it
  // Points the input of slot `index` at `count` rows from `first`, without allocating.
  void bindRows(std::size_t index, std::int64_t first, std::int64_t count);

  std::shared_ptr<const CompiledModel> model_;
  std::map<ir::Segment, SegmentPlan> plans_;
  std::vector<ir::Tensor> buffers_;  // per layout slot, [capacity_, row shape] of the slot's dtype
  std::int64_t capacity_ = 0;
  std::int64_t start_ = 0;  // the memory is rows [start_, start_ + mlen_); start_ >= memLen - mlen_
  std::int64_t mlen_ = 0;
  std::vector<std::int64_t> streamMlen_;  // per stream, <= mlen_: the rest of its rows are masked
  bool padAlways_ = false;
  std::uint64_t rowsMoved_ = 0;
  CompiledGraph* lastPlan_ = nullptr;
  ir::Segment lastKey_;
  // The inputs of the last forward, updated in place: once a stream is warm,
  // forward() allocates nothing (tests/session/no_allocation_test.cpp). An
  // entry a plan does not take ("targets" of a plan without NLL) is ignored.
  TensorMap inputs_;
  std::vector<std::string> slotNames_;     // "mem.<slot>" per layout slot
  std::vector<ir::TensorType> slotTypes_;  // per layout slot, the row count set per use
  ir::Tensor padMask_;                     // "pad_mask" f32[batch, 1, 1, klen] of the last padded segment
};

}  // namespace txl::backend
