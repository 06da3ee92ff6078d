// backend/onednn_target_info.cpp - asks oneDNN which implementation the
// lowering of a node would get.
#include "backend/onednn_target_info.h"

#include "backend/onednn_lowering.h"
#include "backend/rel_attention.h"
#include "ir/check.h"

namespace txl::backend {

namespace {

// The own kernel (rel_attention.h) takes D <= 64. At a few query rows the
// unfused lowering is faster: its matmuls read k and v in place through
// strided views (onednn_placement.cpp) and p · V runs on txl:gemv, where the
// kernel transposes every key block for one row. The threshold
// (kMaxRowsForStridedMatMulOperand) rests on `txlc bench
// bench/enwik8_base.json --random-weights --prefill --qlen Q --profile` for
// Q = 1, 4, 8, 16 with and without --disable-pass fuse-attention (docs/LOG.md).
// With bf16 keys and values (a bf16 state window) the kernel is the faster
// at every row count: it widens them as it copies each key block, where the
// unfused lowering's f32 matmuls would need every key and value converted
// first, and it reads half the bytes.
std::optional<std::string> relAttentionSlowPath(const ir::Graph& g, ir::Node n) {
  const ir::Shape& q = g.type(n).shape;
  if (!kernels::relAttentionSupports({q[1], q[2], q[0], g.type(g.operand(n, 2)).shape[0], q[3]}))
    return "the own rel_attention kernel takes a head size of at most 64, not " + std::to_string(q[3]);
  if (q[0] <= onednn::kMaxRowsForStridedMatMulOperand && g.type(g.operand(n, 2)).dtype == ir::DType::F32)
    return "at " + std::to_string(q[0]) +
           " query row(s) the unfused attention reads keys and values in place and is faster";
  return std::nullopt;
}

}  // namespace

std::optional<std::string> OnednnTargetInfo::slowPathReason(const ir::Graph& g, ir::Node n) const {
  static const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  const std::string what = std::string(ir::opInfo(g.kind(n)).name) + " " + (g.op(n).type ? g.op(n).type->str() : "");
  if (g.kind(n) == ir::OpKind::RelAttention) return relAttentionSlowPath(g, n);
  try {
    auto pd = onednn::mainPrimitiveDesc(engine, g, n);
    if (!pd) return std::nullopt;
    std::string impl = pd->impl_info_str();
    if (impl.rfind("ref", 0) == 0)
      return "the lowering of " + what + " would pick the reference implementation '" + impl + "'";
    return std::nullopt;
  } catch (const dnnl::error& e) {
    return "oneDNN has no implementation for " + what + ": " + e.what();
  } catch (const Error& e) {
    return "oneDNN cannot lower " + what + ": " + e.what();
  }
}

}  // namespace txl::backend
