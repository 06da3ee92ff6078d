// backend/session.cpp - Session: plans per shape, and the recurrent memory in windows.
#include "backend/session.h"

#include <algorithm>
#include <cstring>

#include "ir/bf16.h"
#include "ir/check.h"

namespace txl::backend {

const std::vector<ir::Tensor>& CompiledModel::initialRows() const {
  std::call_once(initialOnce_, [this] {
    if (!info_.fullInitialMemory || info_.memLen == 0) return;
    TXL_CHECK(static_cast<bool>(initialRowFactory_), "a full initial memory needs an initial row factory");
    for (const SlotLayout& slot : stateLayout()) {
      ir::Tensor row = initialRowFactory_(slot);
      TXL_CHECK(row.dtype() == ir::DType::F32 && row.shape() == slot.rowShape,
                "an initial memory row of slot " + std::to_string(slot.slot) + " has type " + row.type().str());
      initialRows_.push_back(ir::convertFloat(row, slot.dtype));
    }
  });
  return initialRows_;
}

namespace {
std::int64_t rowElements(const SlotLayout& slot) {
  std::int64_t n = 1;
  for (auto d : slot.rowShape) n *= d;
  return n;
}
ir::Shape withRows(const SlotLayout& slot, std::int64_t rows) {
  ir::Shape shape = {rows};
  shape.insert(shape.end(), slot.rowShape.begin(), slot.rowShape.end());
  return shape;
}
}  // namespace

Session::Session(std::shared_ptr<const CompiledModel> model) : model_(std::move(model)) {
  const ModelInfo& info = model_->info();
  capacity_ = stateWindowRows(info.memLen, info.qlen);
  start_ = info.memLen;
  for (const SlotLayout& slot : layout()) {
    buffers_.push_back(ir::Tensor::zeros({slot.dtype, withRows(slot, capacity_)}));
    slotNames_.push_back(memName(slot.slot));
    slotTypes_.push_back({slot.dtype, withRows(slot, 0)});
  }
  reset();
}

char* Session::rowPtr(std::size_t index, std::int64_t first) {
  return static_cast<char*>(buffers_[index].raw()) + rowBytes(index, first);
}

const char* Session::rowPtr(std::size_t index, std::int64_t first) const {
  return static_cast<const char*>(buffers_[index].raw()) + rowBytes(index, first);
}

std::size_t Session::rowBytes(std::size_t index, std::int64_t count) const {
  const SlotLayout& slot = layout()[index];
  return std::size_t(count) * std::size_t(rowElements(slot)) * ir::dtypeSize(slot.dtype);
}

void Session::bindRows(std::size_t index, std::int64_t first, std::int64_t count) {
  ir::TensorType& type = slotTypes_[index];
  type.shape[0] = count;
  inputs_[slotNames_[index]].assignView(type, rowPtr(index, first));
}

void Session::reset() {
  const ModelInfo& info = model_->info();
  mlen_ = 0;
  start_ = info.memLen;
  const std::vector<ir::Tensor>& initial = model_->initialRows();
  if (!initial.empty()) {
    for (std::size_t i = 0; i < layout().size(); ++i) {
      const std::size_t row = rowBytes(i, 1);
      for (std::int64_t r = 0; r < info.memLen; ++r) std::memcpy(rowPtr(i, start_ + r), initial[i].raw(), row);
    }
    mlen_ = info.memLen;
  }
  streamMlen_.assign(std::size_t(info.batch), mlen_);
}

void Session::resetStream(std::int64_t b) {
  const ModelInfo& info = model_->info();
  if (b < 0 || b >= info.batch)
    throw Error("reset of stream " + std::to_string(b) + ": expected a stream in [0, " + std::to_string(info.batch) +
                ")");
  const std::vector<ir::Tensor>& initial = model_->initialRows();
  if (!initial.empty()) {  // a full initial memory: stream b's part of every remembered row
    for (std::size_t i = 0; i < layout().size(); ++i) {
      const std::size_t part = rowBytes(i, 1) / std::size_t(info.batch), offset = part * std::size_t(b);
      for (std::int64_t r = 0; r < mlen_; ++r)
        std::memcpy(rowPtr(i, start_ + r) + offset, static_cast<const char*>(initial[i].raw()) + offset, part);
    }
    return;
  }
  const bool others = std::any_of(streamMlen_.begin(), streamMlen_.end(), [](std::int64_t m) { return m > 0; });
  if (others && !info.padWarmup && info.batch > 1)
    throw Error("reset of stream " + std::to_string(b) +
                ": this model cannot mask one stream's memory (only attn_type 0 pads); reset every stream");
  streamMlen_[std::size_t(b)] = 0;
  // Every stream fresh: the shared window starts over, so that a model that cannot pad runs its mlen-0 plan.
  if (std::all_of(streamMlen_.begin(), streamMlen_.end(), [](std::int64_t m) { return m == 0; })) reset();
}

ir::Tensor Session::rows(std::size_t index, std::int64_t first, std::int64_t count) const {
  const SlotLayout& slot = layout()[index];
  char* base = static_cast<char*>(const_cast<void*>(buffers_[index].raw()));
  return ir::Tensor({slot.dtype, withRows(slot, count)}, base + rowBytes(index, first), nullptr);
}

ir::Tensor Session::memory(std::int64_t slot) const {
  for (std::size_t i = 0; i < layout().size(); ++i)
    if (layout()[i].slot == slot) return ir::convertFloat(rows(i, start_, mlen_), ir::DType::F32);
  throw Error("the model has no memory slot " + std::to_string(slot));
}

SegmentPlan CompiledModel::compileSegment(const ir::Segment& segment) const {
  ExecutorConstants folder(weights(), constants(), executor());
  const ir::Graph graph = buildGraph(segment, &folder);
  ir::SegmentSignature abi{segment, info().dModel, info().nToken, stateLayout()};
  const std::optional<std::string> problem = ir::verifySegment(graph, abi);
  TXL_CHECK(!problem, "a segment graph breaks the segment ABI: " + problem.value_or(""));
  SegmentPlan plan{std::make_unique<TensorMap>(folder.takeWeights()), nullptr};
  plan.graph = executor().compile(graph, *plan.weights);
  return plan;
}

CompiledGraph& Session::plan(const ir::Segment& segment) {
  auto it = plans_.find(segment);
  if (it == plans_.end()) it = plans_.emplace(segment, model_->compileSegment(segment)).first;
  return *it->second.graph;
}

std::size_t Session::stateBytes() const {
  std::size_t bytes = 0;
  for (const ir::Tensor& b : buffers_) bytes += b.bytes();
  return bytes;
}

void Session::checkIds(const ir::Tensor& ids, const char* what, std::int64_t qlen) const {
  const ModelInfo& info = model_->info();
  if (ids.dtype() != ir::DType::I64 || ids.shape().size() != 2 || ids.shape()[1] != info.batch || qlen < 1)
    throw Error(std::string(what) + ": expected i64[qlen >= 1, " + std::to_string(info.batch) + "], got " +
                ids.type().str());
  auto span = ids.span<std::int64_t>();
  for (std::size_t i = 0; i < span.size(); ++i)
    if (span[i] < 0 || span[i] >= info.nToken)
      throw Error(std::string(what) + ": token id " + std::to_string(span[i]) + " at position " +
                  std::to_string(i / info.batch) + " of stream " + std::to_string(i % info.batch) + " is outside [0, " +
                  std::to_string(info.nToken) + ")");
}

void Session::ensureRoom(std::int64_t klen) {
  if (start_ + klen <= capacity_) return;
  const ModelInfo& info = model_->info();
  const std::int64_t dest = info.memLen - mlen_;  // room for a warm-up plan's padding rows
  if (dest + klen > capacity_) {                  // a segment longer than the windows were sized for: grow once
    std::int64_t capacity = stateWindowRows(info.memLen, klen);
    for (std::size_t i = 0; i < buffers_.size(); ++i) {
      ir::Tensor grown = ir::Tensor::zeros({layout()[i].dtype, withRows(layout()[i], capacity)});
      std::memcpy(static_cast<char*>(grown.raw()) + rowBytes(i, dest), rowPtr(i, start_), rowBytes(i, mlen_));
      buffers_[i] = grown;
      rowsMoved_ += mlen_;
    }
    capacity_ = capacity;
  } else {  // move the memory towards the front of each window
    for (std::size_t i = 0; i < buffers_.size(); ++i) {
      std::memmove(rowPtr(i, dest), rowPtr(i, start_), rowBytes(i, mlen_));
      rowsMoved_ += mlen_;
    }
  }
  start_ = dest;
}

ForwardResult Session::forward(const ir::Tensor& tokens, const ir::Tensor* targets, bool logprob) {
  const ModelInfo& info = model_->info();
  std::int64_t qlen = tokens.shape().empty() ? 0 : tokens.shape()[0];
  checkIds(tokens, ir::kTokens, qlen);
  if (targets) {
    checkIds(*targets, ir::kTargets, qlen);
    if (targets->shape() != tokens.shape())
      throw Error("targets: expected the shape of tokens " + ir::shapeStr(tokens.shape()) + ", got " +
                  ir::shapeStr(targets->shape()));
  }
  // A warm-up segment, or one where a stream remembers fewer positions than
  // another, runs the padded plan of mlen = mem_len: the `pad` rows before
  // the memory are masked, and per stream the rows it does not remember.
  const std::int64_t fewest = *std::min_element(streamMlen_.begin(), streamMlen_.end());
  const bool padded = info.padWarmup && (padAlways_ || fewest < info.memLen);
  const std::int64_t planMlen = padded ? info.memLen : mlen_, pad = planMlen - mlen_;
  lastKey_ = info.segment(qlen, planMlen, logprob, targets != nullptr, padded);
  CompiledGraph& p = plan(lastKey_);
  lastPlan_ = &p;  // for profilers (Session::lastPlan)

  const std::int64_t klen = mlen_ + qlen;
  if (info.memLen > 0) ensureRoom(klen);
  inputs_[ir::kTokens] = tokens;
  if (targets) inputs_[ir::kTargets] = *targets;
  if (padded) {
    const std::int64_t klenPlan = planMlen + qlen;
    if (padMask_.numel() != info.batch * klenPlan)
      padMask_ = ir::Tensor::zeros({ir::DType::F32, {info.batch, 1, 1, klenPlan}});
    for (std::int64_t b = 0; b < info.batch; ++b) {
      float* m = padMask_.data<float>() + b * klenPlan;
      const std::int64_t streamPad = planMlen - streamMlen_[std::size_t(b)];
      std::fill(m, m + streamPad, 1.0f);
      std::fill(m + streamPad, m + klenPlan, 0.0f);
    }
    inputs_[ir::kPadMask] = padMask_;
  }
  for (std::size_t i = 0; i < layout().size(); ++i) {
    if (layout()[i].windowed) bindRows(i, start_ - pad, planMlen + qlen);
    else if (planMlen > 0) bindRows(i, start_ - pad, planMlen);  // a plan for mlen 0 reads no memory
  }
  const TensorMap& out = p.run(inputs_);

  // Advance: the memory becomes the last min(mem_len, klen) rows of
  // [memory; segment], which for a windowed slot already sit in place.
  if (info.memLen > 0) {
    const std::int64_t newMlen = std::min(info.memLen, klen);
    const std::int64_t newStart = start_ + klen - newMlen;
    for (std::size_t i = 0; i < layout().size(); ++i) {
      if (layout()[i].windowed) continue;
      // The plan keeps the last min(mem_len, planMlen + qlen) rows; padding comes first.
      const ir::Tensor& fresh = out.at(slotNames_[i]);
      TXL_CHECK(fresh.shape()[0] == lastKey_.kept(), "memory update of unexpected length");
      std::memmove(rowPtr(i, newStart), static_cast<const char*>(fresh.raw()) + rowBytes(i, fresh.shape()[0] - newMlen),
                   rowBytes(i, newMlen));
      rowsMoved_ += newMlen;
    }
    start_ = newStart;
    mlen_ = newMlen;
    for (std::int64_t& m : streamMlen_) m = std::min(info.memLen, m + qlen);
  }
  ForwardResult result;
  result.hidden = &out.at(ir::kHidden);
  if (logprob) result.logprob = &out.at(ir::kLogprob);
  if (targets) result.nll = &out.at(ir::kNll);
  return result;
}

TensorMap Session::saveState() const {
  TensorMap state;
  for (std::size_t i = 0; i < layout().size(); ++i) {
    const ir::Tensor view = rows(i, start_, mlen_);
    state[memName(layout()[i].slot)] =
        view.dtype() == ir::DType::F32 ? view.clone() : ir::convertFloat(view, ir::DType::F32);
  }
  return state;
}

namespace {
// checkStateTypes over `slots` (the model's, or their batch-1 form for one stream's state).
void checkSlotTypes(const std::vector<SlotLayout>& slots, std::int64_t memLen,
                    const std::map<std::string, ir::TensorType>& types) {
  std::int64_t mlen = -1;
  for (const SlotLayout& slot : slots) {
    const std::string name = memName(slot.slot);
    auto it = types.find(name);
    if (it == types.end()) throw Error("state: tensor '" + name + "' is missing");
    const ir::Shape& shape = it->second.shape;
    ir::Shape row(shape.empty() ? shape.begin() : shape.begin() + 1, shape.end());
    if (it->second.dtype != ir::DType::F32 || shape.empty() || row != slot.rowShape || shape[0] > memLen ||
        (mlen >= 0 && shape[0] != mlen))
      throw Error("state: tensor '" + name + "': expected f32[mlen <= " + std::to_string(memLen) + "," +
                  ir::shapeStr(slot.rowShape).substr(1) + (mlen >= 0 ? " with mlen " + std::to_string(mlen) : "") +
                  ", got " + it->second.str());
    mlen = shape[0];
  }
  if (types.size() != slots.size()) {
    for (const auto& [name, type] : types) {
      bool known = false;
      for (const SlotLayout& slot : slots) known |= memName(slot.slot) == name;
      if (!known) throw Error("state: holds tensor " + quote(name) + ", which this model does not have");
    }
  }
}
}  // namespace

void checkStateTypes(const CompiledModel& model, const std::map<std::string, ir::TensorType>& types) {
  checkSlotTypes(model.stateLayout(), model.info().memLen, types);
}

void Session::loadState(const TensorMap& state) {
  const ModelInfo& info = model_->info();
  std::map<std::string, ir::TensorType> types;
  for (const auto& [name, t] : state) types.emplace(name, t.type());
  checkStateTypes(*model_, types);
  const std::int64_t mlen = layout().empty() ? 0 : state.at(memName(layout().front().slot)).shape()[0];
  mlen_ = std::max<std::int64_t>(mlen, 0);
  streamMlen_.assign(std::size_t(info.batch), mlen_);
  start_ = info.memLen - mlen_;  // room for a warm-up plan's padding before it
  for (std::size_t i = 0; i < layout().size(); ++i) {
    const ir::Tensor& t = state.at(memName(layout()[i].slot));
    ir::convertFloats(t.dtype(), t.raw(), layout()[i].dtype, rowPtr(i, start_), t.numel());  // bf16 windows round
  }
}

void Session::checkStream(std::int64_t b, const char* what) const {
  const std::int64_t batch = model_->info().batch;
  if (b < 0 || b >= batch)
    throw Error(std::string(what) + " of stream " + std::to_string(b) + ": expected a stream in [0, " +
                std::to_string(batch) + ")");
}

// A stream's part of a remembered row is the b-th of `batch` equal parts
// (the row shape is [batch, width...]); its memory is the last streamMlen(b)
// rows of the window.
TensorMap Session::saveStream(std::int64_t b) const {
  checkStream(b, "save");
  const std::int64_t batch = model_->info().batch, m = streamMlen_[std::size_t(b)];
  TensorMap state;
  for (std::size_t i = 0; i < layout().size(); ++i) {
    const SlotLayout& slot = layout()[i];
    const std::int64_t part = rowElements(slot) / batch;
    ir::Shape shape = withRows(slot, m);
    shape[1] = 1;
    ir::Tensor lane = ir::Tensor::zeros({ir::DType::F32, shape});
    const ir::Tensor window = rows(i, start_ + mlen_ - m, m);
    const std::size_t rowSize = rowBytes(i, 1), partSize = rowSize / std::size_t(batch);
    for (std::int64_t r = 0; r < m; ++r)
      ir::convertFloats(slot.dtype,
                        static_cast<const char*>(window.raw()) + std::size_t(r) * rowSize + partSize * std::size_t(b),
                        ir::DType::F32, lane.data<float>() + r * part, part);
    state[memName(slot.slot)] = lane;
  }
  return state;
}

void Session::loadStream(std::int64_t b, const TensorMap& state) {
  checkStream(b, "load");
  const ModelInfo& info = model_->info();
  std::vector<SlotLayout> single = layout();
  for (SlotLayout& slot : single) slot.rowShape[0] = 1;
  std::map<std::string, ir::TensorType> types;
  for (const auto& [name, t] : state) types.emplace(name, t.type());
  checkSlotTypes(single, info.memLen, types);
  const std::int64_t m = layout().empty() ? 0 : state.at(memName(layout().front().slot)).shape()[0];
  placeStream(b, m, [&](std::size_t i, std::int64_t r, char* to) {
    const SlotLayout& slot = layout()[i];
    const std::int64_t part = rowElements(slot) / info.batch;
    ir::convertFloats(ir::DType::F32, state.at(memName(slot.slot)).data<float>() + r * part, slot.dtype, to, part);
  });
}

void Session::copyStream(std::int64_t b, const Session& from, std::int64_t fromStream) {
  checkStream(b, "load");
  from.checkStream(fromStream, "save");
  TXL_CHECK(&from != this, "a stream copied within one session");
  const std::int64_t batch = model_->info().batch, fromBatch = from.model_->info().batch;
  const auto& mine = layout();
  const auto& theirs = from.layout();
  bool same = mine.size() == theirs.size();
  for (std::size_t i = 0; same && i < mine.size(); ++i)
    same = mine[i].slot == theirs[i].slot && mine[i].dtype == theirs[i].dtype &&
           rowElements(mine[i]) / batch == rowElements(theirs[i]) / fromBatch;
  if (!same) throw Error("copy of stream " + std::to_string(fromStream) + ": the sessions' memory slots differ");
  const std::int64_t m = from.streamMlen_[std::size_t(fromStream)];
  const std::int64_t fromFirst = from.start_ + from.mlen_ - m;
  placeStream(b, m, [&](std::size_t i, std::int64_t r, char* to) {
    const std::size_t part = from.rowBytes(i, 1) / std::size_t(fromBatch);
    const char* row = from.rowPtr(i, fromFirst + r) + part * std::size_t(fromStream);
    std::memcpy(to, row, part);
  });
}

void Session::placeStream(std::int64_t b, std::int64_t m,
                          const std::function<void(std::size_t, std::int64_t, char*)>& fill) {
  const ModelInfo& info = model_->info();
  if (!info.padWarmup)
    for (std::int64_t c = 0; c < info.batch; ++c)
      if (c != b && streamMlen_[std::size_t(c)] != m)
        throw Error("load of stream " + std::to_string(b) + ": it remembers " + std::to_string(m) +
                    " positions and stream " + std::to_string(c) + " " + std::to_string(streamMlen_[std::size_t(c)]) +
                    "; this model cannot mask one stream's memory (only attn_type 0 pads)");
  streamMlen_[std::size_t(b)] = m;
  // The window holds the longest memory: it grows backwards over rows the
  // other streams do not remember (masked for them), or shrinks when the
  // longest memory left is shorter. start_ >= memLen - mlen_ holds either way.
  const std::int64_t longest = *std::max_element(streamMlen_.begin(), streamMlen_.end());
  start_ += mlen_ - longest;
  mlen_ = longest;
  for (std::size_t i = 0; i < layout().size(); ++i) {
    const std::size_t rowSize = rowBytes(i, 1), partSize = rowSize / std::size_t(info.batch);
    char* to = rowPtr(i, start_ + mlen_ - m) + partSize * std::size_t(b);
    for (std::int64_t r = 0; r < m; ++r) fill(i, r, to + std::size_t(r) * rowSize);
  }
}

}  // namespace txl::backend
