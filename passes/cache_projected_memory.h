// passes/cache_projected_memory.h - remember projected keys and values, not hidden states.
#pragma once

#include "ir/pass.h"

namespace txl::passes {

class CacheProjectedMemory : public ir::Pass {
 public:
  std::string_view name() const override { return "cache-projected-memory"; }
  ir::PassResult run(ir::Graph& g, ir::PassContext& ctx) override;
};

}  // namespace txl::passes
