// backend/onednn_executor.cpp - compile a graph into a oneDNN plan; run it.
//
// Algorithm (compile):
//   1. Place every value, in topological order: inputs and mem_reads get a
//      buffer rebound on every run; weights the user's buffer; constant,
//      pos_encoding and attn_mask a constant buffer; reshape and a contiguous
//      slice alias their operand; an output aliases its operand unless that
//      lives in a user's buffer (then it gets a copy); anything else a fresh
//      value in the arena.
//   2. Liveness: an arena value lives from its definition to the last use of
//      it or of any alias of it (outputs: to the end).
//   3. In place: an elementwise-shaped op (binary, eltwise, layer_norm,
//      softmax, masked_fill, rel_scores over AC) whose operand value dies at
//      it and covers exactly its result computes into that operand's memory.
//   4. Lower every node (onednn_lowering.cpp) into steps over those views;
//      temporaries and user-mode scratchpads become arena values live during
//      their node's step.
//   5. Plan the arena (backend/memory_plan.h), allocate it, bind every memory.
// run() binds the input handles, executes the steps on one stream, waits.
#include "backend/onednn_executor.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <optional>
#include <unordered_map>

#include "backend/library_calls.h"
#include "backend/memory_plan.h"
#include "backend/onednn_lowering.h"
#include "ir/check.h"
#include "ir/shape_inference.h"

namespace txl::backend {

namespace {

using onednn::BufferKind;
using onednn::Plan;
using onednn::View;

// Whether slice `n` of a dense operand is itself a contiguous range (every dimension before the axis is 1).
bool contiguousSlice(const ir::Graph& g, ir::Node n) {
  const auto& x = g.type(g.operand(n, 0));
  const std::int64_t axis = *ir::normalizeAxis(g.op(n).attrs.getInt("axis"), x.rank());
  for (std::int64_t d = 0; d < axis; ++d)
    if (x.shape[d] != 1) return false;
  return true;
}

// The strides of a strided tensor (shape `from`, `strides`) reshaped to `to`
// without copying, or nullopt when the reshape would merge dimensions that are
// not contiguous with each other.
std::optional<std::vector<std::int64_t>> reshapeStrides(const ir::Shape& from, const std::vector<std::int64_t>& strides,
                                                        const ir::Shape& to) {
  std::vector<std::int64_t> out(to.size(), 1);
  std::size_t oi = 0, oj = 1, ni = 0, nj = 1;
  while (ni < to.size() && oi < from.size()) {
    std::int64_t np = to[ni], op = from[oi];
    while (np != op) {
      if (np < op) {
        if (nj >= to.size()) return std::nullopt;
        np *= to[nj++];
      } else {
        if (oj >= from.size()) return std::nullopt;
        op *= from[oj++];
      }
    }
    for (std::size_t k = oi; k + 1 < oj; ++k)
      if (strides[k] != from[k + 1] * strides[k + 1]) return std::nullopt;
    out[nj - 1] = strides[oj - 1];
    for (std::size_t k = nj - 1; k > ni; --k) out[k - 1] = out[k] * to[k];
    ni = nj++;
    oi = oj++;
  }
  for (; oi < from.size(); ++oi)
    if (from[oi] != 1) return std::nullopt;
  return out;  // trailing dimensions of size 1 keep stride 1
}

// Ops whose lowering reads a strided operand as it is: a permute (its
// reorder), rel_attention (its kernel takes row strides; k and v are column
// ranges of the memory window's rows).
bool readsStrided(const ir::Graph& g, ir::Node user) {
  return g.kind(user) == ir::OpKind::Permute || g.kind(user) == ir::OpKind::RelAttention;
}

// A non-contiguous slice of a dense value whose only reader reads strided
// operands, directly or through one reshape: it reads the slice in place (one
// copy into head-major layout instead of a slice copy and a permute copy; no
// copy at all for rel_attention).
bool sliceReadInPlace(const ir::Graph& g, ir::Node n, const View& x) {
  if (!x.strides.empty() || x.type.dtype == ir::DType::I64) return false;
  const auto users = g.users(n);
  if (users.size() != 1) return false;
  if (readsStrided(g, users[0])) return true;
  if (g.kind(users[0]) != ir::OpKind::Reshape) return false;
  const auto next = g.users(users[0]);
  return next.size() == 1 && readsStrided(g, next[0]) &&
         reshapeStrides(g.type(n).shape, onednn::denseStrides(x.type.shape), g.type(users[0]).shape).has_value();
}

// A permute whose only reader is a matmul with a small query block
// (onednn::kMaxRowsForStridedMatMulOperand rows): the matmul reads the
// operand in place through permuted strides, and the copy never happens. At
// one token per step this spares copying every remembered key and value.
bool permuteReadInPlace(const ir::Graph& g, ir::Node n) {
  const auto users = g.users(n);
  if (users.size() != 1 || g.kind(users[0]) != ir::OpKind::MatMul || g.type(n).dtype != ir::DType::F32) return false;
  const ir::TensorType& out = g.type(users[0]);
  return out.rank() >= 2 && out.shape[out.rank() - 2] <= onednn::kMaxRowsForStridedMatMulOperand;
}

std::string nodeName(const ir::Graph& g, ir::Node n) {
  std::string s = std::string(ir::opInfo(g.kind(n)).name) + " (node " + std::to_string(g.op(n).id);
  if (g.op(n).type) s += ", " + g.op(n).type->str();
  return s + ")";
}

class OnednnPlan final : public OnednnCompiledGraph {
 public:
  OnednnPlan(const ir::Graph& graph, const TensorMap& weights, const OnednnOptions& options,
             onednn::PackedWeights& packs) {
    compile(graph, weights, options, packs);
  }
  const TensorMap& run(const TensorMap& inputs) override;
  const std::vector<StepInfo>& steps() const override { return plan_.info; }
  std::size_t arenaBytes() const override { return plan_.memory.arenaBytes; }
  const MemoryPlan& memoryPlan() const override { return plan_.memory; }
  std::size_t constantBytes() const override { return plan_.constantBytes; }
  void setProfiling(bool on) override {
    profiling_ = on;
    stepSeconds_.assign(plan_.steps.size(), 0.0);
  }
  const std::vector<double>& stepSeconds() const override { return stepSeconds_; }

 private:
  void compile(const ir::Graph& graph, const TensorMap& weights, const OnednnOptions& options,
               onednn::PackedWeights& packs);
  void runProfiled(std::size_t& i);
  Plan plan_;
  bool profiling_ = false;
  std::vector<double> stepSeconds_;
};

// The operand whose memory node `n` may compute into (an elementwise-shaped
// op reads element i of it only to write element i), or -1.
int inPlaceOperand(const ir::Graph& g, ir::Node n) {
  switch (g.kind(n)) {
    case ir::OpKind::Add:
    case ir::OpKind::Sub:
    case ir::OpKind::Mul:  // the operand the lowering makes src0
      if (g.type(g.operand(n, 0)) == g.type(n)) return 0;
      return g.type(n).dtype == ir::DType::F32 && g.type(g.operand(n, 1)) == g.type(n) ? 1 : -1;
    case ir::OpKind::Scale:
    case ir::OpKind::Relu:
    case ir::OpKind::LayerNorm:
    case ir::OpKind::Softmax:
    case ir::OpKind::LogSoftmax:
    case ir::OpKind::MaskedFill:
      return g.type(g.operand(n, 0)) == g.type(n) ? 0 : -1;
    case ir::OpKind::RelScores:  // AC: row element j is read only to write element j (kernels::relScores)
      return g.type(g.operand(n, 0)) == g.type(n) ? 0 : -1;
    default:
      return -1;
  }
}

void OnednnPlan::compile(const ir::Graph& g, const TensorMap& weights, const OnednnOptions& options,
                         onednn::PackedWeights& packs) {
  checkWeights(g, weights);
  const std::vector<ir::Node> order = g.topologicalOrder();
  const std::size_t kForever = order.empty() ? 0 : order.size() - 1;  // results live to the last step
  auto& values = plan_.arenaValues;

  // 1. Placement. A node's view of an arena value is relative to that value's buffer.
  std::unordered_map<ir::Node, View> views;
  std::unordered_map<ir::Node, int> root;  // arena value of a node's view, or -1
  std::unordered_map<ir::Node, bool> aliased;
  std::unordered_map<std::string, int> namedBuffers;
  auto newArena = [&](ir::Node n, const ir::TensorType& type, std::size_t t) {
    root[n] = static_cast<int>(values.size());
    views[n] = View{plan_.addArenaValue(nodeName(g, n), type.bytes(), t, t), 0, type};
  };
  auto use = [&](ir::Node operand, std::size_t t) {  // 2. liveness, as the walk goes
    if (int r = root.at(operand); r >= 0) values[r].request.last = std::max(values[r].request.last, t);
  };
  for (std::size_t t = 0; t < order.size(); ++t) {
    const ir::Node n = order[t];
    const ir::OpData& op = g.op(n);
    for (ir::Node o : g.operands(n)) use(o, t);
    root[n] = -1;
    aliased[n] = false;
    switch (op.kind) {
      case ir::OpKind::Input:
      case ir::OpKind::MemRead:
      case ir::OpKind::MemWindow: {  // the caller's state window, rebound every run
        std::string name = op.kind == ir::OpKind::Input ? op.attrs.getString("name") : memName(op.attrs.getInt("slot"));
        auto [it, fresh] = namedBuffers.try_emplace("in:" + name, -1);
        if (fresh) {
          it->second = plan_.addBuffer(BufferKind::Input);
          plan_.inputs.push_back({name, *op.type, it->second});
        }
        views[n] = View{it->second, 0, *op.type};
        break;
      }
      case ir::OpKind::Weight: {
        const std::string& name = op.attrs.getString("name");
        auto [it, fresh] = namedBuffers.try_emplace("w:" + name, -1);
        if (fresh) {
          const ir::Tensor& w = weights.at(name);
          it->second = plan_.addBuffer(BufferKind::Weight, const_cast<void*>(w.raw()));
          plan_.buffers[it->second].weight = &w;
        }
        views[n] = View{it->second, 0, *op.type};
        break;
      }
      case ir::OpKind::Constant:
      case ir::OpKind::PosEncoding:
      case ir::OpKind::AttnMask:
        views[n] = View{plan_.addBuffer(BufferKind::Constant, plan_.allocate(op.type->bytes())), 0, *op.type};
        plan_.constantBytes += op.type->bytes();
        break;
      case ir::OpKind::Permute:
        if (permuteReadInPlace(g, n)) {  // a view: the operand's strides, permuted
          const View& xv = views.at(g.operand(n, 0));
          const auto from = onednn::viewStrides(xv);
          View v = xv;
          v.type = *op.type;
          v.strides.clear();
          for (std::int64_t axis : op.attrs.getInts("perm")) v.strides.push_back(from[axis]);
          views[n] = v;
          root[n] = root.at(g.operand(n, 0));
          aliased[n] = true;
        } else {
          newArena(n, *op.type, t);
        }
        break;
      case ir::OpKind::Reshape:
      case ir::OpKind::Slice:
      case ir::OpKind::Output:
      case ir::OpKind::MemWrite: {
        const ir::Node x = g.operand(n, 0);
        const View& xv = views.at(x);
        const BufferKind k = plan_.buffers[xv.buffer].kind;
        const bool sink = op.kind == ir::OpKind::Output || op.kind == ir::OpKind::MemWrite;
        const ir::TensorType type = sink ? xv.type : *op.type;
        const bool inPlace = op.kind == ir::OpKind::Slice && !contiguousSlice(g, n) && sliceReadInPlace(g, n, xv);
        bool alias = op.kind == ir::OpKind::Reshape || (op.kind == ir::OpKind::Slice && contiguousSlice(g, n)) ||
                     inPlace || (sink && k != BufferKind::Input && k != BufferKind::Weight);
        if (!alias) {
          newArena(n, type, t);
          if (sink) values.back().request.last = kForever;
          break;
        }
        View v = xv;
        v.type = type;
        if (op.kind == ir::OpKind::Slice) {
          const std::int64_t axis = *ir::normalizeAxis(op.attrs.getInt("axis"), xv.type.rank());
          v.offset += op.attrs.getInt("start") * onednn::denseStrides(xv.type.shape)[axis] * ir::dtypeSize(type.dtype);
          if (inPlace) v.strides = onednn::denseStrides(xv.type.shape);
        }
        if (op.kind == ir::OpKind::Reshape && !xv.strides.empty())
          v.strides = *reshapeStrides(xv.type.shape, xv.strides, type.shape);  // checked by sliceReadInPlace
        views[n] = v;
        root[n] = root.at(x);
        aliased[n] = true;
        if (sink && root[n] >= 0) values[root[n]].request.last = kForever;
        break;
      }
      case ir::OpKind::Add:
      case ir::OpKind::Sub:
      case ir::OpKind::Mul:
      case ir::OpKind::Scale:
      case ir::OpKind::Relu:
      case ir::OpKind::MaskedFill:
      case ir::OpKind::Concat:
      case ir::OpKind::Pad:
      case ir::OpKind::Embedding:
      case ir::OpKind::Linear:
      case ir::OpKind::MatMul:
      case ir::OpKind::LayerNorm:
      case ir::OpKind::Softmax:
      case ir::OpKind::LogSoftmax:
      case ir::OpKind::RelShift:
      case ir::OpKind::Pick:
      case ir::OpKind::RelScores:
      case ir::OpKind::RelAttention:
      case ir::OpKind::LogprobPick:
      case ir::OpKind::FusedLinear:
        newArena(n, *op.type, t);
        break;
    }
  }

  // 3. In place, in schedule order: n's value joins the memory of its
  // operand's value when that dies at n (its whole group's last use is n's
  // step), is viewed whole and dense, and no other operand reads it.
  auto owner = [&](int v) {
    while (values[v].sameAs >= 0) v = values[v].sameAs;
    return v;
  };
  for (std::size_t t = 0; t < order.size(); ++t) {
    const ir::Node n = order[t];
    const int k = root.at(n) >= 0 && !aliased.at(n) ? inPlaceOperand(g, n) : -1;
    if (k < 0) continue;
    const ir::Node x = g.operand(n, k);
    if (root.at(x) < 0) continue;
    const int r = owner(root.at(x));
    const View& xv = views.at(x);
    const bool whole = xv.offset == 0 && xv.strides.empty() && xv.type.bytes() == values[r].request.bytes &&
                       values[root.at(x)].buffer == xv.buffer;
    bool shared = false;
    for (std::size_t i = 0; i < g.operands(n).size(); ++i)
      if (int ri = root.at(g.operand(n, i)); i != std::size_t(k) && ri >= 0 && owner(ri) == r) shared = true;
    if (!whole || shared || values[r].request.last != t) continue;
    onednn::ArenaValue& v = values[root.at(n)];
    v.sameAs = r;
    values[r].request.last = v.request.last;
    values[r].request.label += ", " + v.request.label + " in place";
  }

  // 4. Lowering.
  onednn::Lowering lowering(plan_, g, options, packs);
  std::vector<std::pair<std::string, View>> outputs;
  for (std::size_t t = 0; t < order.size(); ++t) {
    const ir::Node n = order[t];
    std::vector<View> ops;
    for (ir::Node o : g.operands(n)) ops.push_back(views.at(o));
    const View out = views.count(n) ? views.at(n) : View{};
    try {
      lowering.lower(n, t, ops, out, aliased.at(n));
    } catch (const dnnl::error& e) {
      throw InternalError("oneDNN lowering of " + nodeName(g, n) + ": " + e.what());
    } catch (const Error& e) {
      throw Error("oneDNN lowering of " + nodeName(g, n) + ": " + e.what());
    }
    const ir::OpKind kind = g.kind(n);
    if (kind == ir::OpKind::Output || kind == ir::OpKind::MemWrite)
      outputs.emplace_back(kind == ir::OpKind::Output ? g.op(n).attrs.getString("name")
                                                      : memName(g.op(n).attrs.getInt("slot")),
                           out);
  }

  // 5. The arena: offsets for the values that own their memory, then every
  // arena buffer's address and every late binding; input bindings first.
  std::vector<BufferRequest> requests;
  std::vector<int> slot(values.size(), -1);  // a value's index in the plan
  for (std::size_t i = 0; i < values.size(); ++i)
    if (values[i].sameAs < 0) {
      slot[i] = static_cast<int>(requests.size());
      requests.push_back(values[i].request);
    }
  if (options.releasePackedPlainPages) packs.releasePlainPages();
  plan_.memory = planMemory(requests);
  if (std::string clash = findConflict(plan_.memory); !clash.empty())
    throw InternalError("arena plan overlaps live buffers " + clash);
  char* arena = static_cast<char*>(plan_.allocate(plan_.memory.arenaBytes));
  for (std::size_t i = 0; i < values.size(); ++i)
    plan_.buffers[values[i].buffer].ptr = arena + plan_.memory.buffers[slot[owner(static_cast<int>(i))]].offset;
  for (const auto& [name, view] : outputs) plan_.outputs[name] = ir::Tensor(view.type, plan_.ptr(view), nullptr);
  std::stable_partition(plan_.bindings.begin(), plan_.bindings.end(),
                        [&](const onednn::Binding& b) { return plan_.buffers[b.buffer].kind == BufferKind::Input; });
  for (const onednn::Binding& b : plan_.bindings) {
    if (plan_.buffers[b.buffer].kind == BufferKind::Input)
      ++plan_.inputBindings;
    else
      b.mem.set_data_handle(static_cast<char*>(plan_.buffers[b.buffer].ptr) + b.offset);
  }
}

const TensorMap& OnednnPlan::run(const TensorMap& inputs) {
  for (const onednn::PlanInput& in : plan_.inputs) {
    auto it = inputs.find(in.name);
    if (it == inputs.end()) throw Error("input '" + in.name + "' is missing");
    if (it->second.type() != in.type)
      throw Error("input '" + in.name + "': expected " + in.type.str() + ", got " + it->second.type().str());
    plan_.buffers[in.buffer].ptr = const_cast<void*>(it->second.raw());
  }
  std::size_t i = 0;
  try {
    for (std::size_t b = 0; b < plan_.inputBindings; ++b) {
      const onednn::Binding& bind = plan_.bindings[b];
      LibraryCall call;
      bind.mem.set_data_handle(static_cast<char*>(plan_.buffers[bind.buffer].ptr) + bind.offset);
    }
    if (profiling_) runProfiled(i);
    for (; i < plan_.steps.size(); ++i) {
      onednn::Step& s = plan_.steps[i];
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
    LibraryCall call;
    plan_.stream.wait();
  } catch (const dnnl::error& e) {
    std::string where = i < plan_.info.size() ? plan_.info[i].op + " (node " + std::to_string(plan_.info[i].node) + ")"
                                              : std::string("input binding");
    throw InternalError("oneDNN execution of " + where + ": " + e.what());
  }
  return plan_.outputs;
}

// run()'s loop with a wait and a clock reading around every step.
void OnednnPlan::runProfiled(std::size_t& i) {
  plan_.stream.wait();
  for (; i < plan_.steps.size(); ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    onednn::Step& s = plan_.steps[i];
    if (s.primitive) s.primitive->execute(plan_.stream, s.args);
    else s.kernel();
    plan_.stream.wait();
    stepSeconds_[i] += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
}

class OnednnExecutor final : public Executor {
 public:
  explicit OnednnExecutor(const OnednnOptions& options)
      : options_(options), packs_(options.releasePackedPlainPages) {}
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
