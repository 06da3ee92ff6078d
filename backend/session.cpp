// backend/session.cpp - Session: plans per shape, and the recurrent memory.
#include "backend/session.h"

#include <cstring>

#include "ir/check.h"

namespace txl::backend {

Session::Session(std::shared_ptr<const CompiledModel> model) : model_(std::move(model)) {
  const ModelInfo& info = model_->info();
  for (std::int64_t slot = 0; slot <= info.nLayer; ++slot)
    memory_.push_back(ir::Tensor::zeros({ir::DType::F32, {info.memLen, info.batch, info.dModel}}));
}

void Session::reset() { mlen_ = 0; }

const ir::Tensor Session::memory(std::int64_t slot) const {
  TXL_CHECK(slot >= 0 && slot < std::int64_t(memory_.size()), "memory slot out of range");
  const ModelInfo& info = model_->info();
  return ir::Tensor({ir::DType::F32, {mlen_, info.batch, info.dModel}}, const_cast<void*>(memory_[slot].raw()),
                    nullptr);
}

CompiledGraph& Session::plan(std::int64_t qlen, std::int64_t mlen, SegmentOutputs outputs) {
  auto key = std::make_tuple(qlen, mlen, outputs);
  auto it = plans_.find(key);
  if (it == plans_.end()) {
    FoldedGraph folded = foldConstants(model_->buildGraph(qlen, mlen, outputs), model_->weights(),
                                       model_->constants(), model_->executor());
    Plan plan{std::make_unique<TensorMap>(std::move(folded.weights)), nullptr};
    plan.graph = model_->executor().compile(folded.graph, *plan.weights);
    it = plans_.emplace(key, std::move(plan)).first;
  }
  return *it->second.graph;
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
                  std::to_string(i / info.batch) + " of stream " + std::to_string(i % info.batch) +
                  " is outside [0, " + std::to_string(info.nToken) + ")");
}

ForwardResult Session::forward(const ir::Tensor& tokens, const ir::Tensor* targets, bool logprob) {
  const ModelInfo& info = model_->info();
  std::int64_t qlen = tokens.shape().empty() ? 0 : tokens.shape()[0];
  checkIds(tokens, "tokens", qlen);
  if (targets) {
    checkIds(*targets, "targets", qlen);
    if (targets->shape() != tokens.shape())
      throw Error("targets: expected the shape of tokens " + ir::shapeStr(tokens.shape()) + ", got " +
                  ir::shapeStr(targets->shape()));
  }
  SegmentOutputs outputs{logprob, targets != nullptr};
  CompiledGraph& p = plan(qlen, mlen_, outputs);
  lastPlan_ = &p;

  inputs_["tokens"] = tokens;
  if (targets) inputs_["targets"] = *targets;
  else inputs_.erase("targets");
  for (std::int64_t slot = 0; slot <= info.nLayer; ++slot) {
    if (mlen_ > 0) inputs_[memName(slot)] = memory(slot);
    else inputs_.erase(memName(slot));
  }
  const TensorMap& out = p.run(inputs_);

  // Advance the memory: the graph wrote the last min(mem_len, mlen + qlen)
  // positions of every slot.
  if (info.memLen > 0) {
    std::int64_t newMlen = std::min(info.memLen, mlen_ + qlen);
    for (std::int64_t slot = 0; slot <= info.nLayer; ++slot) {
      const ir::Tensor& fresh = out.at(memName(slot));
      TXL_CHECK(fresh.shape()[0] == newMlen, "memory update of unexpected length");
      std::memmove(memory_[slot].raw(), fresh.raw(), fresh.bytes());
    }
    mlen_ = newMlen;
  }
  ForwardResult result;
  result.hidden = &out.at("hidden");
  if (logprob) result.logprob = &out.at("logprob");
  if (targets) result.nll = &out.at("nll");
  return result;
}

TensorMap Session::saveState() const {
  TensorMap state;
  for (std::int64_t slot = 0; slot < std::int64_t(memory_.size()); ++slot) state[memName(slot)] = memory(slot).clone();
  return state;
}

void Session::loadState(const TensorMap& state) {
  const ModelInfo& info = model_->info();
  std::int64_t mlen = -1;
  for (std::int64_t slot = 0; slot < std::int64_t(memory_.size()); ++slot) {
    auto it = state.find(memName(slot));
    if (it == state.end()) throw Error("state: tensor '" + memName(slot) + "' is missing");
    const auto& shape = it->second.shape();
    if (it->second.dtype() != ir::DType::F32 || shape.size() != 3 || shape[1] != info.batch ||
        shape[2] != info.dModel || shape[0] > info.memLen || (mlen >= 0 && shape[0] != mlen))
      throw Error("state: tensor '" + memName(slot) + "': expected f32[mlen <= " + std::to_string(info.memLen) +
                  ", " + std::to_string(info.batch) + ", " + std::to_string(info.dModel) + "]" +
                  (mlen >= 0 ? " with mlen " + std::to_string(mlen) : "") + ", got " + it->second.type().str());
    mlen = shape[0];
  }
  if (state.size() != memory_.size()) throw Error("state: holds tensors this model does not have");
  for (std::int64_t slot = 0; slot < std::int64_t(memory_.size()); ++slot) {
    const ir::Tensor& t = state.at(memName(slot));
    std::memcpy(memory_[slot].raw(), t.raw(), t.bytes());
  }
  mlen_ = mlen;
}

}  // namespace txl::backend
