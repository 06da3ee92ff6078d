// tests/passes/numeric_support.h - run a graph on seeded random data and
// compare two runs: the numeric half of every pass test.
//
//   TensorMap inputs = randomInputs(before, 7);
//   auto diff = compareOutputs(run(before, weights, inputs), run(after, weights, inputs), 1e-5);
//   REQUIRE_FALSE(diff);
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "backend/executor.h"
#include "ir/graph.h"

namespace txl::testing {

// A value for every weight op of g (uniform in [-0.5, 0.5]), by name.
ir::TensorMap randomWeights(const ir::Graph& g, std::uint64_t seed);

// A value for every input and mem_read of g. Float inputs uniform in [-1, 1];
// i64 inputs are ids in [0, n) where n is the smallest bound any user sets
// (pick: the picked axis; logprob_pick: classes; embedding: lo + rows), 8 when none.
ir::TensorMap randomInputs(const ir::Graph& g, std::uint64_t seed);

// `inputs` as g binds them: a float input or memory g takes in another float
// dtype (a bf16 state window after bf16-state) is converted (rounded) to it.
ir::TensorMap inputsAs(const ir::Graph& g, const ir::TensorMap& inputs);

// Runs g on the executor and returns deep copies of every output.
ir::TensorMap runGraph(backend::Executor& exe, const ir::Graph& g, const ir::TensorMap& weights,
                       const ir::TensorMap& inputs);

// nullopt when both maps hold the same names and every element agrees:
// |a - b| <= rtol * max(|a|, |b|) + atol (infinities equal, NaN equal to NaN).
// Otherwise a message naming the first mismatch.
std::optional<std::string> compareOutputs(const ir::TensorMap& expected, const ir::TensorMap& actual, double rtol,
                                          double atol = 1e-6);

}  // namespace txl::testing
