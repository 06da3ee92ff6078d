// passes/fuse_nll.cpp - pick(log-probabilities, targets) without the log-probabilities.
//
// The literal output layer builds the full log-probabilities [q, B, n_token]
// (frontend/graph_builder.cpp): a log_softmax per cluster, the shortlist's
// slice of the head, each tail cluster plus its head column (broadcast), one
// concat; the NLL then picks one value per position. When nothing else reads
// them, only the picked value of one cluster per position is needed:
//
//   pick(concat(P_0, ..., P_k), t) = sum_i logprob_pick_i(t)
//
// where piece P_i covers ids [o_i, o_i + w_i) and logprob_pick_i (ir/ops.def)
// gives P_i's value at t - o_i when t is in that range and 0 otherwise. Each
// position's target lies in exactly one range, so the sum adds zeros to one
// value (exact). The oneDNN kernel computes a log-sum-exp only for the rows
// whose target is in range and writes nothing of the logits' size: the
// log_softmax, slice, add and concat passes over [q, B, n_token] go.
//
// Algorithm:
//   1. Sites: pick(L, t), L f32 [..., N]. Pieces: the operands of L when L is
//      a concat over the last axis (offsets their running widths), else L
//      itself at offset 0.
//   2. Each piece must be Q, add(Q, C) or add(C, Q), where Q is
//      log_softmax(x) over the last axis or a slice of it over that axis
//      (columns [start, end) of x), and C [..., 1] is a one-column slice of
//      log_softmax(y) over the last axis (y: the head, C broadcast over Q).
//      Otherwise skip with a remark.
//   3. Every value matched (concat, adds, slices, log_softmaxes) must be read
//      only inside the match and the pick: no "logprob" output, no other
//      user. Otherwise skip with a remark.
//   4. Replace the pick by the sum (add chain) of one logprob_pick per piece
//      {offset, start, end, classes = N[, column]} and erase what only the
//      pick read.
#include "passes/fuse_nll.h"

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ir/shape_inference.h"
#include "passes/rewrite_utils.h"

namespace txl::passes {

using ir::Node;
using ir::OpKind;

namespace {

// log_softmax(x) over the last axis, columns [start, end) of it.
struct Columns {
  Node x;
  std::int64_t start = 0, end = 0;
};

struct Piece {
  Columns cols;
  std::optional<Columns> head;  // y and its one column, when the piece adds the head's log-probability
};

bool isF32(const ir::Graph& g, Node n) { return g.type(n).dtype == ir::DType::F32; }

bool lastAxis(const ir::Graph& g, Node n) { return rw::axisOf(g, n) == std::int64_t(g.type(n).rank()) - 1; }

// n = log_softmax(x) or slice(log_softmax(x)), both over the last axis; the
// matched nodes go into `matched`.
std::optional<Columns> logSoftmaxColumns(const ir::Graph& g, Node n, std::vector<Node>& matched) {
  std::optional<Node> slice;
  Node ls = n;
  if (g.kind(n) == OpKind::Slice) {
    if (!lastAxis(g, n)) return std::nullopt;
    slice = n;
    ls = g.operand(n, 0);
  }
  if (g.kind(ls) != OpKind::LogSoftmax || !lastAxis(g, ls) || !isF32(g, ls)) return std::nullopt;
  Columns c{g.operand(ls, 0), 0, g.type(ls).shape.back()};
  if (slice) {
    c.start = g.op(*slice).attrs.getInt("start");
    c.end = g.op(*slice).attrs.getInt("end");
    matched.push_back(*slice);
  }
  matched.push_back(ls);
  return c;
}

std::optional<Piece> matchPiece(const ir::Graph& g, Node n, std::vector<Node>& matched) {
  if (auto c = logSoftmaxColumns(g, n, matched)) return Piece{*c, std::nullopt};
  if (g.kind(n) != OpKind::Add) return std::nullopt;
  const ir::Shape& shape = g.type(n).shape;
  ir::Shape columnShape(shape.begin(), shape.end() - 1);
  columnShape.push_back(1);
  for (int first = 0; first < 2; ++first) {
    Node q = g.operand(n, first), c = g.operand(n, 1 - first);
    if (g.type(q) != g.type(n) || g.type(c).shape != columnShape) continue;
    std::vector<Node> tried;
    auto cols = logSoftmaxColumns(g, q, tried);
    auto head = logSoftmaxColumns(g, c, tried);
    if (!cols || !head || head->end != head->start + 1) continue;
    matched.insert(matched.end(), tried.begin(), tried.end());
    matched.push_back(n);
    return Piece{*cols, head};
  }
  return std::nullopt;
}

}  // namespace

ir::PassResult FuseNll::run(ir::Graph& g, ir::PassContext& ctx) {
  Rewriter rewriter(g, ctx, name());
  int fused = 0;
  rewriter.run(g.nodesOfKind(OpKind::Pick), [&](Node pick) {
    if (!g.hasUsers(pick)) return false;
    const Node lp = g.operand(pick, 0), targets = g.operand(pick, 1);
    const std::string where = "pick of " + g.type(lp).str();
    if (!isF32(g, lp)) return false;
    // 1. The pieces and their offsets.
    std::vector<Node> matched, pieceNodes = {lp};
    if (g.kind(lp) == OpKind::Concat && lastAxis(g, lp)) {
      matched.push_back(lp);
      pieceNodes = g.operands(lp);
    }
    // 2. Each piece: a log_softmax's columns, maybe plus a head column.
    std::vector<Piece> pieces;
    for (Node p : pieceNodes) {
      auto piece = matchPiece(g, p, matched);
      if (!piece) break;
      pieces.push_back(*piece);
    }
    if (pieces.size() != pieceNodes.size()) {
      rewriter.skipped(where +
                       ": a piece is not a log_softmax over the last axis (or a slice of one, plus "
                       "one column of another)");
      return false;
    }
    // 3. Nothing outside the match reads what it matched.
    const std::set<Node> inside(matched.begin(), matched.end());
    std::optional<std::string> reader;
    for (Node n : matched)
      for (Node u : g.users(n))
        if (u != pick && !inside.count(u))
          reader = std::string(ir::opInfo(g.kind(u)).name) +
                   (g.kind(u) == OpKind::Output ? " \"" + g.op(u).attrs.getString("name") + "\"" : "");
    if (reader) {
      rewriter.skipped(where + ": the log-probabilities (or a part of them) are also read by " + *reader);
      return false;
    }
    // 4. One logprob_pick per piece, summed.
    const std::int64_t classes = g.type(lp).shape.back();
    std::int64_t offset = 0;
    std::optional<Node> sum;
    for (const Piece& p : pieces) {
      ir::Attrs attrs{{"offset", offset}, {"start", p.cols.start}, {"end", p.cols.end}, {"classes", classes}};
      std::vector<Node> operands = {p.cols.x, targets};
      if (p.head) {
        operands.push_back(p.head->x);
        attrs.set("column", p.head->start);
      }
      Node term = g.add(OpKind::LogprobPick, operands, attrs);
      sum = sum ? g.add(OpKind::Add, {*sum, term}) : term;
      offset += p.cols.end - p.cols.start;
    }
    rewriter.replace(pick, *sum);  // and, through it, the log-probabilities
    rewriter.applied(where + ": " + std::to_string(pieces.size()) +
                     " cluster(s) as logprob_pick (no log-probabilities materialized)");
    ++fused;
    return true;
  });
  return ir::PassResult::changedIf(fused > 0);
}

}  // namespace txl::passes
