// passes/common_subexpression_elimination.cpp - merge nodes that compute the same value.
//
// Two nodes compute the same value when they have the same op, the same
// operands (the same nodes, in order), the same attributes and the same
// result type. Weights of one name are one tensor, and attribute-only sources
// (constant, pos_encoding, attn_mask) are pure, so they merge too. Never
// merged: input and mem_read (each is a distinct binding of the caller) and
// sinks (output, mem_write: each is an effect).
//
// Algorithm:
//   1. Walk the nodes in topological order, so a node's operands are already
//      canonical (merged) when it is reached.
//   2. Key each mergeable node by (op, operand ids, printed attributes, type);
//      the first node with a key is its canonical node; a later one has its
//      uses redirected to it.
// Merged nodes are left without users for dce.
#include "passes/common_subexpression_elimination.h"

#include <map>
#include <string>
#include <tuple>

#include "ir/printer.h"
#include "passes/rewriter.h"

namespace txl::passes {

using ir::Node;
using ir::OpKind;

namespace {

// Pure ops only (ops.def's Effects): an input or a mem_read is a distinct
// binding, a sink or a mem_window an effect.
bool mergeable(OpKind kind) { return ir::opInfo(kind).effects == ir::Effects::Pure; }

std::string attrKey(const ir::Attrs& attrs) {
  std::string key;
  for (const auto& [name, value] : attrs.items()) key += name + "=" + ir::printAttrValue(value) + ";";
  return key;
}

}  // namespace

ir::PassResult CommonSubexpressionElimination::run(ir::Graph& g, ir::PassContext& ctx) {
  using Key = std::tuple<OpKind, std::vector<std::uint64_t>, std::string, std::string>;
  std::map<Key, Node> canonical;
  Rewriter rewriter(g, ctx, name());
  const bool changed = rewriter.run(g.topologicalOrder(), [&](Node n) {
    if (!mergeable(g.kind(n))) return false;
    std::vector<std::uint64_t> operands;
    for (Node o : g.operands(n)) operands.push_back(g.op(o).id);
    Key key{g.kind(n), operands, attrKey(g.op(n).attrs), g.type(n).str()};
    auto [it, fresh] = canonical.try_emplace(key, n);
    if (fresh || !g.hasUsers(n)) return false;
    g.replaceAllUsesWith(n, it->second);
    return true;
  });
  return ir::PassResult::changedIf(changed);
}

}  // namespace txl::passes
