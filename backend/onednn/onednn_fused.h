// backend/onednn/onednn_fused.h - oneDNN lowering of the fused ops the passes
// introduce: rel_scores (an own kernel, one pass over the score block),
// logprob_pick (an own kernel, one read of a logits row per target in range) and
// fused_linear (one matmul primitive with bias and eltwise_relu / binary_add
// post-ops). The Lowering members lowerRelScores / lowerLogprobPick / lowerFusedLinear are
// defined in onednn_fused.cpp; these free functions are shared with the
// target info, which asks oneDNN what the lowering would get.
//
//   auto pd = fusedLinearPd(engine, xType, wType, /*bias=*/true, /*residual=*/false, /*relu=*/true, true);
//   pd.impl_info_str();   // "brg:avx512_core"
#pragma once

#include <cstdint>

#include <optional>

#include <oneapi/dnnl/dnnl.hpp>

#include "ir/types.h"

namespace txl::backend::onednn {

// The matmul of fused_linear: src [M, in] x weights [in, out] (+ bias [1, out]),
// post-ops eltwise_relu (when relu), then binary_add of a dense [M, out] (when residual);
// the result, the bias and the residual in `dst` when given, else x's dtype.
dnnl::matmul::primitive_desc fusedLinearPd(const dnnl::engine& eng, const ir::TensorType& x, const ir::TensorType& w,
                                           bool bias, bool residual, bool relu, bool anyWeights,
                                           std::optional<ir::DType> dst = std::nullopt);

}  // namespace txl::backend::onednn

namespace txl::backend::kernels {

// rel_scores over `matrices` [q, k] blocks of ac and bd (dense), mask [q, k]:
// out = value where mask != 0, else scale * (ac[i, j] + bd[i, j + q - 1 - i])
// (bd term 0 when j + q - 1 - i >= k), then with `softmax` each row's
// softmax. Reads bd only inside its row.
void relScores(const float* ac, const float* bd, const float* mask, std::int64_t matrices, std::int64_t q,
               std::int64_t k, float scale, float value, bool softmax, float* out);

// The attributes of logprob_pick (ir/ops.def); column is read only with y.
struct LogprobPickRange {
  std::int64_t offset = 0, start = 0, end = 0, classes = 0, column = 0;
};

// logprob_pick over `rows` rows: x [rows, n], idx [rows], y [rows, m] or null,
// out [rows] (dense). Throws txl::Error (before any work) for an index
// outside [0, classes).
void logprobPick(const float* x, std::int64_t n, const std::int64_t* idx, std::int64_t rows, const float* y,
                 std::int64_t m, const LogprobPickRange& range, float* out);

// logprob_pick's value for the rows `positions[0..count)` (every target in
// the range, checked by the caller) from their logits gathered in x
// [count, n] (row i is position positions[i]); y [rows, m] or null is read at
// the positions themselves; writes out[positions[i]] only. Row by row the
// same arithmetic as logprobPick.
void logprobPickRows(const float* x, std::int64_t n, const std::int64_t* idx, const std::int64_t* positions,
                     std::int64_t count, const float* y, std::int64_t m, const LogprobPickRange& range, float* out);

}  // namespace txl::backend::kernels
