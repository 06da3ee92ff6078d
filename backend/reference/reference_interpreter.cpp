// backend/reference/reference_interpreter.cpp - a plan that runs each node's reference kernel in turn.
//
// Algorithm:
//   1. compile: verify the graph, check the weights, and flatten the graph in
//      its topological order into steps (op, attributes, operand step
//      indices, the printed signature for error messages).
//   2. run: check the inputs; for every step, gather its operands' tensors,
//      evaluate the op (one switch case per op kind) and keep the result in
//      the step's slot; sinks record their operand under their output name.
#include "backend/reference/reference_interpreter.h"

#include <cstring>
#include <vector>

#include "backend/reference/reference_fused_kernels.h"
#include "backend/reference/reference_kernels.h"
#include "ir/check.h"
#include "ir/int8.h"
#include "ir/printer.h"
#include "ir/verifier.h"

namespace txl::backend {

namespace {

using ir::OpKind;
using ir::Tensor;

// mem_window: `window` is the caller's state window [mlen + rows, ...] whose
// first mlen rows hold the memory; x goes into the rest, in place.
Tensor memWindow(const Tensor& window, const Tensor& x, std::int64_t mlen) {
  std::size_t rowBytes = x.shape()[0] == 0 ? 0 : x.bytes() / x.shape()[0];
  std::memcpy(static_cast<char*>(const_cast<void*>(window.raw())) + mlen * rowBytes, x.raw(), x.bytes());
  return window;
}

struct Step {
  ir::OpData op;
  std::vector<std::size_t> operands;  // indices of earlier steps
  std::string signature;              // "%7 = linear(%3, %6)"
};

class ReferencePlan final : public CompiledGraph {
 public:
  ReferencePlan(const ir::Graph& graph, const TensorMap& weights) : graph_(graph), weights_(weights) {
    ir::verifyOrThrow(graph_, "reference executor");
    checkWeights(graph_, weights_);
    ir::Numbering numbering(graph_);
    std::map<ir::Node, std::size_t> index;
    for (ir::Node n : graph_.topologicalOrder()) {
      Step step{graph_.op(n), {}, numbering.signature(n)};
      for (ir::Node o : graph_.operands(n)) step.operands.push_back(index.at(o));
      index[n] = steps_.size();
      steps_.push_back(std::move(step));
    }
    values_.resize(steps_.size());
  }

  const TensorMap& run(const TensorMap& inputs) override {
    checkInputs(graph_, inputs);
    outputs_.clear();
    for (std::size_t i = 0; i < steps_.size(); ++i) {
      const Step& step = steps_[i];
      std::vector<Tensor> args;
      for (std::size_t o : step.operands) args.push_back(values_[o]);
      try {
        values_[i] = evaluate(step.op, args, inputs);
      } catch (const Error& e) {
        throw Error(step.signature + ": " + e.what());
      }
      TXL_CHECK(!step.op.type || values_[i].type() == *step.op.type,
                step.signature + " produced " + values_[i].type().str() + ", declared " + step.op.type->str());
    }
    return outputs_;
  }

 private:
  // A linear's declared result dtype (its out_dtype), if any.
  static std::optional<ir::DType> resultDType(const ir::OpData& op) {
    if (op.attrs.has("out_dtype")) return ir::parseDType(op.attrs.getString("out_dtype"));
    return std::nullopt;
  }

  // The value of one op; sinks record their operand and return an empty tensor.
  Tensor evaluate(const ir::OpData& op, const std::vector<Tensor>& x, const TensorMap& inputs) {
    const ir::Attrs& a = op.attrs;
    switch (op.kind) {
      case OpKind::Input:
        return inputs.at(a.getString("name"));
      case OpKind::Weight:
        return weights_.at(a.getString("name"));
      case OpKind::Constant:
        return ref::constant(*op.type, a.getFloat("value"));
      case OpKind::MemRead:
        return inputs.at(memName(a.getInt("slot")));
      case OpKind::PosEncoding:
        return ref::posEncoding(a.getInt("klen"), a.getInt("d"), a.getInt("clamp_len"));
      case OpKind::AttnMask:
        return ref::attnMask(a.getInt("qlen"), a.getInt("mlen"), a.getInt("mem_len"), a.getBool("same_length"));
      case OpKind::Output:
        outputs_[a.getString("name")] = x[0];
        return {};
      case OpKind::MemWrite:
        outputs_[memName(a.getInt("slot"))] = x[0];
        return {};
      case OpKind::MemWindow:
        return memWindow(inputs.at(memName(a.getInt("slot"))), x[0], a.getInt("mlen"));
      case OpKind::Add:
        return ref::add(x[0], x[1]);
      case OpKind::Sub:
        return ref::sub(x[0], x[1]);
      case OpKind::Mul:
        return ref::mul(x[0], x[1]);
      case OpKind::Scale:
        return ref::scale(x[0], a.getFloat("factor"));
      case OpKind::Relu:
        return ref::relu(x[0]);
      case OpKind::MaskedFill:
        return ref::maskedFill(x[0], x[1], a.getFloat("value"));
      case OpKind::Concat:
        return ref::concat(x, a.getInt("axis"));
      case OpKind::Slice:
        return ref::slice(x[0], a.getInt("axis"), a.getInt("start"), a.getInt("end"));
      case OpKind::Reshape:
        return ref::reshape(x[0], a.getInts("shape"));
      case OpKind::Permute:
        return ref::permute(x[0], a.getInts("perm"));
      case OpKind::Pad:
        return ref::pad(x[0], a.getInt("axis"), a.getInt("before"), a.getInt("after"), a.getFloat("value"));
      case OpKind::Embedding:
        return ref::embedding(x[0], x[1], a.getInt("lo"));
      case OpKind::Convert:
        return ref::convert(x[0], *ir::parseDType(a.getString("dtype")));
      case OpKind::Quantize:
        return ir::int8RoundTrip(x[0]);
      case OpKind::Linear:
        return ref::linear(x[0], x[1], x.size() == 3 ? &x[2] : nullptr, resultDType(op));
      case OpKind::MatMul:
        return ref::matmul(x[0], x[1], a.getBool("transpose_a"), a.getBool("transpose_b"));
      case OpKind::LayerNorm:
        return ref::layerNorm(x[0], x[1], x[2], a.getFloat("eps"));
      case OpKind::Softmax:
        return ref::softmax(x[0], a.getInt("axis"));
      case OpKind::LogSoftmax:
        return ref::logSoftmax(x[0], a.getInt("axis"));
      case OpKind::RelShift:
        return ref::relShift(x[0]);
      case OpKind::Pick:
        return ref::pick(x[0], x[1]);
      case OpKind::RelScores: {
        Tensor scores = ref::relScores(x[0], x[1], x[2], a.getFloat("scale"), a.getFloat("value"));
        return a.getBool("softmax") ? ref::softmax(scores, -1) : scores;  // as the unfused chain computes it
      }
      case OpKind::RelAttention:
        return ref::relAttention(x[0], x[1], x[2], x[3], x[4], x[5], x.size() == 7 ? &x[6] : nullptr,
                                 a.getFloat("scale"));
      case OpKind::LogprobPick:
        return ref::logprobPick(x[0], x[1], x.size() == 3 ? &x[2] : nullptr, a.getInt("offset"), a.getInt("start"),
                                a.getInt("end"), a.getInt("classes"), a.getInt("column", 0));
      case OpKind::LogprobPickGathered: {  // the unfused chain on every row: the same values where in range
        const bool bias = a.getBool("bias");
        Tensor rows = a.getBool("proj") ? ref::matmul(x[0], x.back(), false, false) : x[0];
        if (x[1].type().dtype == ir::DType::BF16) rows = ref::convert(rows, ir::DType::BF16);
        const Tensor logits = ref::linear(rows, x[1], bias ? &x[3] : nullptr, ir::DType::F32);
        return ref::logprobPick(logits, x[2], a.has("column") ? &x[3 + std::size_t(bias)] : nullptr, a.getInt("offset"),
                                a.getInt("start"), a.getInt("end"), a.getInt("classes"), a.getInt("column", 0));
      }
      case OpKind::FusedLinear:
        return ref::fusedLinear(x[0], x[1], a.getBool("bias") ? &x[2] : nullptr,
                                a.getBool("residual") ? &x.back() : nullptr, a.getBool("relu"), resultDType(op));
    }
    TXL_CHECK(false, "unknown op kind");
    return {};
  }

  ir::Graph graph_;
  const TensorMap& weights_;
  std::vector<Step> steps_;
  std::vector<Tensor> values_;  // one per step, kept until the next run
  TensorMap outputs_;
};

class ReferenceExecutor final : public Executor {
 public:
  std::string name() const override { return "reference"; }
  std::unique_ptr<CompiledGraph> compile(const ir::Graph& graph, const TensorMap& weights) override {
    return std::make_unique<ReferencePlan>(graph, weights);
  }
};

}  // namespace

std::unique_ptr<Executor> makeReferenceExecutor() { return std::make_unique<ReferenceExecutor>(); }

}  // namespace txl::backend
