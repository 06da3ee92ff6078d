// backend/onednn/onednn_target_info.h - ir::TargetInfo for the oneDNN executor.
//
// slowPathReason() builds the primitive descriptor the lowering would build
// for the node (from its operand types and attributes) and reports a `ref`
// implementation, which on this machine is hundreds of times slower.
//
//   OnednnTargetInfo target;
//   if (auto why = target.slowPathReason(g, candidate)) skip(*why);
#pragma once

#include <optional>
#include <string>

#include "ir/target_info.h"

namespace txl::backend {

class OnednnTargetInfo final : public ir::TargetInfo {
 public:
  std::string name() const override { return "onednn"; }
  std::optional<std::string> slowPathReason(const ir::Graph& g, ir::Node n) const override;
};

}  // namespace txl::backend
