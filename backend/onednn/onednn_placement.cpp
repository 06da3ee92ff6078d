// backend/onednn/onednn_placement.cpp - phase 1 of the oneDNN plan (onednn_phases.h):
// where every node's value lives.
//
// Every value is a dense row-major tensor at a byte offset in a buffer:
//   - input, mem_read, mem_window: an input buffer, one per name, rebound on
//     every run (no copy);
//   - weight: the user's tensor, bound in place (it must outlive the plan);
//   - constant, pos_encoding, attn_mask: a constant buffer, filled at
//     compile time by the lowering;
//   - reshape, and a slice whose dimensions before the axis are all 1 (a
//     contiguous range): an alias of the operand;
//   - a non-contiguous slice whose only reader (directly or through one
//     reshape) reads strided operands (a permute, rel_attention), and a
//     permute whose only reader is a small-M matmul: a strided view of the
//     operand, read in place;
//   - output, mem_write: the operand's view, unless that lives in a user's
//     buffer (an input or a weight); then a value of its own, which the
//     lowering copies into, so a returned tensor never aliases something the
//     caller owns;
//   - every other op: a fresh arena value.
// Arena values are created in schedule order; their live ranges are the
// node's own step until extendLiveness.
#include <algorithm>
#include <optional>
#include <string>
#include <unordered_map>

#include "backend/onednn/onednn_lowering.h"  // denseStrides, viewStrides, kMaxRowsForStridedMatMulOperand
#include "backend/onednn/onednn_phases.h"
#include "ir/check.h"
#include "ir/shape_inference.h"

namespace txl::backend::onednn {

namespace {

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
         reshapeStrides(g.type(n).shape, denseStrides(x.type.shape), g.type(users[0]).shape).has_value();
}

// A permute whose only reader is a matmul with a small query block
// (kMaxRowsForStridedMatMulOperand rows): the matmul reads the
// operand in place through permuted strides, and the copy never happens. At
// one token per step this spares copying every remembered key and value.
bool permuteReadInPlace(const ir::Graph& g, ir::Node n) {
  const auto users = g.users(n);
  if (users.size() != 1 || g.kind(users[0]) != ir::OpKind::MatMul || g.type(n).dtype != ir::DType::F32) return false;
  const ir::TensorType& out = g.type(users[0]);
  return out.rank() >= 2 && out.shape[out.rank() - 2] <= kMaxRowsForStridedMatMulOperand;
}

}  // namespace

// A convert of a dense constant (a weight or a view of one) whose every
// reader is a linear, fused_linear or logprob_pick_gathered reading it as its weight: those pack it
// once, converting as they reorder, so the converted value never exists
// unpacked (bf16-matmuls' weights).
static bool convertedWhenPacked(const ir::Graph& g, ir::Node n, const Plan& plan, const View& x) {
  const BufferKind k = plan.buffers[x.buffer].kind;
  if ((k != BufferKind::Weight && k != BufferKind::Constant) || !x.strides.empty() || x.type.rank() != 2) return false;
  const auto users = g.users(n);
  return !users.empty() && std::all_of(users.begin(), users.end(), [&](ir::Node u) {
    const ir::OpKind kind = g.kind(u);
    if (kind != ir::OpKind::Linear && kind != ir::OpKind::FusedLinear && kind != ir::OpKind::LogprobPickGathered)
      return false;
    for (std::size_t i = 0; i < g.numOperands(u); ++i)
      if ((g.operand(u, i) == n) != (i == 1)) return false;  // the weight, and nothing else
    return true;
  });
}

// A quantize of a dense user or folded weight whose every reader is a
// linear or fused_linear reading it as its weight: those quantize it once as
// they pack it (Lowering::int8Weights), so its f32 values never exist
// (int8-matmuls' weights).
static bool quantizedWhenPacked(const ir::Graph& g, ir::Node n, const Plan& plan, const View& x) {
  return plan.buffers[x.buffer].kind == BufferKind::Weight && !x.storedAs && !x.quantized &&
         x.type.dtype == ir::DType::F32 && convertedWhenPacked(g, n, plan, x);
}

std::string nodeName(const ir::Graph& g, ir::Node n) {
  std::string s = std::string(ir::opInfo(g.kind(n)).name) + " (node " + std::to_string(g.op(n).id);
  if (g.op(n).type) s += ", " + g.op(n).type->str();
  return s + ")";
}

Placement placeValues(const ir::Graph& g, const std::vector<ir::Node>& order, const TensorMap& weights, Plan& plan) {
  Placement placement;
  std::unordered_map<std::string, int> namedBuffers;
  auto newArena = [&](PlacedValue& p, ir::Node n, const ir::TensorType& type, std::size_t t) {
    p.root = static_cast<int>(plan.arenaValues.size());
    p.view = View{plan.addArenaValue(nodeName(g, n), type.bytes(), t, t), 0, type};
  };
  for (std::size_t t = 0; t < order.size(); ++t) {
    const ir::Node n = order[t];
    const ir::OpData& op = g.op(n);
    PlacedValue& p = placement[n];
    switch (op.kind) {
      case ir::OpKind::Input:
      case ir::OpKind::MemRead:
      case ir::OpKind::MemWindow: {  // the caller's state window, rebound every run
        std::string name = op.kind == ir::OpKind::Input ? op.attrs.getString("name") : memName(op.attrs.getInt("slot"));
        auto [it, fresh] = namedBuffers.try_emplace("in:" + name, -1);
        if (fresh) {
          it->second = plan.addBuffer(BufferKind::Input);
          plan.inputs.push_back({name, *op.type, it->second});
        }
        p.view = View{it->second, 0, *op.type};
        break;
      }
      case ir::OpKind::Weight: {
        const std::string& name = op.attrs.getString("name");
        auto [it, fresh] = namedBuffers.try_emplace("w:" + name, -1);
        if (fresh) {
          const ir::Tensor& w = weights.at(name);
          it->second = plan.addBuffer(BufferKind::Weight, const_cast<void*>(w.raw()));
          plan.buffers[it->second].weight = &w;
        }
        p.view = View{it->second, 0, *op.type};
        break;
      }
      case ir::OpKind::Constant:
      case ir::OpKind::PosEncoding:
      case ir::OpKind::AttnMask:
        p.view = View{plan.addBuffer(BufferKind::Constant, plan.allocate(op.type->bytes())), 0, *op.type};
        plan.constantBytes += op.type->bytes();
        break;
      case ir::OpKind::Convert:
        if (convertedWhenPacked(g, n, plan, placement.at(g.operand(n, 0)).view)) {  // no value of its own
          const View& xv = placement.at(g.operand(n, 0)).view;
          p.view = xv;
          p.view.type = *op.type;
          if (xv.type.dtype != op.type->dtype) p.view.storedAs = xv.storedAs.value_or(xv.type.dtype);
          p.root = placement.at(g.operand(n, 0)).root;
          p.aliased = true;
        } else {
          newArena(p, n, *op.type, t);
        }
        break;
      case ir::OpKind::Quantize:
        if (quantizedWhenPacked(g, n, plan, placement.at(g.operand(n, 0)).view)) {  // no value of its own
          p.view = placement.at(g.operand(n, 0)).view;
          p.view.quantized = true;
          p.root = placement.at(g.operand(n, 0)).root;
          p.aliased = true;
        } else {
          newArena(p, n, *op.type, t);
        }
        break;
      case ir::OpKind::Permute:
        if (permuteReadInPlace(g, n)) {  // a view: the operand's strides, permuted
          const View& xv = placement.at(g.operand(n, 0)).view;
          const auto from = viewStrides(xv);
          View v = xv;
          v.type = *op.type;
          v.strides.clear();
          for (std::int64_t axis : op.attrs.getInts("perm")) v.strides.push_back(from[axis]);
          p.view = v;
          p.root = placement.at(g.operand(n, 0)).root;
          p.aliased = true;
        } else {
          newArena(p, n, *op.type, t);
        }
        break;
      case ir::OpKind::Reshape:
      case ir::OpKind::Slice:
      case ir::OpKind::Output:
      case ir::OpKind::MemWrite: {
        const ir::Node x = g.operand(n, 0);
        const View& xv = placement.at(x).view;
        const BufferKind k = plan.buffers[xv.buffer].kind;
        const bool sink = op.kind == ir::OpKind::Output || op.kind == ir::OpKind::MemWrite;
        const ir::TensorType type = sink ? xv.type : *op.type;
        const bool inPlace = op.kind == ir::OpKind::Slice && !contiguousSlice(g, n) && sliceReadInPlace(g, n, xv);
        bool alias = op.kind == ir::OpKind::Reshape || (op.kind == ir::OpKind::Slice && contiguousSlice(g, n)) ||
                     inPlace || (sink && k != BufferKind::Input && k != BufferKind::Weight);
        if (!alias) {
          newArena(p, n, type, t);
          break;
        }
        View v = xv;
        v.type = type;
        if (op.kind == ir::OpKind::Slice) {
          const std::int64_t axis = *ir::normalizeAxis(op.attrs.getInt("axis"), xv.type.rank());
          v.offset += op.attrs.getInt("start") * denseStrides(xv.type.shape)[axis] * ir::dtypeSize(type.dtype);
          if (inPlace) v.strides = denseStrides(xv.type.shape);
        }
        if (op.kind == ir::OpKind::Reshape && !xv.strides.empty())
          v.strides = *reshapeStrides(xv.type.shape, xv.strides, type.shape);  // checked by sliceReadInPlace
        p.view = v;
        p.root = placement.at(x).root;
        p.aliased = true;
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
      case ir::OpKind::LogprobPickGathered:
      case ir::OpKind::FusedLinear:
        newArena(p, n, *op.type, t);
        break;
    }
  }

  return placement;
}

}  // namespace txl::backend::onednn
