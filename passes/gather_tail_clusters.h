// passes/gather_tail_clusters.h - a tail cluster's logits only for the rows whose target lies in it.
#pragma once

#include "ir/pass.h"

namespace txl::passes {

class GatherTailClusters : public ir::Pass {
 public:
  std::string_view name() const override { return "gather-tail-clusters"; }
  ir::PassResult run(ir::Graph& g, ir::PassContext& ctx) override;
};

}  // namespace txl::passes
