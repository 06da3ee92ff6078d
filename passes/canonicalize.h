// passes/canonicalize.h - local simplifications that later passes match against.
#pragma once

#include "ir/pass.h"

namespace txl::passes {

class Canonicalize : public ir::Pass {
 public:
  std::string_view name() const override { return "canonicalize"; }
  ir::PassResult run(ir::Graph& g, ir::PassContext& ctx) override;
};

}  // namespace txl::passes
