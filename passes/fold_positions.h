// passes/fold_positions.h - position tables for the longest klen, read as suffixes.
#pragma once

#include "ir/pass.h"

namespace txl::passes {

class FoldPositions : public ir::Pass {
 public:
  std::string_view name() const override { return "fold-positions"; }
  ir::PassResult run(ir::Graph& g, ir::PassContext& ctx) override;
};

}  // namespace txl::passes
