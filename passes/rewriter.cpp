// passes/rewriter.cpp - isTriviallyDead, isConstant and the worklist driver.
#include "passes/rewriter.h"

#include <algorithm>
#include <atomic>

#include "ir/target_info.h"

namespace txl::passes {

using ir::Effects;
using ir::Node;
using ir::OpKind;

namespace {
std::atomic<std::uint64_t> visitCount{0};
}  // namespace

bool isTriviallyDead(const ir::Graph& g, Node n) {
  const OpKind kind = g.kind(n);
  const Effects effects = ir::opInfo(kind).effects;
  return (effects == Effects::Pure || effects == Effects::ReadsState) && kind != OpKind::Input && !g.hasUsers(n);
}

bool isConstant(const ir::Graph& g, Node n) {
  if (ir::opInfo(g.kind(n)).effects != Effects::Pure) return false;
  for (Node o : g.operands(n))
    if (!isConstant(g, o)) return false;
  return true;
}

std::uint64_t Rewriter::visits() { return visitCount.load(); }

bool Rewriter::run(const std::vector<Node>& seeds, const std::function<bool(Node)>& visit, Revisit order) {
  std::vector<Entry> round;
  round.reserve(seeds.size());
  for (Node n : seeds) round.push_back({n, g_.op(n).id});
  bool changed = false;
  while (!round.empty()) {
    for (const Entry& e : round) {
      if (erased_.count(e.id)) continue;
      ++visitCount;
      changed |= visit(e.node);
    }
    round.clear();
    if (order == Revisit::InTopologicalOrder && !next_.empty()) {
      for (Node n : g_.topologicalOrder())
        if (queued_.count(g_.op(n).id)) round.push_back({n, g_.op(n).id});
    } else {
      round.swap(next_);
    }
    next_.clear();
    queued_.clear();
  }
  return changed;
}

void Rewriter::revisit(Node n) {
  const std::uint64_t id = g_.op(n).id;
  if (queued_.insert(id).second) next_.push_back({n, id});
}

void Rewriter::replace(Node from, Node to) {
  g_.replaceAllUsesWith(from, to);
  eraseIfDead(from);
}

void Rewriter::erase(Node n) {
  erased_.insert(g_.op(n).id);
  g_.erase(n);
}

void Rewriter::eraseIfDead(Node n) {
  if (!isTriviallyDead(g_, n)) return;
  std::vector<Node> operands = g_.operands(n);
  erase(n);
  std::sort(operands.begin(), operands.end());
  operands.erase(std::unique(operands.begin(), operands.end()), operands.end());
  for (Node o : operands) eraseIfDead(o);
}

std::optional<std::string> Rewriter::slowPathReason(Node candidate) {
  if (!ctx_.target) return std::nullopt;
  auto why = ctx_.target->slowPathReason(g_, candidate);
  if (why) erase(candidate);
  return why;
}

bool Rewriter::keepIfFast(Node candidate, const std::string& where) {
  auto why = slowPathReason(candidate);
  if (why) skipped(where + ": " + *why);
  return !why;
}

}  // namespace txl::passes
