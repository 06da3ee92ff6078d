// passes/common_subexpression_elimination.h - one node per distinct computation.
#pragma once

#include "ir/pass.h"

namespace txl::passes {

class CommonSubexpressionElimination : public ir::Pass {
 public:
  std::string_view name() const override { return "cse"; }
  ir::PassResult run(ir::Graph& g, ir::PassContext& ctx) override;
};

}  // namespace txl::passes
