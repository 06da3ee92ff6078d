// passes/fold_constants.cpp - what does not change between segments, evaluated once.
//
// A value is constant when it depends only on weights, constants, position
// tables and masks, never on tokens or memory (isConstant: a Pure op of
// constant operands). The pass replaces the constant values that the rest of
// the graph reads (the frontier) by weight ops bound to their values, which
// the PassContext's ConstantEvaluator computes with the model's own executor.
// Each value is keyed by the printed text of its constant cone, so the plans
// of every segment shape of a model share it (with fold-positions, W_r R is
// computed once for the longest klen, not once per shape); the weight is named
// "const.<hash of the key>".
//
// Deliberately not folded: a frontier value that is only a view of one weight
// (reshape, or a slice along axis 0): folding it would copy the weight, and
// executors read such views in place; nor a convert of such a view (the
// bf16 weights of passes/bf16_matmuls.cpp), which the executor converts as it
// packs the weight; nor a quantize (passes/int8_matmuls.cpp), which the
// executor quantizes as it packs its operand - a computed operand of a
// quantize is in the frontier instead, folded to an f32 weight it quantizes.
//
// Algorithm:
//   1. Mark the constant nodes in topological order.
//   2. The frontier: constant nodes with a non-constant user (or a sink) or
//      a quantize user, minus bare weights, views of one weight, converts of
//      such views and quantizes.
//   3. Print each frontier node's cone as a graph: that text is its key.
//      Have the evaluator compute the keys it does not know yet, together, in
//      one graph.
//   4. Replace each frontier node by a weight op bound to its key; then erase
//      the constant nodes left without users (one visit each, users first).
#include "passes/fold_constants.h"

#include <cstdio>
#include <functional>
#include <map>
#include <set>

#include "ir/constant_evaluator.h"
#include "ir/printer.h"
#include "passes/rewriter.h"

namespace txl::passes {

using ir::Node;
using ir::OpKind;

namespace {

// A weight, or a reshape / leading-axis slice of a view of a weight.
bool isWeightView(const ir::Graph& g, Node n) {
  switch (g.kind(n)) {
    case OpKind::Weight:
      return true;
    case OpKind::Reshape:
      return isWeightView(g, g.operand(n, 0));
    case OpKind::Slice:
      return g.op(n).attrs.getInt("axis") == 0 && isWeightView(g, g.operand(n, 0));
    default:
      return false;
  }
}

// A convert of a weight view (bf16-matmuls' weights): the executor converts
// it as it packs it, so folding it would only add a converted copy.
bool isConvertedWeightView(const ir::Graph& g, Node n) {
  return g.kind(n) == OpKind::Convert && isWeightView(g, g.operand(n, 0));
}

// Copies the cone of `roots` (operands first) into `out`, naming each root's
// value as an output "<index>".
void copyCone(const ir::Graph& g, const std::vector<Node>& roots, ir::Graph& out) {
  std::map<Node, Node> copied;
  std::function<Node(Node)> copy = [&](Node n) -> Node {
    if (auto it = copied.find(n); it != copied.end()) return it->second;
    std::vector<Node> operands;
    for (Node o : g.operands(n)) operands.push_back(copy(o));
    Node c = out.add(g.kind(n), operands, g.op(n).attrs, g.op(n).type);
    copied[n] = c;
    return c;
  };
  for (std::size_t i = 0; i < roots.size(); ++i) out.addOutput(std::to_string(i), copy(roots[i]));
}

std::string hashName(const std::string& key) {
  std::uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (unsigned char c : key) h = (h ^ c) * 1099511628211ull;
  char buf[32];
  std::snprintf(buf, sizeof buf, "const.%016llx", static_cast<unsigned long long>(h));
  return buf;
}

}  // namespace

ir::PassResult FoldConstants::run(ir::Graph& g, ir::PassContext& ctx) {
  if (!ctx.constants) return ir::PassResult::unchanged();
  ir::ConstantEvaluator& evaluator = *ctx.constants;
  const auto order = g.topologicalOrder();

  // 1, 2.
  std::set<Node> constant;
  for (Node n : order)
    if (isConstant(g, n)) constant.insert(n);
  std::vector<Node> frontier;
  for (Node n : order) {
    if (!constant.count(n) || isWeightView(g, n) || isConvertedWeightView(g, n) || g.kind(n) == OpKind::Quantize)
      continue;
    bool feedsRuntime = false;
    for (Node u : g.users(n)) feedsRuntime |= !constant.count(u) || g.kind(u) == OpKind::Quantize;
    if (feedsRuntime) frontier.push_back(n);
  }
  if (frontier.empty()) return ir::PassResult::unchanged();

  // 3. Keys, and the values still to compute.
  std::vector<std::string> keys, missingKeys;
  std::vector<Node> missing;
  for (Node n : frontier) {
    ir::Graph cone("const");
    copyCone(g, {n}, cone);
    keys.push_back(ir::print(cone));
    if (!evaluator.known(keys.back())) {
      missing.push_back(n);
      missingKeys.push_back(keys.back());
    }
  }
  if (!missing.empty()) {
    ir::Graph sub("constants");
    copyCone(g, missing, sub);
    evaluator.evaluate(sub, missingKeys);
  }

  // 4.
  for (std::size_t i = 0; i < frontier.size(); ++i) {
    const std::string name = hashName(keys[i]);
    evaluator.bind(name, keys[i]);
    g.replaceAllUsesWith(frontier[i], g.addWeight(name, g.type(frontier[i])));
  }
  Rewriter rewriter(g, ctx, name());
  const auto sweep = g.topologicalOrder();
  rewriter.run({sweep.rbegin(), sweep.rend()}, [&](Node n) {
    if (!constant.count(n) || !isTriviallyDead(g, n)) return false;
    rewriter.erase(n);
    return true;
  });
  return ir::PassResult::changed();
}

}  // namespace txl::passes
