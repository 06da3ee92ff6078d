// passes/fold_embedding_projections.cpp - the first layer's projections of
// looked-up embedding rows as lookups in projected tables.
//
// In the kv memory form (cache-projected-memory) the first layer projects
// the segment's new rows, which are embedding rows times the embedding scale:
//     q = linear(scale(embedding(E, ids), s), W)
// Row by row, that is the row `id` of the constant table s·E Wᵀ:
//     q = embedding(linear(scale(E, s), W), ids)
// The table is a constant cone the backend evaluates once per model, so each
// segment gathers rows instead of streaming W: for a character-level model
// (enwik8: 204 symbols, K = 512) the table [204, 1536] is smaller than the
// weights it replaces, and a generated token reads 1536 floats instead of
// the 1536 x 512 weights. The table rows are the products a segment would
// compute for those ids (the same operands, one row each).
//
// Algorithm: for every linear(x, W) without bias whose W is constant and
// whose x is embedding(E, ids) or scale(embedding(E, ids), s) with E
// constant, when E has no more rows than W has inputs (the table is no
// larger than W): replace it by embedding(linear(x', W), ids) {lo} with x' =
// E or scale(E, s) (one per scale op), the linear keeping its attributes. Ids outside the
// embedding's range give zero rows either way (a linear without bias maps a
// zero row to zeros). The embedding and its scale stay for their other
// readers (the residual, the memory of the hidden form).
#include "passes/fold_embedding_projections.h"

#include <map>

#include "passes/rewrite_utils.h"

namespace txl::passes {

using ir::Node;
using ir::OpKind;

namespace {

// The embedding x looks up, and the scale over it (if any), when x is
// embedding(E, ids) or scale(embedding(E, ids), s) with E constant.
struct Lookup {
  Node embedding;
  std::optional<Node> scale;
};

std::optional<Lookup> lookupOf(const ir::Graph& g, Node x) {
  Lookup l{x, std::nullopt};
  if (g.kind(x) == OpKind::Scale) {
    l.scale = x;
    l.embedding = g.operand(x, 0);
  }
  if (g.kind(l.embedding) != OpKind::Embedding || !rw::isConstant(g, g.operand(l.embedding, 0))) return std::nullopt;
  return l;
}

}  // namespace

bool isEmbeddingProjection(const ir::Graph& g, Node x, Node w) {
  const auto lookup = lookupOf(g, x);
  if (!lookup || !rw::isConstant(g, w)) return false;
  const ir::TensorType& wt = g.type(w);
  const ir::TensorType& table = g.type(g.operand(lookup->embedding, 0));
  return wt.rank() == 2 && table.rank() == 2 && table.shape[0] <= wt.shape[1];
}

ir::PassResult FoldEmbeddingProjections::run(ir::Graph& g, ir::PassContext& ctx) {
  Rewriter rewriter(g, ctx, name());
  int folded = 0;
  std::map<Node, Node> scaledTables;  // scale(embedding(E, ids), s) -> scale(E, s), one per scale
  rewriter.run(g.nodesOfKind(OpKind::Linear), [&](Node n) {
    if (g.operands(n).size() != 2 || !isEmbeddingProjection(g, g.operand(n, 0), g.operand(n, 1))) return false;
    const auto lookup = lookupOf(g, g.operand(n, 0));
    const Node table = g.operand(lookup->embedding, 0);
    Node rows = table;
    if (lookup->scale) {
      auto [it, added] = scaledTables.try_emplace(*lookup->scale, table);
      if (added) it->second = rw::scale(g, table, g.op(*lookup->scale).attrs.getFloat("factor"));
      rows = it->second;
    }
    const Node projected = g.add(OpKind::Linear, {rows, g.operand(n, 1)}, g.op(n).attrs);
    const Node gathered =
        g.add(OpKind::Embedding, {projected, g.operand(lookup->embedding, 1)}, g.op(lookup->embedding).attrs);
    g.replaceAllUsesWith(n, gathered);
    rewriter.eraseIfDead(n);
    ++folded;
    return true;
  });
  if (folded > 0)
    ctx.applied(name(), std::to_string(folded) + " projection(s) of embedding rows as lookups in projected tables");
  return ir::PassResult::changedIf(folded > 0);
}

}  // namespace txl::passes
