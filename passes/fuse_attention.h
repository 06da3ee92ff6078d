// passes/fuse_attention.h - a layer's attention (score matmuls, rel_scores
// with its softmax, P · V and the head-major views) as one rel_attention op.
#pragma once

#include "ir/pass.h"

namespace txl::passes {

class FuseAttention : public ir::Pass {
 public:
  std::string_view name() const override { return "fuse-attention"; }
  ir::PassResult run(ir::Graph& g, ir::PassContext& ctx) override;
};

}  // namespace txl::passes
