// passes/window_memory.h - the recurrent memory updated in place.
#pragma once

#include "ir/pass.h"

namespace txl::passes {

class WindowMemory : public ir::Pass {
 public:
  std::string_view name() const override { return "window-memory"; }
  ir::PassResult run(ir::Graph& g, ir::PassContext& ctx) override;
};

}  // namespace txl::passes
