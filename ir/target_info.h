// ir/target_info.h - what passes may ask of the target they optimize for.
//
// Passes must not include backend/; the backend implements this interface
// (backend/onednn/onednn_target_info.h) and tools hand it to the PassContext. A pass
// that plans a fusion builds the candidate op and asks whether the target runs
// it on a fast path; if not, it skips the fusion with the target's reason
// ("the lowering would pick a ref implementation").
#pragma once

#include <optional>
#include <string>

#include "ir/graph.h"

namespace txl::ir {

class TargetInfo {
 public:
  virtual ~TargetInfo() = default;
  virtual std::string name() const = 0;
  // nullopt when node `n` of `g` lowers to a fast implementation; otherwise why not.
  virtual std::optional<std::string> slowPathReason(const Graph& g, Node n) const = 0;
};

}  // namespace txl::ir
