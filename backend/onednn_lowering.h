// backend/onednn_lowering.h - the execution plan of the oneDNN executor and
// the per-op lowering that fills it (internal to backend/).
//
// Every value is a dense row-major tensor at a byte offset in a buffer. A
// buffer is one value in the arena (an intermediate, a node's temporary or a
// primitive's scratchpad; its address is known once the whole plan is
// lowered and the arena planned), a constant allocation, a user input
// (rebound on every run) or a user weight (bound once). dnnl::memory objects
// over arena and input buffers are listed in `bindings` and bound late.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "backend/memory_plan.h"
#include "backend/onednn_executor.h"
#include "backend/packed_weights.h"
#include "ir/graph.h"

namespace txl::backend::onednn {

enum class BufferKind { Arena, Constant, Input, Weight };

struct Buffer {
  BufferKind kind = BufferKind::Arena;
  void* ptr = nullptr;  // Input: set on every run; Arena: set once the arena is planned
  const ir::Tensor* weight = nullptr;  // Weight: the user's tensor (outlives the plan)
};

// An arena buffer's request. A value computed in place over an operand's
// value (onednn_executor.cpp) shares that one's memory: `sameAs` >= 0.
struct ArenaValue {
  int buffer = -1;
  BufferRequest request;
  int sameAs = -1;
};

// A tensor at `offset` bytes into buffer `buffer`: dense row-major, or with
// explicit `strides` (elements) for a slice viewed in place because its only
// reader is a permute, or a permute viewed in place because its only reader
// is a small-M matmul (onednn_executor.cpp); only reshape, permute and matmul
// accept one.
struct View {
  int buffer = -1;
  std::size_t offset = 0;
  ir::TensorType type;
  std::vector<std::int64_t> strides = {};  // empty: dense
};

struct Step {
  std::optional<dnnl::primitive> primitive;
  std::unordered_map<int, dnnl::memory> args;
  std::function<void()> kernel;  // an own kernel when `primitive` is empty
};

struct Binding {
  dnnl::memory mem;
  int buffer;
  std::size_t offset;
};

struct PlanInput {
  std::string name;
  ir::TensorType type;
  int buffer;
};

struct Plan {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  std::vector<Buffer> buffers;
  std::vector<std::shared_ptr<void>> storage;  // owned allocations
  std::vector<std::shared_ptr<const PackedWeight>> packs;  // packed constant weights, shared with the model's other plans
  std::vector<PackedRows> packedRows;  // user-weight rows read packed (embedding lookups read tied rows there)
  std::shared_ptr<const void> alive = std::make_shared<int>(0);  // expires with the plan (PackedWeights' readers)
  std::vector<Step> steps;
  std::vector<StepInfo> info;
  std::vector<Binding> bindings;  // memories over Input and Arena buffers (Input ones first after compile)
  std::size_t inputBindings = 0;  // how many of `bindings` are over inputs
  std::vector<PlanInput> inputs;
  ir::TensorMap outputs;
  std::vector<ArenaValue> arenaValues;
  MemoryPlan memory;  // offsets of the arena values that own their memory
  std::size_t constantBytes = 0;

  char* ptr(const View& v) const { return static_cast<char*>(buffers[v.buffer].ptr) + v.offset; }
  int addBuffer(BufferKind kind, void* ptr = nullptr) {
    buffers.push_back({kind, ptr});
    return static_cast<int>(buffers.size()) - 1;
  }
  // A fresh zeroed 64-byte aligned allocation owned by the plan.
  void* allocate(std::size_t bytes);
  // A new arena buffer of `bytes`, live during steps [first, last] of the schedule.
  int addArenaValue(std::string label, std::size_t bytes, std::size_t first, std::size_t last) {
    const int b = addBuffer(BufferKind::Arena);
    arenaValues.push_back({b, {std::move(label), bytes, first, last}, -1});
    return b;
  }
};

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
  View temp(const ir::TensorType& type);  // a fresh arena value live during this node's steps only
  std::string label(const char* what) const;  // "<what> of <op> (node <id>)" for the current node
  void addPrimitive(ir::Node n, const dnnl::primitive_desc_base& pd, const char* kind,
                    std::unordered_map<int, dnnl::memory> args);
  void addKernel(ir::Node n, const char* name, std::function<void()> kernel);
  void record(ir::Node n, const char* kind, const std::string& impl);
  bool isConstant(const View& v) const;
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
  void lowerRelScores(ir::Node n, const std::vector<View>& ops, const View& out);    // onednn_fused.cpp
  void lowerRelAttention(ir::Node n, const std::vector<View>& ops, const View& out);  // onednn_fused.cpp
  void lowerLogprobPick(ir::Node n, const std::vector<View>& ops, const View& out);  // onednn_fused.cpp
  void lowerFusedLinear(ir::Node n, const std::vector<View>& ops, const View& out);  // onednn_fused.cpp

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
dnnl::memory::dims viewStrides(const View& v);  // v's strides, in elements (denseStrides when v is dense)
dnnl::primitive_attr scratchpadAttr();

// linear: x [..., in] w [out, in] as matmul src [M, in] x weights [in, out]
// (`any` layout when anyWeights, else the ba view of w) + bias [1, out].
dnnl::matmul::primitive_desc linearPd(const dnnl::engine& eng, const ir::TensorType& x, const ir::TensorType& w,
                                      bool hasBias, bool anyWeights);
dnnl::memory::desc linearPlainWeightsMd(const ir::TensorType& w);
// matmul with ranks padded to the result's, transposes as strides; an
// operand given `strides` (elements, of its own shape) is a strided view.
struct MatMulMds {
  dnnl::memory::desc src, weights, dst;
};
MatMulMds matmulMds(const ir::TensorType& a, const ir::TensorType& b, const ir::TensorType& out, bool ta, bool tb,
                    const std::vector<std::int64_t>& aStrides = {}, const std::vector<std::int64_t>& bStrides = {});
// Rows of the query block up to which a matmul reads a permuted operand in
// place (strided) rather than after a permute's copy: measured on enwik8's
// keys and values (2,101 × 8 heads × 64, row stride 1,024): at 1 and 4 rows
// the strided read beats copy + dense read (0.16 vs 0.17 + 0.2 ms), at 16 it
// is 4x slower than the dense read.
constexpr std::int64_t kMaxRowsForStridedMatMulOperand = 4;
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
