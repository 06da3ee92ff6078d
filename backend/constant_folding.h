// backend/constant_folding.h - the values of constant subgraphs, computed once per model.
//
// The fold-constants pass (passes/fold_constants.h) decides what is constant
// and rewrites the graph; it asks an ir::ConstantEvaluator for the values.
// ExecutorConstants is that evaluator for one plan: it evaluates with the
// model's own executor and weights, and keeps the results in the model's
// ConstantCache, keyed by the printed text of each value's constant cone, so
// the plans of every segment shape of a model share them. weights() is what
// the plan binds: the model's weights plus the folded values.
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "backend/executor.h"
#include "ir/constant_evaluator.h"

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

class ExecutorConstants final : public ir::ConstantEvaluator {
 public:
  ExecutorConstants(const TensorMap& weights, ConstantCache& cache, Executor& executor)
      : weights_(weights), bound_(weights), cache_(cache), executor_(executor) {}

  bool known(const std::string& key) const override { return cache_.contains(key); }
  void evaluate(const ir::Graph& cones, const std::vector<std::string>& keys) override;
  void bind(const std::string& name, const std::string& key) override;

  // The model's weights plus every value bound so far.
  const TensorMap& weights() const { return bound_; }
  TensorMap takeWeights() { return std::move(bound_); }

 private:
  const TensorMap& weights_;
  TensorMap bound_;
  ConstantCache& cache_;
  Executor& executor_;
};

}  // namespace txl::backend
