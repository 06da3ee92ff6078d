// backend/onednn/onednn_target_info.cpp - asks oneDNN which implementation the
// lowering of a node would get.
#include "backend/onednn/onednn_target_info.h"

#include "backend/onednn/onednn_lowering.h"
#include "backend/kernels/rel_attention.h"
#include "ir/check.h"

namespace txl::backend {

namespace {

// The rule is the lowering's (onednn::unfusedAttentionReason), next to its
// choice of the kernel's path.
std::optional<std::string> relAttentionSlowPath(const ir::Graph& g, ir::Node n) {
  const ir::Shape& q = g.type(n).shape;
  const ir::TensorType& k = g.type(g.operand(n, 2));
  return onednn::unfusedAttentionReason({q[1], q[2], q[0], k.shape[0], q[3]}, k.dtype);
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
