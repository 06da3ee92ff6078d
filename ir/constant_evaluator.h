// ir/constant_evaluator.h - how the fold-constants pass gets the values of constant subgraphs.
//
// Passes must not include backend/; the backend implements this interface
// (backend/constant_folding.h: the model's executor, its weights and a cache
// shared by every plan of the model) and puts it in the PassContext when it
// compiles a plan. The pass keys each value by the printed text of its
// constant cone, has the values not known yet evaluated together in one
// graph, and binds each key to the weight op that replaces the value; the
// graph it leaves is the one the executor compiles.
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"

namespace txl::ir {

class ConstantEvaluator {
 public:
  virtual ~ConstantEvaluator() = default;
  // Whether the value keyed `key` is known (evaluated for this graph or an earlier one of the model).
  virtual bool known(const std::string& key) const = 0;
  // Evaluates `cones`, a graph without inputs or memory: its output "i" is the value to know as keys[i].
  virtual void evaluate(const Graph& cones, const std::vector<std::string>& keys) = 0;
  // The graph being folded reads the (known) value keyed `key` as the weight `name`.
  virtual void bind(const std::string& name, const std::string& key) = 0;
};

}  // namespace txl::ir
