// passes/int8_matmuls.h - the linear layers' weights as int8 rows (--precision int8).
#pragma once

#include "ir/pass.h"

namespace txl::passes {

class Int8Matmuls : public ir::Pass {
 public:
  std::string_view name() const override { return "int8-matmuls"; }
  ir::PassResult run(ir::Graph& g, ir::PassContext& ctx) override;
};

}  // namespace txl::passes
