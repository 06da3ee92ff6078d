// backend/constant_folding.cpp - foldConstants().
//
// Algorithm:
//   1. Mark constant nodes in topological order: weight, constant,
//      pos_encoding, attn_mask, and any op whose operands are all constant.
//   2. The frontier: constant nodes with a non-constant user (or a sink),
//      minus bare weights and views of one weight.
//   3. For each frontier node, print its constant cone as a graph: that text
//      is the cache key. Evaluate the misses together, in one graph, with the
//      executor, and cache clones of the results.
//   4. Replace each frontier node by a weight op bound to its value; sweep the
//      constant nodes left without users.
#include "backend/constant_folding.h"

#include <functional>
#include <set>

#include "ir/check.h"
#include "ir/printer.h"

namespace txl::backend {

using ir::Node;
using ir::OpKind;

bool ConstantCache::contains(const std::string& key) const {
  std::lock_guard lock(mutex_);
  return values_.count(key) != 0;
}

ir::Tensor ConstantCache::find(const std::string& key) const {
  std::lock_guard lock(mutex_);
  auto it = values_.find(key);
  return it == values_.end() ? ir::Tensor() : it->second;
}

void ConstantCache::insert(const std::string& key, ir::Tensor value) {
  std::lock_guard lock(mutex_);
  values_.emplace(key, std::move(value));
}

std::size_t ConstantCache::size() const {
  std::lock_guard lock(mutex_);
  return values_.size();
}

std::size_t ConstantCache::bytes() const {
  std::lock_guard lock(mutex_);
  std::size_t total = 0;
  for (const auto& [key, value] : values_) total += value.bytes();
  return total;
}

namespace {

bool isSourceConstant(OpKind kind) {
  return kind == OpKind::Weight || kind == OpKind::Constant || kind == OpKind::PosEncoding ||
         kind == OpKind::AttnMask;
}

// A weight, or a reshape / leading-axis slice of a view of a weight.
bool isWeightView(const ir::Graph& g, Node n) {
  switch (g.kind(n)) {
    case OpKind::Weight: return true;
    case OpKind::Reshape: return isWeightView(g, g.operand(n, 0));
    case OpKind::Slice: return g.op(n).attrs.getInt("axis") == 0 && isWeightView(g, g.operand(n, 0));
    default: return false;
  }
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

FoldedGraph foldConstants(const ir::Graph& graph, const TensorMap& weights, ConstantCache& cache, Executor& executor) {
  FoldedGraph result{graph, weights, 0};
  ir::Graph& g = result.graph;
  auto order = g.topologicalOrder();

  std::set<Node> constant;
  for (Node n : order) {
    OpKind kind = g.kind(n);
    if (!ir::opInfo(kind).hasResult || kind == OpKind::Input || kind == OpKind::MemRead || kind == OpKind::MemWindow)
      continue;
    bool all = isSourceConstant(kind) || g.numOperands(n) > 0;
    for (Node o : g.operands(n)) all &= constant.count(o) > 0;
    if (all) constant.insert(n);
  }

  std::vector<Node> frontier;
  for (Node n : order) {
    if (!constant.count(n) || isWeightView(g, n)) continue;
    bool feedsRuntime = false;
    for (Node u : g.users(n)) feedsRuntime |= !constant.count(u);
    if (feedsRuntime) frontier.push_back(n);
  }
  if (frontier.empty()) return result;

  // Cache keys, and the values still to compute.
  std::vector<std::string> keys;
  std::vector<Node> missing;
  std::vector<std::size_t> missingIndex;
  for (std::size_t i = 0; i < frontier.size(); ++i) {
    ir::Graph cone("const");
    copyCone(g, {frontier[i]}, cone);
    keys.push_back(ir::print(cone));
    if (!cache.contains(keys.back())) {
      missing.push_back(frontier[i]);
      missingIndex.push_back(i);
    }
  }
  if (!missing.empty()) {
    ir::Graph sub("constants");
    copyCone(g, missing, sub);
    auto plan = executor.compile(sub, weights);
    const TensorMap& values = plan->run({});
    for (std::size_t j = 0; j < missing.size(); ++j)
      cache.insert(keys[missingIndex[j]], values.at(std::to_string(j)).clone());
  }

  for (std::size_t i = 0; i < frontier.size(); ++i) {
    std::string name = hashName(keys[i]);
    ir::Tensor value = cache.find(keys[i]);
    TXL_CHECK(cache.contains(keys[i]), "constant missing from the cache");
    result.weights[name] = value;
    Node w = g.addWeight(name, g.type(frontier[i]));
    g.replaceAllUsesWith(frontier[i], w);
    ++result.folded;
  }
  // Sweep constants left without users, users first.
  auto sweep = g.topologicalOrder();
  for (auto it = sweep.rbegin(); it != sweep.rend(); ++it)
    if (constant.count(*it) && !g.hasUsers(*it)) g.erase(*it);
  return result;
}

}  // namespace txl::backend
