// passes/fuse_nll.h - the NLL through the adaptive softmax without the log-probabilities.
#pragma once

#include "ir/pass.h"

namespace txl::passes {

class FuseNll : public ir::Pass {
 public:
  std::string_view name() const override { return "fuse-nll"; }
  ir::PassResult run(ir::Graph& g, ir::PassContext& ctx) override;
};

}  // namespace txl::passes
