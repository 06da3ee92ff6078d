// passes/cache_projected_memory.cpp - the memory holds projected keys and
// values (the "kv" memory form) instead of each layer's input.
//
// The reference remembers every layer's input h over the last mem_len
// positions and re-projects all of them through qkv_net in every segment:
// linear([m; h], W). A linear acts row by row (and so does the pre-norm layer
// norm before it), so linear([m; h], W) = [linear(m, W); linear(h, W)]: if the
// slot remembers linear(m, W)'s columns that attention reads for keys and
// values, each segment projects only its qlen new rows. Keys carry no
// position in Transformer-XL (positions enter through r), so this is exact.
// The slot's state changes meaning (its width becomes the cached columns'),
// so this pass selects the memory form; `--memory hidden` disables it.
//
// Algorithm, for every mem_write(s) of S = slice(C, axis 0, a, R), the last
// rows of C, with C = concat(mem_read(s), h) or C = h (mlen 0):
//   1. Users of C other than S: at most a layer_norm N(C) (pre-norm), and the
//      projection L = linear(X, W[, b]) with X = C or N(C), constant W; row
//      slices [mlen, R) of C or N(C) (h itself) are allowed too.
//      Anything else: the slot is left alone (remark).
//   2. Users of L: slices of its last axis. A slice all of whose users take
//      rows [mlen, R) only (the queries) is query-only; the others are the
//      memory columns, their union [ua, ub) (it must be contiguous).
//   3. Rewrite: P = linear(h or N(h), W[, b]) over the new rows;
//      M = slice(P, last, ua, ub); KV = concat(mem_read(s) [mlen, .., ub-ua], M)
//      (M alone when mlen is 0); mem_write(s, slice(KV, 0, a, R)). Query-only
//      slices read P, memory slices read KV, row slices of C read h.
//   4. A slot whose memory nothing but its own update reads (the reference
//      keeps the last layer's output but never reads it) is dropped.
// What a rewrite leaves dead is erased from the nodes it replaced (their
// cones), not by sweeping the graph: each mem_write is visited once.
#include "passes/cache_projected_memory.h"

#include <algorithm>
#include <map>

#include "ir/shape_inference.h"
#include "passes/rewriter.h"

namespace txl::passes {

using ir::Node;
using ir::OpKind;

namespace {

std::int64_t axis(const ir::Graph& g, Node slice) {
  return *ir::normalizeAxis(g.op(slice).attrs.getInt("axis"), g.type(g.operand(slice, 0)).rank());
}

bool isSlice(const ir::Graph& g, Node n, std::int64_t ax, std::int64_t start, std::int64_t end) {
  return g.kind(n) == OpKind::Slice && axis(g, n) == ax && g.op(n).attrs.getInt("start") == start &&
         g.op(n).attrs.getInt("end") == end;
}

bool isConstantWeight(const ir::Graph& g, Node n) {
  switch (g.kind(n)) {
    case OpKind::Weight:
      return true;
    case OpKind::Input:
    case OpKind::MemRead:
    case OpKind::MemWindow:
      return false;
    default:
      for (Node o : g.operands(n))
        if (!isConstantWeight(g, o)) return false;
      return g.numOperands(n) > 0;
  }
}

class SlotRewrite {
 public:
  SlotRewrite(Rewriter& rewriter, Node write) : g_(rewriter.graph()), rewriter_(rewriter), write_(write) {}

  // Returns whether the graph changed.
  bool run() {
    slot_ = g_.op(write_).attrs.getInt("slot");
    kept_ = g_.operand(write_, 0);
    if (g_.kind(kept_) != OpKind::Slice || axis(g_, kept_) != 0) return false;
    c_ = g_.operand(kept_, 0);
    rows_ = g_.type(c_).shape[0];
    if (g_.op(kept_).attrs.getInt("end") != rows_) return false;
    h_ = c_;
    if (g_.kind(c_) == OpKind::Concat && g_.numOperands(c_) == 2 && g_.kind(g_.operand(c_, 0)) == OpKind::MemRead &&
        g_.op(g_.operand(c_, 0)).attrs.getInt("slot") == slot_) {
      read_ = g_.operand(c_, 0);
      h_ = g_.operand(c_, 1);
      mlen_ = g_.type(*read_).shape[0];
      if (g_.users(*read_).size() != 1) return skip("its memory is read outside [memory; h]");
    } else if (mlen_ == 0 && g_.kind(c_) == OpKind::Concat) {
      return false;
    }
    if (!read_ && c_ != h_) return false;
    if (!classifyUsers()) return false;
    if (!projection_) return dropWriteOnly();
    return rewrite();
  }

 private:
  bool skip(const std::string& why) {
    rewriter_.skipped("slot " + std::to_string(slot_) + " keeps hidden states: " + why);
    return false;
  }

  // Step 1 and 2.
  bool onlyColumnSlices(Node linear) const {
    const std::int64_t last = g_.type(linear).rank() - 1;
    for (Node u : g_.users(linear))
      if (g_.kind(u) != OpKind::Slice || axis(g_, u) != last) return false;
    return g_.hasUsers(linear);
  }

  bool isProjection(Node u, Node in) const {
    return g_.kind(u) == OpKind::Linear && g_.operand(u, 0) == in && isConstantWeight(g_, g_.operand(u, 1)) &&
           (g_.numOperands(u) == 2 || isConstantWeight(g_, g_.operand(u, 2))) && onlyColumnSlices(u);
  }

  bool classifyUsers() {
    std::vector<Node> inputs = {c_};
    for (Node u : g_.users(c_))
      if (g_.kind(u) == OpKind::LayerNorm && g_.operand(u, 0) == c_ && !norm_) {
        norm_ = u;
        inputs.push_back(u);
      }
    for (Node in : inputs)
      for (Node u : g_.users(in)) {
        if (u == kept_ || u == norm_) continue;
        if (!projection_ && isProjection(u, in)) {
          projection_ = u;
        } else if (read_ && isSlice(g_, u, 0, mlen_, rows_)) {
          hRows_.push_back(u);
        } else if (read_) {
          return skip("an unexpected user of [memory; h]");
        }  // mlen 0: h has other users (the residual, ...) anyway
      }
    if (!projection_) return true;  // nothing projects this slot's memory: it is write-only
    for (Node u : g_.users(*projection_)) {
      bool queryOnly = g_.hasUsers(u);
      for (Node v : g_.users(u)) queryOnly &= isSlice(g_, v, 0, mlen_, rows_);
      (queryOnly ? queryCols_ : memoryCols_).push_back(u);
    }
    if (memoryCols_.empty()) return skip("no column of the projection is read as keys or values");
    std::int64_t lo = INT64_MAX, hi = -1;
    for (Node u : memoryCols_) {
      lo = std::min(lo, g_.op(u).attrs.getInt("start"));
      hi = std::max(hi, g_.op(u).attrs.getInt("end"));
    }
    {
      // The cached span must be covered without gaps.
      std::vector<std::pair<std::int64_t, std::int64_t>> spans;
      for (Node u : memoryCols_) spans.push_back({g_.op(u).attrs.getInt("start"), g_.op(u).attrs.getInt("end")});
      std::sort(spans.begin(), spans.end());
      std::int64_t reach = spans[0].first;
      for (auto [a, b] : spans) {
        if (a > reach) return skip("the key/value columns are not contiguous");
        reach = std::max(reach, b);
      }
    }
    colLo_ = lo;
    colHi_ = hi;
    return true;
  }

  bool dropWriteOnly() {
    rewriter_.erase(write_);
    rewriter_.eraseIfDead(kept_);
    rewriter_.applied("slot " + std::to_string(slot_) + " is never read: dropped");
    return true;
  }

  // Step 3.
  bool rewrite() {
    const Node proj = *projection_;
    Node xh = h_;
    if (norm_ && g_.operand(proj, 0) == *norm_)
      xh = g_.add(OpKind::LayerNorm, {h_, g_.operand(*norm_, 1), g_.operand(*norm_, 2)}, g_.op(*norm_).attrs);
    std::vector<Node> projOperands = g_.operands(proj);
    projOperands[0] = xh;
    const Node p = g_.add(OpKind::Linear, projOperands, g_.op(proj).attrs);
    const std::int64_t last = g_.type(p).rank() - 1;
    const Node cached = g_.add(OpKind::Slice, {p}, {{"axis", last}, {"start", colLo_}, {"end", colHi_}});
    Node kv = cached;
    const std::int64_t keepStart = g_.op(kept_).attrs.getInt("start");
    // The old update goes first; the slot's new state takes its number.
    rewriter_.erase(write_);
    if (read_) {
      ir::TensorType memType = g_.type(cached);
      memType.shape[0] = mlen_;
      Node memory = g_.add(OpKind::MemRead, {}, {{"slot", slot_}}, memType);
      kv = g_.add(OpKind::Concat, {memory, cached}, {{"axis", std::int64_t(0)}});
    }
    g_.add(
        OpKind::MemWrite,
        {g_.add(OpKind::Slice, {kv}, {{"axis", std::int64_t(0)}, {"start", keepStart}, {"end", g_.type(kv).shape[0]}})},
        {{"slot", slot_}});
    std::vector<Node> replaced;
    for (Node u : queryCols_)
      for (Node v : g_.users(u)) {
        g_.replaceAllUsesWith(v, g_.add(OpKind::Slice, {p}, g_.op(u).attrs));
        replaced.push_back(v);
      }
    for (Node u : memoryCols_) {
      g_.replaceAllUsesWith(u, g_.add(OpKind::Slice, {kv},
                                      {{"axis", last},
                                       {"start", g_.op(u).attrs.getInt("start") - colLo_},
                                       {"end", g_.op(u).attrs.getInt("end") - colLo_}}));
      replaced.push_back(u);
    }
    for (Node r : hRows_) {
      g_.replaceAllUsesWith(r, g_.kind(g_.operand(r, 0)) == OpKind::LayerNorm ? xh : h_);
      replaced.push_back(r);
    }
    // The old projection, its slices, [memory; h] and the old mem_read are
    // dead now: all in the cone of what was replaced and of the old update.
    replaced.push_back(kept_);
    for (Node n : replaced) rewriter_.eraseIfDead(n);
    rewriter_.applied("slot " + std::to_string(slot_) + " caches columns [" + std::to_string(colLo_) + ", " +
                      std::to_string(colHi_) + ") of its projection");
    return true;
  }

  ir::Graph& g_;
  Rewriter& rewriter_;
  Node write_;
  std::int64_t slot_ = 0, mlen_ = 0, rows_ = 0, colLo_ = 0, colHi_ = 0;
  Node kept_{}, c_{}, h_{};
  std::optional<Node> read_, norm_, projection_;
  std::vector<Node> hRows_, queryCols_, memoryCols_;
};

}  // namespace

ir::PassResult CacheProjectedMemory::run(ir::Graph& g, ir::PassContext& ctx) {
  // The writes as they are now: each rewrite replaces its own by a new one.
  Rewriter rewriter(g, ctx, name());
  const bool changed =
      rewriter.run(g.nodesOfKind(OpKind::MemWrite), [&](Node write) { return SlotRewrite(rewriter, write).run(); });
  return ir::PassResult::changedIf(changed);
}

}  // namespace txl::passes
