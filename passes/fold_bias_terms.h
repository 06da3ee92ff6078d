// passes/fold_bias_terms.h - (q+u)·k and (q+v)·r without materializing q+u,
// q+v, and the 1/sqrt(d_head) score scale folded into the Q projection.
#pragma once

#include "ir/pass.h"

namespace txl::passes {

class FoldBiasTerms : public ir::Pass {
 public:
  std::string_view name() const override { return "fold-bias-terms"; }
  ir::PassResult run(ir::Graph& g, ir::PassContext& ctx) override;
};

}  // namespace txl::passes
