// passes/pretranspose_constants.h - a matmul's transposed constant operand, laid out transposed once.
#pragma once

#include "ir/pass.h"

namespace txl::passes {

class PretransposeConstants : public ir::Pass {
 public:
  std::string_view name() const override { return "pretranspose-constants"; }
  ir::PassResult run(ir::Graph& g, ir::PassContext& ctx) override;
};

}  // namespace txl::passes
