// passes/fuse_rel_shift.h - AC + shift(BD), scale and mask as one rel_scores op.
#pragma once

#include "ir/pass.h"

namespace txl::passes {

class FuseRelShift : public ir::Pass {
 public:
  std::string_view name() const override { return "fuse-rel-shift"; }
  ir::PassResult run(ir::Graph& g, ir::PassContext& ctx) override;
};

}  // namespace txl::passes
