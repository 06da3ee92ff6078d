// passes/bf16_state.h - the state windows hold bf16 values (--precision bf16).
#pragma once

#include "ir/pass.h"

namespace txl::passes {

class Bf16State : public ir::Pass {
 public:
  std::string_view name() const override { return "bf16-state"; }
  ir::PassResult run(ir::Graph& g, ir::PassContext& ctx) override;
};

}  // namespace txl::passes
