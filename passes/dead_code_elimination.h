// passes/dead_code_elimination.h - removes ops that no sink depends on.
#pragma once

#include "ir/pass.h"

namespace txl::passes {

class DeadCodeElimination : public ir::Pass {
 public:
  std::string_view name() const override { return "dce"; }
  ir::PassResult run(ir::Graph& g, ir::PassContext& ctx) override;
};

}  // namespace txl::passes
