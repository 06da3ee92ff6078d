// passes/fold_constants.h - the constant subgraphs evaluated once and read as weights.
//
// The last step of every pipeline that builds a graph to compile (PassContext::
// constants set; passes/pipeline.cpp adds it): what --print-after-all shows
// after it is the graph the executor compiles. Without an evaluator (inspect,
// artifacts) it changes nothing.
#pragma once

#include "ir/pass.h"

namespace txl::passes {

class FoldConstants : public ir::Pass {
 public:
  std::string_view name() const override { return "fold-constants"; }
  ir::PassResult run(ir::Graph& g, ir::PassContext& ctx) override;
};

}  // namespace txl::passes
