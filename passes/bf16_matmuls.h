// passes/bf16_matmuls.h - the linear layers' matmuls in bf16 with f32 accumulation (--precision bf16).
#pragma once

#include "ir/pass.h"

namespace txl::passes {

class Bf16Matmuls : public ir::Pass {
 public:
  std::string_view name() const override { return "bf16-matmuls"; }
  ir::PassResult run(ir::Graph& g, ir::PassContext& ctx) override;
};

}  // namespace txl::passes
