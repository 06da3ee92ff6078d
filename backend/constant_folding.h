// backend/constant_folding.h - evaluate what does not change between segments, once.
//
// A value is constant when it depends only on weights, constants, position
// tables and masks, never on tokens or memory. foldConstants() finds the
// constant values that non-constant ops read (the frontier), evaluates them
// with the model's own executor, and replaces each by a weight op bound to the
// result. Results are cached in a ConstantCache keyed by the printed text of
// the value's constant cone, so the plans of every segment shape of a model
// share them (with fold-positions, W_r R is computed once for the longest
// klen, not once per shape).
//
// Deliberately not folded: a frontier value that is only a view of one weight
// (reshape, or a slice along axis 0): folding it would copy the weight, and
// executors read such views in place.
#pragma once

#include <map>
#include <mutex>
#include <string>

#include "backend/executor.h"

namespace txl::backend {

class ConstantCache {
 public:
  bool contains(const std::string& key) const;
  // The tensor cached under `key`, or an empty Tensor.
  ir::Tensor find(const std::string& key) const;
  void insert(const std::string& key, ir::Tensor value);
  std::size_t size() const;
  std::size_t bytes() const;

 private:
  mutable std::mutex mutex_;
  std::map<std::string, ir::Tensor> values_;
};

struct FoldedGraph {
  ir::Graph graph;       // constant frontier values replaced by weight ops "const.<hash>"
  TensorMap weights;     // the model's weights plus the folded values
  std::size_t folded = 0;  // how many values were replaced
};

FoldedGraph foldConstants(const ir::Graph& graph, const TensorMap& weights, ConstantCache& cache, Executor& executor);

}  // namespace txl::backend
