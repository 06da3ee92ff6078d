// backend/onednn/onednn_lowering.cpp - one case per op kind: the steps (primitives
// with argument maps, or own kernels) that compute a node into its view.
//
// Values are dense row-major; strided access (transposes, slices, permutes,
// pad interiors) is expressed by memory descriptors with explicit strides
// over the producer's buffer, with handles offset by the view's start.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <new>

#include <omp.h>

#include "backend/kernels/gemv.h"
#include "backend/onednn/onednn_kernels.h"
#include "backend/onednn/onednn_lowering.h"
#include "backend/onednn/onednn_probe.h"
#include "ir/check.h"
#include "ir/host_memory.h"
#include "ir/node_cost.h"
#include "ir/shape_inference.h"

namespace txl::backend::onednn {

using dnnl::memory;

void* Plan::allocate(std::size_t bytes) {
  try {
    storage.push_back(ir::allocateZeroed(bytes));
  } catch (const std::bad_alloc&) {
    throw Error("out of memory allocating " + std::to_string(bytes) + " bytes");
  }
  return storage.back().get();
}

dnnl::memory Lowering::mem(const View& v, const memory::desc& md, std::size_t extraOffset) {
  const Buffer& b = plan_.buffers[v.buffer];
  const bool late = b.kind == BufferKind::Input || b.kind == BufferKind::Arena;
  void* p = late ? nullptr : plan_.ptr(v) + extraOffset;
  dnnl::memory m(md, plan_.engine, p);
  if (late) plan_.bindings.push_back({m, v.buffer, v.offset + extraOffset});
  return m;
}

View Lowering::temp(const ir::TensorType& type) {
  return View{plan_.addArenaValue(label("temporary"), type.bytes(), step_, step_), 0, type};
}

std::string Lowering::label(const char* what) const {
  return std::string(what) + " of " + std::string(ir::opInfo(g_.kind(node_)).name) + " (node " +
         std::to_string(g_.op(node_).id) + ")";
}

void Lowering::record(ir::Node n, const char* kind, const std::string& impl) {
  plan_.info.push_back({std::string(ir::opInfo(g_.kind(n)).name), g_.op(n).id, kind, impl});
}

void Lowering::addPrimitive(ir::Node n, const dnnl::primitive_desc_base& pd, const char* kind,
                            std::unordered_map<int, memory> args) {
  const std::size_t scratch = pd.scratchpad_desc().get_size();
  if (scratch > 0) {  // user mode: carved from the arena, live during this step only
    const View pad{plan_.addArenaValue(label("scratchpad"), scratch, step_, step_), 0, {}};
    args[DNNL_ARG_SCRATCHPAD] = mem(pad, pd.scratchpad_desc());
  }
  plan_.steps.push_back({dnnl::primitive(pd.get()), std::move(args), {}});
  record(n, kind, pd.impl_info_str());
}

void Lowering::addKernel(ir::Node n, const std::string& name, std::function<void()> kernel) {
  plan_.steps.push_back({std::nullopt, {}, std::move(kernel)});
  record(n, "kernel", name);
}

namespace {

// Sets OpenMP's thread count to 1 for its lifetime when `on` and the team is
// larger: a primitive created meanwhile fixes its partition for one thread.
class OneThread {
 public:
  explicit OneThread(bool on) : team_(on ? omp_get_max_threads() : 1) {
    if (team_ > 1) omp_set_num_threads(1);
  }
  ~OneThread() {
    if (team_ > 1) omp_set_num_threads(team_);
  }
  OneThread(const OneThread&) = delete;
  OneThread& operator=(const OneThread&) = delete;

 private:
  int team_;
};

// One core's rough rates for the estimate of runsSerial().
constexpr double kBytesPerNs = 20;  // 20 GB/s
constexpr double kFlopsPerNs = 60;  // 60 GFLOP/s
// Embedding tables above this many bytes are unmapped row by row as they are read.
constexpr std::size_t kUnmappedTableBytes = std::size_t(16) << 20;

}  // namespace

bool Lowering::runsSerial(ir::Node n, double belowNs) const {
  if (belowNs <= 0 || omp_get_max_threads() == 1) return false;
  // The larger of its memory time and its compute time (a roofline: a step's
  // loads and products overlap). A sum would count a one-row attention's
  // few products on top of the stream of keys and values they wait for.
  const double ns = std::max(ir::nodeBytes(g_, n) / kBytesPerNs, ir::matrixProductFlops(g_, n) / kFlopsPerNs);
  return ns < belowNs;
}

bool Lowering::isConstant(const View& v) const {
  BufferKind k = plan_.buffers[v.buffer].kind;
  return k == BufferKind::Weight || k == BufferKind::Constant;
}

// A constant weight is packed when blocked weights are on and it is at most
// maxBlockedWeightBytes, or larger but file-backed with its plain pages
// released once packed (then the pack replaces the plain copy in memory
// instead of doubling it). A weight computed at run time is never packed.
bool Lowering::packsWeight(const View& w) const {
  if (w.storedAs) return true;  // a converted constant exists only packed
  if (!isConstant(w) || !opt_.blockedWeights) return false;
  if (w.type.bytes() <= opt_.maxBlockedWeightBytes) return true;
  const ir::Tensor* user = plan_.buffers[w.buffer].weight;
  return user && user->fileBacked() && opt_.releasePackedPlainPages;
}

ir::TensorType storedWeightType(const View& w) { return {w.storedAs.value_or(w.type.dtype), w.type.shape}; }

// A constant weight in the layout `wantMd`: bound as is when that is its
// plain layout, else the model's packed copy (backend/onednn/packed_weights.h),
// made now if no live plan holds it yet.
dnnl::memory Lowering::constantWeights(const View& w, const memory::desc& plainMd, const memory::desc& wantMd) {
  if (wantMd == plainMd) return mem(w, plainMd);
  const PackedWeights::Source source{plan_.buffers[w.buffer].weight, w.offset};
  auto packed = packs_.get(plan_.ptr(w), plainMd, wantMd, plan_.engine, nullptr, &source);
  plan_.countShared(packed.get(), wantMd.get_size());
  plan_.packs.push_back(packed);
  packedNow_.push_back(w.buffer);
  if (const ir::Tensor* t = plan_.buffers[w.buffer].weight) {
    packs_.notePacked(*t, w.offset, plainMd.get_size());
    // Rows [N, K] of the user's weight; lookupRows reads f32 packs only.
    if (w.strides.empty() && w.type.rank() == 2 && !w.storedAs && wantMd.data.data_type == dnnl_f32)
      plan_.packedRows.push_back({plan_.ptr(w), plan_.ptr(w) + w.type.bytes(),
                                  std::size_t(w.type.shape[1]) * ir::dtypeSize(w.type.dtype), packed});
  }
  return packed->mem;
}

void Lowering::notePlainReads(const std::vector<View>& ops, bool aliased) {
  // An embedding lookup reads only the rows of its tokens: it faults those
  // pages back in as it goes, and must not keep the whole table resident.
  const bool gather = g_.kind(node_) == ir::OpKind::Embedding;
  if (!aliased)
    for (std::size_t i = 0; i < ops.size(); ++i) {
      const View& v = ops[i];
      const Buffer& b = plan_.buffers[v.buffer];
      if (b.kind != BufferKind::Weight || (gather && i == 0) ||
          std::find(packedNow_.begin(), packedNow_.end(), v.buffer) != packedNow_.end())
        continue;
      if (v.strides.empty()) packs_.notePlainRead(b.weight, plan_.ptr(v), v.type.bytes(), plan_.alive);
      else  // the whole tensor
        packs_.notePlainRead(b.weight, b.ptr, b.weight ? b.weight->bytes() : v.offset + v.type.bytes(), plan_.alive);
    }
  packedNow_.clear();
}

// A reorder from (src, srcMd at +srcOff bytes) to (dst, dstMd at +dstOff);
// i64 data goes through the strided-copy kernel.
void Lowering::copy(ir::Node n, const View& src, const memory::desc& srcMd, std::size_t srcOff, const View& dst,
                    const memory::desc& dstMd, std::size_t dstOff) {
  auto pd = dnnl::reorder::primitive_desc(plan_.engine, srcMd, plan_.engine, dstMd, scratchpadAttr());
  addPrimitive(n, pd, "reorder", {{DNNL_ARG_FROM, mem(src, srcMd, srcOff)}, {DNNL_ARG_TO, mem(dst, dstMd, dstOff)}});
}

void Lowering::lowerLinear(ir::Node n, const std::vector<View>& ops, const View& out) {
  const View& x = ops[0];
  const View& w = ops[1];
  if (w.quantized) return lowerInt8Linear(n, ops, out);
  const bool constW = packsWeight(w);
  auto pd = linearPd(plan_.engine, x.type, w.type, ops.size() == 3, constW, out.type.dtype);
  memory::desc plainMd = linearPlainWeightsMd(storedWeightType(w));
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, mem(x, pd.src_desc())}, {DNNL_ARG_DST, mem(out, pd.dst_desc())}};
  args[DNNL_ARG_WEIGHTS] = constW ? constantWeights(w, plainMd, pd.weights_desc()) : mem(w, pd.weights_desc());
  if (ops.size() == 3) args[DNNL_ARG_BIAS] = mem(ops[2], pd.bias_desc());
  addPrimitive(n, pd, "matmul", std::move(args));
}

namespace {
// The gemv layout of a matmul with one row per batch index whose operands
// have the result's batch dimensions (no broadcast), whose B has unit
// stride along n and whose result rows are dense, or nullopt.
std::optional<kernels::GemvLayout> gemvLayout(const MatMulMds& mds, const ir::TensorType& out) {
  const int rank = mds.dst.data.ndims;
  if (out.dtype != ir::DType::F32 || rank < 2 || mds.dst.data.dims[rank - 2] != 1) return std::nullopt;
  const auto& a = mds.src.data;
  const auto& b = mds.weights.data;
  const auto& c = mds.dst.data;
  for (int d = 0; d < rank - 2; ++d)
    if (a.dims[d] != c.dims[d] || b.dims[d] != c.dims[d]) return std::nullopt;
  const auto &as = a.format_desc.blocking.strides, &bs = b.format_desc.blocking.strides,
             &cs = c.format_desc.blocking.strides;
  kernels::GemvLayout l;
  l.k = a.dims[rank - 1];
  l.n = c.dims[rank - 1];
  l.aK = as[rank - 1];
  l.bK = bs[rank - 2];
  if (bs[rank - 1] != 1 || cs[rank - 1] != 1) return std::nullopt;
  l.batch = 1;
  for (int d = 0; d < rank - 2; ++d) l.batch *= c.dims[d];
  for (std::int64_t i = 0; i < l.batch; ++i) {  // batch index i as a multi-index, last dimension fastest
    std::int64_t rest = i, oa = 0, ob = 0, oc = 0;
    for (int d = rank - 3; d >= 0; --d) {
      const std::int64_t x = rest % c.dims[d];
      rest /= c.dims[d];
      oa += x * as[d], ob += x * bs[d], oc += x * cs[d];
    }
    l.a.push_back(oa), l.b.push_back(ob), l.c.push_back(oc);
  }
  if (!kernels::gemvSupports(l)) return std::nullopt;
  return l;
}
}  // namespace

void Lowering::lowerMatMul(ir::Node n, const std::vector<View>& ops, const View& out) {
  const auto& attrs = g_.op(n).attrs;
  auto mds = matmulMds(ops[0].type, ops[1].type, out.type, attrs.getBool("transpose_a"), attrs.getBool("transpose_b"),
                       ops[0].strides, ops[1].strides);
  const bool f32 = ops[0].type.dtype == ir::DType::F32 && ops[1].type.dtype == ir::DType::F32;
  if (auto layout = gemvLayout(mds, out.type); layout && f32 && opt_.ownGemv) {
    addKernel(n, "txl:gemv", [p = &plan_, a = ops[0], b = ops[1], c = out, l = std::move(*layout), t = threadCount()] {
      kernels::gemv(reinterpret_cast<const float*>(p->ptr(a)), reinterpret_cast<const float*>(p->ptr(b)),
                    reinterpret_cast<float*>(p->ptr(c)), l, t);
    });
    return;
  }
  dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(mds.src, mds.weights, mds.dst), scratchpadAttr(), plan_.engine);
  addPrimitive(n, pd, "matmul",
               {{DNNL_ARG_SRC, mem(ops[0], mds.src)},
                {DNNL_ARG_WEIGHTS, mem(ops[1], mds.weights)},
                {DNNL_ARG_DST, mem(out, mds.dst)}});
}

namespace {
// Strides (elements) of `t` seen in `rank` dimensions broadcast to `shape`: 0 where broadcast.
std::vector<std::int64_t> broadcastStrides(const ir::TensorType& t, const ir::Shape& shape) {
  const std::size_t rank = shape.size(), pad = rank - t.shape.size();
  ir::Shape padded(pad, 1);
  padded.insert(padded.end(), t.shape.begin(), t.shape.end());
  auto strides = denseStrides(padded);
  for (std::size_t d = 0; d < rank; ++d)
    if (padded[d] == 1 && shape[d] != 1) strides[d] = 0;
  return strides;
}
// k when t, padded to shape's rank, equals shape on its first k dimensions
// and is 1 on the rest (0 < k < rank, some trailing dimension of shape > 1); else 0.
std::int64_t leadingBroadcastSplit(const ir::TensorType& t, const ir::Shape& shape) {
  const std::size_t rank = shape.size(), pad = rank - t.shape.size();
  auto dim = [&](std::size_t d) { return d < pad ? std::int64_t(1) : t.shape[d - pad]; };
  std::size_t k = 0;
  while (k < rank && dim(k) == shape[k]) ++k;
  if (k == 0 || k == rank) return 0;
  bool broadcast = false;
  for (std::size_t d = k; d < rank; ++d) {
    if (dim(d) != 1) return 0;
    broadcast |= shape[d] > 1;
  }
  return broadcast ? std::int64_t(k) : 0;
}
memory::desc paddedMd(const ir::TensorType& t, std::size_t rank) {
  if (rank == 0) return Lowering::denseMd(t);
  ir::Shape padded(rank - t.shape.size(), 1);
  padded.insert(padded.end(), t.shape.begin(), t.shape.end());
  return memory::desc(padded, dnnlType(t.dtype), denseStrides(padded));
}
}  // namespace

void Lowering::lowerBinary(ir::Node n, const std::vector<View>& ops, const View& out) {
  const ir::OpKind kind = g_.kind(n);
  const int code = kind == ir::OpKind::Add ? 0 : kind == ir::OpKind::Sub ? 1 : 2;
  const ir::Shape& shape = out.type.shape;
  if (out.type.dtype == ir::DType::I64) {
    addKernel(n, "txl:binary_i64",
              [p = &plan_, a = ops[0], b = ops[1], out, code, shape, sa = broadcastStrides(ops[0].type, shape),
               sb = broadcastStrides(ops[1].type, shape)] {
                kernels::binaryI64(reinterpret_cast<const std::int64_t*>(p->ptr(a)), sa.data(),
                                   reinterpret_cast<const std::int64_t*>(p->ptr(b)), sb.data(),
                                   reinterpret_cast<std::int64_t*>(p->ptr(out)), shape, code);
              });
    return;
  }
  static const dnnl::algorithm algs[] = {dnnl::algorithm::binary_add, dnnl::algorithm::binary_sub,
                                         dnnl::algorithm::binary_mul};
  const std::size_t rank = shape.size();
  View src0 = ops[0], src1 = ops[1];
  auto attr = scratchpadAttr();
  memory::desc dstMd = denseMd(out.type);
  if (ops[0].type.shape != shape) {
    if (ops[1].type.shape == shape) {
      std::swap(src0, src1);  // a + b = b + a; a * b = b * a; a - b = -(b - a)
      if (code == 1) {
        dnnl::post_ops po;
        po.append_eltwise(1.0f, dnnl::algorithm::eltwise_linear, -1.0f, 0.0f);
        attr.set_post_ops(po);
      }
    } else {
      // Neither operand has the result's shape: broadcast a into the result, then combine in place.
      addKernel(n, "txl:broadcast",
                [p = &plan_, a = ops[0], out, sa = broadcastStrides(ops[0].type, shape), sd = denseStrides(shape)] {
                  kernels::stridedCopy(p->ptr(a), sa.data(), p->ptr(out), sd.data(), out.type.shape,
                                       ir::dtypeSize(out.type.dtype));
                });
      src0 = out;
    }
  }
  memory::desc src0Md = paddedMd(src0.type, rank), src1Md = paddedMd(src1.type, rank);
  if (src0.buffer == out.buffer && src0.offset == out.offset) src0Md = dstMd;
  // src1 [lead..., 1...] against [lead..., trail...]: oneDNN 2.6 runs that
  // broadcast as ref:any (~100x slower); seen as [1, lead, trail] against
  // [1, lead, 1] it is a per-channel broadcast, which jit:uni takes.
  if (const std::int64_t lead = leadingBroadcastSplit(src1.type, shape); lead > 0) {
    std::int64_t outer = 1, inner = 1;
    for (std::size_t d = 0; d < rank; ++d) (std::int64_t(d) < lead ? outer : inner) *= shape[d];
    dstMd = memory::desc({1, outer, inner}, dnnlType(out.type.dtype), memory::format_tag::abc);
    src0Md = dstMd;
    src1Md = memory::desc({1, outer, 1}, dnnlType(src1.type.dtype), memory::format_tag::abc);
  }
  dnnl::binary::primitive_desc pd(dnnl::binary::desc(algs[code], src0Md, src1Md, dstMd), attr, plan_.engine);
  addPrimitive(
      n, pd, "binary",
      {{DNNL_ARG_SRC_0, mem(src0, src0Md)}, {DNNL_ARG_SRC_1, mem(src1, src1Md)}, {DNNL_ARG_DST, mem(out, dstMd)}});
}

// masked_fill with -inf (+inf) and a mask known at compile time: min (max)
// with a constant of the mask's shape holding the fill where masked and +inf
// (-inf) elsewhere; a multi-threaded binary instead of a plain loop.
void Lowering::lowerInfMaskedFill(ir::Node n, const View& x, const View& mask, const View& out, float value) {
  const std::int64_t count = mask.type.numel();
  auto* bound = static_cast<float*>(plan_.allocate(mask.type.bytes()));
  plan_.constantBytes += mask.type.bytes();
  const float* m = reinterpret_cast<const float*>(plan_.ptr(mask));
  for (std::int64_t i = 0; i < count; ++i) bound[i] = m[i] != 0.0f ? value : -value;
  const View boundView{plan_.addBuffer(BufferKind::Constant, bound), 0, mask.type};
  memory::desc dstMd = denseMd(out.type), boundMd = paddedMd(mask.type, out.type.shape.size());
  auto alg = value < 0 ? dnnl::algorithm::binary_min : dnnl::algorithm::binary_max;
  dnnl::binary::primitive_desc pd(dnnl::binary::desc(alg, dstMd, boundMd, dstMd), scratchpadAttr(), plan_.engine);
  addPrimitive(
      n, pd, "binary",
      {{DNNL_ARG_SRC_0, mem(x, dstMd)}, {DNNL_ARG_SRC_1, mem(boundView, boundMd)}, {DNNL_ARG_DST, mem(out, dstMd)}});
}

void Lowering::lowerSoftmax(ir::Node n, const View& x, const View& out, bool log) {
  const std::int64_t axis = *ir::normalizeAxis(g_.op(n).attrs.getInt("axis"), x.type.rank());
  dnnl::primitive_desc pd = log ? dnnl::primitive_desc(logSoftmaxForwardPd(plan_.engine, x.type, axis))
                                : dnnl::primitive_desc(softmaxForwardPd(plan_.engine, x.type, axis));
  const char* kind = log ? "logsoftmax" : "softmax";
  memory::desc md = pd.src_desc();
  if (md.dims().size() == 2) {  // the axis is innermost already
    addPrimitive(n, pd, kind, {{DNNL_ARG_SRC, mem(x, md)}, {DNNL_ARG_DST, mem(out, md)}});
    return;
  }
  // [outer, A, inner]: to acb (axis innermost), softmax in place, back to abc.
  memory::dims dims = md.dims();
  memory::desc dense(dims, md.data_type(), memory::format_tag::abc);
  View t = temp(x.type);
  copy(n, x, dense, 0, t, md, 0);
  addPrimitive(n, pd, kind, {{DNNL_ARG_SRC, mem(t, md)}, {DNNL_ARG_DST, mem(t, md)}});
  copy(n, t, md, 0, out, dense, 0);
}

void Lowering::lowerConcat(ir::Node n, const std::vector<View>& ops, const View& out) {
  const std::int64_t axis = *ir::normalizeAxis(g_.op(n).attrs.getInt("axis"), out.type.rank());
  std::vector<View> srcs;
  for (const View& v : ops)
    if (v.type.numel() > 0) srcs.push_back(v);
  if (srcs.empty()) return;
  const auto outStrides = denseStrides(out.type.shape);
  if (out.type.dtype == ir::DType::I64 || srcs.size() == 1) {
    // Copy each operand into its slab of the result.
    std::size_t off = 0;
    for (const View& v : ops) {
      if (v.type.numel() > 0) {
        if (out.type.dtype == ir::DType::I64) {
          addKernel(n, "txl:strided_copy",
                    [p = &plan_, v, out, off, outStrides, srcStrides = denseStrides(v.type.shape)] {
                      kernels::stridedCopy(p->ptr(v), srcStrides.data(), p->ptr(out) + off, outStrides.data(),
                                           v.type.shape, sizeof(std::int64_t));
                    });
        } else {
          copy(n, v, denseMd(v.type), 0, out, memory::desc(v.type.shape, dnnlType(v.type.dtype), outStrides), off);
        }
      }
      off += v.type.shape[axis] * outStrides[axis] * ir::dtypeSize(v.type.dtype);
    }
    return;
  }
  std::vector<memory::desc> mds;
  for (const View& v : srcs) mds.push_back(denseMd(v.type));
  dnnl::concat::primitive_desc pd(denseMd(out.type), static_cast<int>(axis), mds, plan_.engine, scratchpadAttr());
  std::unordered_map<int, memory> args{{DNNL_ARG_DST, mem(out)}};
  for (std::size_t i = 0; i < srcs.size(); ++i) args[DNNL_ARG_MULTIPLE_SRC + int(i)] = mem(srcs[i], mds[i]);
  addPrimitive(n, pd, "concat", std::move(args));
}

void Lowering::lowerPad(ir::Node n, const View& x, const View& out) {
  const auto& attrs = g_.op(n).attrs;
  const std::int64_t axis = *ir::normalizeAxis(attrs.getInt("axis"), x.type.rank());
  const std::int64_t before = attrs.getInt("before"), after = attrs.getInt("after");
  const double value = attrs.getFloat("value");
  std::int64_t outer = 1, inner = 1;
  for (std::int64_t d = 0; d < axis; ++d) outer *= x.type.shape[d];
  for (std::int64_t d = axis + 1; d < x.type.rank(); ++d) inner *= x.type.shape[d];
  const std::int64_t mid = x.type.shape[axis];
  if (before + after > 0 && out.type.numel() > 0)
    addKernel(n, "txl:pad_fill", [p = &plan_, out, outer, before, mid, after, inner, value] {
      kernels::padFill(p->ptr(out), out.type.dtype, outer, before, mid, after, inner, value);
    });
  if (x.type.numel() == 0) return;
  const auto outStrides = denseStrides(out.type.shape);
  const std::size_t off = before * outStrides[axis] * ir::dtypeSize(x.type.dtype);
  if (x.type.dtype == ir::DType::I64) {
    addKernel(n, "txl:strided_copy", [p = &plan_, x, out, off, outStrides, srcStrides = denseStrides(x.type.shape)] {
      kernels::stridedCopy(p->ptr(x), srcStrides.data(), p->ptr(out) + off, outStrides.data(), x.type.shape,
                           sizeof(std::int64_t));
    });
    return;
  }
  copy(n, x, denseMd(x.type), 0, out, memory::desc(x.type.shape, dnnlType(x.type.dtype), outStrides), off);
}

PlanOutputs lowerGraph(Plan& plan, const ir::Graph& g, const std::vector<ir::Node>& order, const Placement& placement,
                       const OnednnOptions& options, PackedWeights& packs) {
  Lowering lowering(plan, g, options, packs);
  PlanOutputs outputs;
  for (std::size_t t = 0; t < order.size(); ++t) {
    const ir::Node n = order[t];
    std::vector<View> ops;
    for (ir::Node o : g.operands(n)) ops.push_back(placement.at(o).view);
    const PlacedValue& placed = placement.at(n);
    try {
      lowering.lower(n, t, ops, placed.view, placed.aliased);
    } catch (const dnnl::error& e) {
      throw InternalError("oneDNN lowering of " + nodeName(g, n) + ": " + e.what());
    } catch (const Error& e) {
      throw Error("oneDNN lowering of " + nodeName(g, n) + ": " + e.what());
    }
    const ir::OpKind kind = g.kind(n);
    if (kind == ir::OpKind::Output || kind == ir::OpKind::MemWrite)
      outputs.emplace_back(
          kind == ir::OpKind::Output ? g.op(n).attrs.getString("name") : memName(g.op(n).attrs.getInt("slot")),
          placed.view);
  }
  return outputs;
}

// The node is lowered once, or - under ThreadPolicy::Auto, when the two
// thresholds place it differently - twice: for one thread (the Loaded
// variant) and for the team (Idle), each run taking one of the two
// (backend/onednn/thread_policy.h). A node that adds no step (a constant, an
// alias) is lowered once.
void Lowering::lower(ir::Node n, std::size_t step, const std::vector<View>& ops, const View& out, bool aliased) {
  step_ = step;
  const bool loaded = runsSerial(n, opt_.serialBelowNs);
  const bool idle = runsSerial(n, std::min(opt_.idleSerialBelowNs, opt_.serialBelowNs));
  switch (opt_.threadPolicy) {
    case ThreadPolicy::Loaded:
      lowerVariant(n, ops, out, aliased, loaded, kEveryLoad);
      break;
    case ThreadPolicy::Idle:
      lowerVariant(n, ops, out, aliased, idle, kEveryLoad);
      break;
    case ThreadPolicy::Auto:
      if (loaded == idle) {
        lowerVariant(n, ops, out, aliased, loaded, kEveryLoad);
      } else {
        const std::size_t first = plan_.steps.size();
        lowerVariant(n, ops, out, aliased, loaded, loadBit(Load::Loaded));
        if (plan_.steps.size() > first) lowerVariant(n, ops, out, aliased, idle, loadBit(Load::Idle));
        else  // no steps: nothing to run in either variant
          for (std::size_t i = first; i < plan_.steps.size(); ++i) plan_.steps[i].loads = kEveryLoad;
      }
      break;
  }
  notePlainReads(ops, aliased);
}

void Lowering::lowerVariant(ir::Node n, const std::vector<View>& ops, const View& out, bool aliased, bool serial,
                            LoadSet loads) {
  const std::size_t first = plan_.steps.size();
  {
    OneThread one(serial);
    lowerNode(n, step_, ops, out, aliased);
  }
  for (std::size_t i = first; i < plan_.steps.size(); ++i) {
    plan_.steps[i].serial = plan_.info[i].serial = serial;
    plan_.steps[i].loads = loads;
    plan_.info[i].everyRun = loads == kEveryLoad;
  }
}

void Lowering::lowerNode(ir::Node n, std::size_t step, const std::vector<View>& ops, const View& out, bool aliased) {
  node_ = n;
  step_ = step;
  const ir::OpData& op = g_.op(n);
  const auto& attrs = op.attrs;
  switch (op.kind) {
    case ir::OpKind::Input:
    case ir::OpKind::Weight:
    case ir::OpKind::MemRead:
    case ir::OpKind::Reshape:  // placed as an alias of its operand
      return;
    case ir::OpKind::Constant:  // computed now, into a constant buffer
      kernels::fill(plan_.ptr(out), out.type.dtype, out.type.numel(), attrs.getFloat("value"));
      return;
    case ir::OpKind::PosEncoding:
      kernels::posEncoding(reinterpret_cast<float*>(plan_.ptr(out)), attrs.getInt("klen"), attrs.getInt("d"),
                           attrs.getInt("clamp_len"));
      return;
    case ir::OpKind::AttnMask:
      kernels::attnMask(reinterpret_cast<float*>(plan_.ptr(out)), attrs.getInt("qlen"), attrs.getInt("mlen"),
                        attrs.getInt("mem_len"), attrs.getBool("same_length"));
      return;
    case ir::OpKind::Output:
    case ir::OpKind::MemWrite:  // a copy only when the value lives in a user's buffer
      if (!aliased)
        addKernel(n, "txl:copy",
                  [p = &plan_, x = ops[0], out] { std::memcpy(p->ptr(out), p->ptr(x), x.type.bytes()); });
      return;
    case ir::OpKind::MemWindow: {  // the window is the caller's buffer; append x's rows after the memory
      const std::size_t at = out.type.bytes() - ops[0].type.bytes();
      addKernel(n, "txl:mem_window",
                [p = &plan_, x = ops[0], out, at] { std::memcpy(p->ptr(out) + at, p->ptr(x), x.type.bytes()); });
      return;
    }
    case ir::OpKind::Add:
    case ir::OpKind::Sub:
    case ir::OpKind::Mul:
      return lowerBinary(n, ops, out);
    case ir::OpKind::Scale:
    case ir::OpKind::Relu: {
      const bool scale = op.kind == ir::OpKind::Scale;
      memory::desc md = denseMd(out.type);
      dnnl::eltwise_forward::primitive_desc pd(
          dnnl::eltwise_forward::desc(dnnl::prop_kind::forward_inference,
                                      scale ? dnnl::algorithm::eltwise_linear : dnnl::algorithm::eltwise_relu, md,
                                      scale ? static_cast<float>(attrs.getFloat("factor")) : 0.0f, 0.0f),
          scratchpadAttr(), plan_.engine);
      return addPrimitive(n, pd, "eltwise", {{DNNL_ARG_SRC, mem(ops[0], md)}, {DNNL_ARG_DST, mem(out, md)}});
    }
    case ir::OpKind::MaskedFill: {
      TXL_CHECK(out.type.dtype == ir::DType::F32, "masked_fill lowering takes f32 only");
      const float value = static_cast<float>(attrs.getFloat("value"));
      if (std::isinf(value) && isConstant(ops[1]) && ops[1].type.dtype == ir::DType::F32)
        return lowerInfMaskedFill(n, ops[0], ops[1], out, value);
      auto strides = broadcastStrides(ops[1].type, out.type.shape);
      return addKernel(
          n, "txl:masked_fill",
          [p = &plan_, x = ops[0], m = ops[1], out, strides, value = static_cast<float>(attrs.getFloat("value"))] {
            kernels::maskedFill(reinterpret_cast<const float*>(p->ptr(x)), out.type.shape, p->ptr(m), m.type.dtype,
                                strides.data(), value, reinterpret_cast<float*>(p->ptr(out)));
          });
    }
    case ir::OpKind::Concat:
      return lowerConcat(n, ops, out);
    case ir::OpKind::Slice:
    case ir::OpKind::Permute: {
      if (aliased || out.type.numel() == 0) return;  // a contiguous slice is placed as an alias
      const memory::dims xStrides = viewStrides(ops[0]);
      memory::dims strides(out.type.rank());
      std::size_t off = 0;
      if (op.kind == ir::OpKind::Slice) {
        strides = xStrides;
        const std::int64_t axis = *ir::normalizeAxis(attrs.getInt("axis"), out.type.rank());
        off = attrs.getInt("start") * xStrides[axis] * ir::dtypeSize(out.type.dtype);
      } else {
        const auto& perm = attrs.getInts("perm");
        for (std::size_t i = 0; i < perm.size(); ++i) strides[i] = xStrides[perm[i]];
      }
      if (out.type.dtype == ir::DType::I64)
        return addKernel(n, "txl:strided_copy",
                         [p = &plan_, x = ops[0], out, off, strides, dst = denseStrides(out.type.shape)] {
                           kernels::stridedCopy(p->ptr(x) + off, strides.data(), p->ptr(out), dst.data(),
                                                out.type.shape, sizeof(std::int64_t));
                         });
      return copy(n, ops[0], memory::desc(out.type.shape, dnnlType(out.type.dtype), strides), off, out,
                  denseMd(out.type), 0);
    }
    case ir::OpKind::Pad:
      return lowerPad(n, ops[0], out);
    case ir::OpKind::Embedding: {
      TXL_CHECK(out.type.dtype == ir::DType::F32, "embedding lowering takes f32 tables only");
      // A vocabulary-sized table read from a file whose pages are dropped maps only the rows
      // it reads, while it reads them (a linear over so large a weight reads a pack: packsWeight).
      const Buffer& tb = plan_.buffers[ops[0].buffer];
      const ir::Tensor* unmap = tb.kind == BufferKind::Weight && tb.weight && tb.weight->fileBacked() &&
                                        packs_.dropsPlainPages() && opt_.releasePackedPlainPages &&
                                        ops[0].type.bytes() > kUnmappedTableBytes
                                    ? tb.weight
                                    : nullptr;
      return addKernel(n, "txl:embedding", [p = &plan_, t = ops[0], ids = ops[1], out, lo = attrs.getInt("lo"), unmap] {
        const auto* table = reinterpret_cast<const float*>(p->ptr(t));
        const auto* id = reinterpret_cast<const std::int64_t*>(p->ptr(ids));
        auto* y = reinterpret_cast<float*>(p->ptr(out));
        const std::int64_t rows = t.type.shape[0], dim = t.type.shape[1], count = ids.type.numel();
        const auto lookup = [&](const std::int64_t* ids, std::int64_t n, float* dst) {
          if (p->packedRows.empty() || p->buffers[t.buffer].kind != BufferKind::Weight)
            kernels::embedding(table, rows, dim, ids, n, lo, dst);
          else  // a tied output layer is packed: its rows are read there (packed_weights.h)
            lookupRows(table, rows, dim, ids, n, lo, p->packedRows, dst);
        };
        if (!unmap) return lookup(id, count, y);
        for (std::int64_t i = 0; i < count; ++i) {  // a row at a time: at most one fault's pages mapped at once
          lookup(id + i, 1, y + i * dim);
          unmapRowsRead(*unmap, table, rows, dim, id + i, 1, lo);
        }
      });
    }
    case ir::OpKind::Convert:
      if (aliased || out.type.numel() == 0) return;  // converted as its matmuls pack it (onednn_placement.cpp)
      return copy(n, ops[0],
                  viewStrides(ops[0]).empty()
                      ? denseMd(ops[0].type)
                      : memory::desc(ops[0].type.shape, dnnlType(ops[0].type.dtype), viewStrides(ops[0])),
                  0, out, denseMd(out.type), 0);
    case ir::OpKind::Quantize:
      if (aliased || out.type.numel() == 0) return;  // quantized as its linears pack it (onednn_placement.cpp)
      return lowerQuantize(n, ops[0], out);
    case ir::OpKind::Linear:
      return lowerLinear(n, ops, out);
    case ir::OpKind::MatMul:
      return lowerMatMul(n, ops, out);
    case ir::OpKind::LayerNorm: {
      auto pd = layerNormPd(plan_.engine, ops[0].type, static_cast<float>(attrs.getFloat("eps")));
      return addPrimitive(n, pd, "layer_normalization",
                          {{DNNL_ARG_SRC, mem(ops[0], pd.src_desc())},
                           {DNNL_ARG_DST, mem(out, pd.dst_desc())},
                           {DNNL_ARG_SCALE, mem(ops[1], pd.weights_desc())},
                           {DNNL_ARG_SHIFT, mem(ops[2], pd.weights_desc())}});
    }
    case ir::OpKind::Softmax:
    case ir::OpKind::LogSoftmax:
      return lowerSoftmax(n, ops[0], out, op.kind == ir::OpKind::LogSoftmax);
    case ir::OpKind::RelShift: {
      TXL_CHECK(out.type.dtype == ir::DType::F32, "rel_shift lowering takes f32 only");
      const std::int64_t q = out.type.shape[out.type.rank() - 2], k = out.type.shape[out.type.rank() - 1];
      return addKernel(n, "txl:rel_shift", [p = &plan_, x = ops[0], out, q, k] {
        kernels::relShift(reinterpret_cast<const float*>(p->ptr(x)), out.type.numel() / (q * k), q, k,
                          reinterpret_cast<float*>(p->ptr(out)));
      });
    }
    case ir::OpKind::RelScores:
      return lowerRelScores(n, ops, out);
    case ir::OpKind::RelAttention:
      return lowerRelAttention(n, ops, out);
    case ir::OpKind::LogprobPick:
      return lowerLogprobPick(n, ops, out);
    case ir::OpKind::LogprobPickGathered:
      return lowerLogprobPickGathered(n, ops, out);
    case ir::OpKind::FusedLinear:
      return lowerFusedLinear(n, ops, out);
    case ir::OpKind::Pick: {
      TXL_CHECK(out.type.dtype == ir::DType::F32, "pick lowering takes f32 only");
      return addKernel(n, "txl:pick", [p = &plan_, x = ops[0], idx = ops[1], out] {
        kernels::pick(reinterpret_cast<const float*>(p->ptr(x)), out.type.numel(), x.type.shape.back(),
                      reinterpret_cast<const std::int64_t*>(p->ptr(idx)), reinterpret_cast<float*>(p->ptr(out)));
      });
    }
  }
}

}  // namespace txl::backend::onednn
