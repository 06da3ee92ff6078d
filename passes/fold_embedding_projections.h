// passes/fold_embedding_projections.h - a projection of looked-up embedding
// rows as a lookup in the projected table.
#pragma once

#include "ir/graph.h"
#include "ir/pass.h"

namespace txl::passes {

// Whether a linear of x by the weight w, without bias, is one the pass makes
// a lookup: w constant, x = embedding(E, ids) or scale(embedding(E, ids), s)
// with E constant and no more rows than w has inputs. (driver/flop_count.h
// counts such a projection as no useful work.)
bool isEmbeddingProjection(const ir::Graph& g, ir::Node x, ir::Node w);

class FoldEmbeddingProjections : public ir::Pass {
 public:
  std::string_view name() const override { return "fold-embedding-projections"; }
  ir::PassResult run(ir::Graph& g, ir::PassContext& ctx) override;
};

}  // namespace txl::passes
