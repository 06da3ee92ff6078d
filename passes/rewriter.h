// passes/rewriter.h - the rewrite toolkit every pass is written with.
//
// Three pieces, so that a pass is its match-and-rewrite logic and nothing else:
//   - isTriviallyDead / isConstant: the one answer to "may this node go" and
//     "is this value the same in every run", both read off the Effects column
//     of ir/ops.def.
//   - Rewriter::run: a worklist driver. It visits the seeds a pass names, in
//     the pass's order, then, round by round, only the nodes a rewrite asked
//     to be looked at again (revisit), never the whole graph per match. Nodes
//     a rewrite erases are dropped from the worklist, so a pass may erase
//     freely (through the Rewriter) and keep its seeds as plain nodes.
//   - Rewriter::keepIfFast / slowPathReason: "build the candidate, ask the
//     target, keep it or drop it with a remark" in one call.
//
//   Rewriter rw(g, ctx, name());
//   rw.run(g.nodesOfKind(OpKind::Relu), [&](Node n) {
//     Node fused = g.add(OpKind::FusedLinear, ...);
//     if (!rw.keepIfFast(fused, "relu " + g.type(n).str())) return false;
//     rw.replace(n, fused);   // every use reads `fused`; n goes with what only it read
//     return true;
//   });
//
// Rewriter::visits() counts the visits of every driver in the process (the
// test that a pass's work grows with the graph, not with its square).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "ir/graph.h"
#include "ir/pass.h"

namespace txl::passes {

// n has no users and removing it changes nothing a caller sees: its op is
// Pure or only reads state, and it is not an input (the inputs are the
// graph's signature, which callers bind by name).
bool isTriviallyDead(const ir::Graph& g, ir::Node n);

// n's value is the same in every run: a Pure op whose operands are all
// constant (a Pure source is). Folded once per plan (passes/fold_constants.h).
bool isConstant(const ir::Graph& g, ir::Node n);

class Rewriter {
 public:
  // In which order the nodes queued by revisit() are visited, round by round.
  enum class Revisit { InQueueOrder, InTopologicalOrder };

  Rewriter(ir::Graph& g, ir::PassContext& ctx, std::string_view pass) : g_(g), ctx_(ctx), pass_(pass) {}

  ir::Graph& graph() { return g_; }

  // Visits every seed once, in order (skipping those erased meanwhile), then
  // the nodes queued by revisit() during the previous round, until a round
  // queues nothing. `visit` returns whether it changed the graph; run returns
  // whether any visit did.
  bool run(const std::vector<ir::Node>& seeds, const std::function<bool(ir::Node)>& visit,
           Revisit order = Revisit::InQueueOrder);
  // Visit n (again) in the next round.
  void revisit(ir::Node n);

  // Every use of `from` reads `to`; then `from` goes if trivially dead, with what only it read.
  void replace(ir::Node from, ir::Node to);
  // Erases n (which has no users); for candidates a pass built and drops.
  void erase(ir::Node n);
  // Erases n if it is trivially dead, then its operands likewise.
  void eraseIfDead(ir::Node n);
  // Whether the node created with this id was erased through this rewriter.
  bool erased(std::uint64_t id) const { return erased_.count(id) != 0; }

  // The target's reason to decline the candidate n (just built by the pass),
  // after erasing it; nullopt (n kept) when the target runs it on a fast
  // path or there is no target.
  std::optional<std::string> slowPathReason(ir::Node candidate);
  // slowPathReason, reported as a skipped remark "<where>: <reason>"; true when n is kept.
  bool keepIfFast(ir::Node candidate, const std::string& where);

  void applied(std::string message) { ctx_.applied(pass_, std::move(message)); }
  void skipped(std::string message) { ctx_.skipped(pass_, std::move(message)); }

  // Visits of every Rewriter::run in this process so far.
  static std::uint64_t visits();

 private:
  struct Entry {
    ir::Node node;
    std::uint64_t id;
  };

  ir::Graph& g_;
  ir::PassContext& ctx_;
  std::string_view pass_;
  std::vector<Entry> next_;                   // queued for the next round
  std::unordered_set<std::uint64_t> queued_;  // ids in next_
  std::unordered_set<std::uint64_t> erased_;  // ids erased through this rewriter
};

}  // namespace txl::passes
