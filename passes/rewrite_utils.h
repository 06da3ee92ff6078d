// passes/rewrite_utils.h - small helpers the Transformer-XL passes share:
// op builders that infer types, use tests, and the matcher of the
// reference's pad / reshape / slice / reshape rel-shift. (Erasing, the
// worklist and the target question are passes/rewriter.h.)
//
//   Node s = rw::slice(g, x, 0, mlen, klen);
//   if (auto src = rw::matchLiteralRelShift(g, n)) g.replaceAllUsesWith(n, g.add(OpKind::RelShift, {*src}));
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "ir/graph.h"
#include "passes/rewriter.h"

namespace txl::passes::rw {

using Ints = std::vector<std::int64_t>;

ir::Node slice(ir::Graph& g, ir::Node x, std::int64_t axis, std::int64_t start, std::int64_t end);
ir::Node reshape(ir::Graph& g, ir::Node x, Ints shape);
ir::Node permute(ir::Graph& g, ir::Node x, Ints perm);
ir::Node scale(ir::Graph& g, ir::Node x, double factor);
ir::Node concat(ir::Graph& g, const std::vector<ir::Node>& xs, std::int64_t axis);

// passes::isConstant (passes/rewriter.h), under the name tools/ use.
inline bool isConstant(const ir::Graph& g, ir::Node n) { return passes::isConstant(g, n); }

// The normalized integer attribute `axis` of n (n has a result or an operand of that rank).
std::int64_t axisOf(const ir::Graph& g, ir::Node n);

// n == reshape(slice(reshape(pad(x, last axis, 1 before, 0 after, value 0), [.., K+1, Q]), rows 1..K+1), [.., Q, K])
// with x [.., Q, K]: returns x.
std::optional<ir::Node> matchLiteralRelShift(const ir::Graph& g, ir::Node n);

// n has exactly one live user (a sink, or an op with users of its own) and is not read twice by it.
bool singleUse(const ir::Graph& g, ir::Node n);

// Follows reshape and permute operands down from n; appends every view passed to `path`.
ir::Node throughViews(const ir::Graph& g, ir::Node n, std::vector<ir::Node>* path = nullptr);

}  // namespace txl::passes::rw
