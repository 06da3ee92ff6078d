// backend/onednn/onednn_lowering.h - the per-op lowering that fills the oneDNN
// plan (backend/onednn/onednn_plan.h) with steps (internal to backend/).
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "backend/onednn/onednn_executor.h"
#include "backend/onednn/onednn_phases.h"
#include "backend/onednn/onednn_plan.h"
#include "backend/onednn/packed_weights.h"
#include "backend/kernels/rel_attention.h"
#include "ir/graph.h"

namespace txl::backend::onednn {

// 4. Lowering (onednn_phases.h): every node of `order`, at its step, over the
// views of `placement`: appends its steps to the plan, and arena values live
// at that step for its temporaries and scratchpads; computes constants now.
// Returns the views the graph's outputs and mem_writes return. A dnnl::error
// becomes txl::InternalError and a txl::Error is rethrown, both naming the node.
PlanOutputs lowerGraph(Plan& plan, const ir::Graph& g, const std::vector<ir::Node>& order, const Placement& placement,
                       const OnednnOptions& options, PackedWeights& packs);

// Options and state the lowering of one node needs.
class Lowering {
 public:
  Lowering(Plan& plan, const ir::Graph& graph, const OnednnOptions& options, PackedWeights& packs)
      : plan_(plan), g_(graph), opt_(options), packs_(packs) {}

  // Lowers node `n`, at position `step` of the schedule, whose operands have
  // views `ops` and whose result has view `out` (already placed; `aliased`
  // when placed as a view of its first operand: reshape, a contiguous slice,
  // an output of a plan buffer). Appends steps to the plan, and arena values
  // live at `step` for its temporaries and scratchpads; computes constants now.
  void lower(ir::Node n, std::size_t step, const std::vector<View>& ops, const View& out, bool aliased);

 private:
  dnnl::memory mem(const View& v, const dnnl::memory::desc& md, std::size_t extraOffset = 0);
  dnnl::memory mem(const View& v) { return mem(v, denseMd(v.type)); }
  View temp(const ir::TensorType& type);      // a fresh arena value live during this node's steps only
  std::string label(const char* what) const;  // "<what> of <op> (node <id>)" for the current node
  void addPrimitive(ir::Node n, const dnnl::primitive_desc_base& pd, const char* kind,
                    std::unordered_map<int, dnnl::memory> args);
  void addKernel(ir::Node n, const std::string& name, std::function<void()> kernel);
  void record(ir::Node n, const char* kind, const std::string& impl);
  bool isConstant(const View& v) const;
  // Whether node `n` runs on one thread: its one-thread time estimated from
  // ir/node_cost.h is under `belowNs` (OnednnOptions::serialBelowNs or
  // idleSerialBelowNs) and the team has more than one thread.
  bool runsSerial(ir::Node n, double belowNs) const;
  // Lowers `n` for one thread (`serial`) or the team, its steps in variants `loads`.
  void lowerVariant(ir::Node n, const std::vector<View>& ops, const View& out, bool aliased, bool serial,
                    LoadSet loads);
  // The weight-packing rule of every matmul over a weight (linear,
  // fused_linear): whether weight `w` is taken in the layout the primitive
  // chooses (format `any`) and packed once per model (constantWeights),
  // rather than read in place as the plain `ba` view.
  bool packsWeight(const View& w) const;
  dnnl::memory constantWeights(const View& w, const dnnl::memory::desc& plainMd, const dnnl::memory::desc& wantMd);
  // Tells packs_ which bytes of user weights the current node reads in place
  // (its weight operands but those it packed and an embedding's table),
  // unless it only aliases them.
  void notePlainReads(const std::vector<View>& ops, bool aliased);

  void lowerNode(ir::Node n, std::size_t step, const std::vector<View>& ops, const View& out, bool aliased);
  void copy(ir::Node n, const View& src, const dnnl::memory::desc& srcMd, std::size_t srcOff, const View& dst,
            const dnnl::memory::desc& dstMd, std::size_t dstOff);
  void lowerLinear(ir::Node n, const std::vector<View>& ops, const View& out);
  void lowerMatMul(ir::Node n, const std::vector<View>& ops, const View& out);
  void lowerBinary(ir::Node n, const std::vector<View>& ops, const View& out);
  void lowerInfMaskedFill(ir::Node n, const View& x, const View& mask, const View& out, float value);
  void lowerSoftmax(ir::Node n, const View& x, const View& out, bool log);
  void lowerConcat(ir::Node n, const std::vector<View>& ops, const View& out);
  void lowerPad(ir::Node n, const View& x, const View& out);
  void lowerRelScores(ir::Node n, const std::vector<View>& ops, const View& out);     // onednn_fused.cpp
  void lowerRelAttention(ir::Node n, const std::vector<View>& ops, const View& out);  // onednn_fused.cpp
  // rel_attention's position table packed in a bf16 or rows layout (onednn_fused.cpp).
  bool positionTableSuffix(const View& rt, const kernels::RelAttentionArgs& a) const;
  const void* packPositionTable(const View& rt, const dnnl::memory::desc& plainMd, const dnnl::memory::desc& packedMd);
  kernels::PositionTable packedPositionTable(const View& rt, const kernels::RelAttentionArgs& a);
  void lowerLogprobPick(ir::Node n, const std::vector<View>& ops, const View& out);  // onednn_fused.cpp
  // logprob_pick_gathered: the rows in range gathered, the cluster's matmuls
  // on them, their log-sum-exp and pick (onednn_gathered_nll.cpp).
  void lowerLogprobPickGathered(ir::Node n, const std::vector<View>& ops, const View& out);
  void lowerFusedLinear(ir::Node n, const std::vector<View>& ops, const View& out);  // onednn_fused.cpp
  // A linear or fused_linear over a quantized weight (View::quantized):
  // txl:int8_linear on the model's int8 rows of it (onednn_int8.cpp).
  void lowerInt8Linear(ir::Node n, const std::vector<View>& ops, const View& out);
  std::shared_ptr<const kernels::Int8Rows> int8Weights(const View& w);  // onednn_int8.cpp
  // Whether a linear over int8 weights, of `rows` rows of k inputs read from
  // x (the value of node `input`), quantizes its activations
  // (txl:int8_linear:vnni) rather than widening the weights: the one rule
  // for every step that runs such a linear (onednn_int8.cpp).
  bool int8Activations(ir::Node input, const View& x, std::int64_t k) const;
  // w's int8 rows in the VNNI kernel's layout (k inputs), packed once per model (onednn_int8.cpp).
  std::shared_ptr<const kernels::Int8Vnni> int8VnniWeights(const View& w, std::int64_t k);
  // A quantize whose value some other op reads: computed every run (onednn_int8.cpp).
  void lowerQuantize(ir::Node n, const View& w, const View& out);

 public:
  static dnnl::memory::desc denseMd(const ir::TensorType& t);

 private:
  Plan& plan_;
  const ir::Graph& g_;
  const OnednnOptions& opt_;
  PackedWeights& packs_;
  ir::Node node_{};
  std::size_t step_ = 0;
  std::vector<int> packedNow_;  // weight buffers the current node reads packed
};

// --- Primitive descriptors, shared by the lowering and the target info -------

dnnl::memory::data_type dnnlType(ir::DType dtype);
dnnl::memory::dims denseStrides(const ir::Shape& shape);  // row-major, in elements
dnnl::memory::dims viewStrides(const View& v);            // v's strides, in elements (denseStrides when v is dense)
dnnl::primitive_attr scratchpadAttr();

// linear: x [..., in] w [out, in] as matmul src [M, in] x weights [in, out]
// (`any` layout when anyWeights, else the ba view of w) + bias [1, out].
// The result (and the bias) are `dst` when given, else x's dtype.
dnnl::matmul::primitive_desc linearPd(const dnnl::engine& eng, const ir::TensorType& x, const ir::TensorType& w,
                                      bool hasBias, bool anyWeights, std::optional<ir::DType> dst = std::nullopt);
// The dtype a weight view's bytes are in (View::storedAs), with its shape.
ir::TensorType storedWeightType(const View& w);
dnnl::memory::desc linearPlainWeightsMd(const ir::TensorType& w);
// matmul with ranks padded to the result's, transposes as strides; an
// operand given `strides` (elements, of its own shape) is a strided view.
struct MatMulMds {
  dnnl::memory::desc src, weights, dst;
};
MatMulMds matmulMds(const ir::TensorType& a, const ir::TensorType& b, const ir::TensorType& out, bool ta, bool tb,
                    const std::vector<std::int64_t>& aStrides = {}, const std::vector<std::int64_t>& bStrides = {});
// Rows of the query block up to which a matmul reads a permuted operand in
// place (strided) rather than after a permute's copy: with few query rows the
// strided read costs less than the copy it saves; with many, the dense read
// wins (the threshold comes from timing enwik8's keys and values; docs/LOG.md).
constexpr std::int64_t kMaxRowsForStridedMatMulOperand = 4;
// rel_attention (onednn_fused.cpp). The path of the own kernel for a node of
// shape `s` with keys and values in bf16 (kvBf16) or f32; `packable`: its
// position table is a constant the lowering may pack once per model in a
// bf16 layout (Lowering::positionTableSuffix). The one place that chooses:
// the lowering passes the result in RelAttentionArgs::path and
// kernels::relAttention runs it.
kernels::AttentionPath attentionPath(const kernels::RelAttentionShape& s, bool kvBf16, bool packable);
// Why a rel_attention node of shape `s` with keys and values of dtype `kv`
// is better left unfused (passes/fuse_attention.cpp keeps the matmuls), or
// nullopt: OnednnTargetInfo::slowPathReason's answer for it.
std::optional<std::string> unfusedAttentionReason(const kernels::RelAttentionShape& s, ir::DType kv);
dnnl::layer_normalization_forward::primitive_desc layerNormPd(const dnnl::engine& eng, const ir::TensorType& x,
                                                              float eps);
// softmax / logsoftmax over `axis` of x: [outer, A] when axis is the last
// non-trivial one, else [outer, A, inner] in the acb layout.
dnnl::softmax_forward::primitive_desc softmaxForwardPd(const dnnl::engine& eng, const ir::TensorType& x,
                                                       std::int64_t axis);
dnnl::logsoftmax_forward::primitive_desc logSoftmaxForwardPd(const dnnl::engine& eng, const ir::TensorType& x,
                                                             std::int64_t axis);
// The primitive descriptor the lowering builds for the main work of `n`;
// nullopt when `n` is no primitive (own kernel, alias, source, sink).
std::optional<dnnl::primitive_desc> mainPrimitiveDesc(const dnnl::engine& eng, const ir::Graph& g, ir::Node n);

}  // namespace txl::backend::onednn
