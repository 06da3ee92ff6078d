// passes/fuse_epilogues.h - bias, ReLU and residual adds as linear post-ops.
#pragma once

#include "ir/pass.h"

namespace txl::passes {

class FuseEpilogues : public ir::Pass {
 public:
  std::string_view name() const override { return "fuse-epilogues"; }
  ir::PassResult run(ir::Graph& g, ir::PassContext& ctx) override;
};

}  // namespace txl::passes
