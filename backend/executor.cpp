// backend/executor.cpp - input and weight checks shared by the executors; the
// answers of a plan without steps.
#include "backend/executor.h"

#include "ir/check.h"

namespace txl::backend {

namespace {
void checkOne(const TensorMap& map, const std::string& name, const ir::TensorType& want, const char* what) {
  auto it = map.find(name);
  if (it == map.end()) throw Error(std::string(what) + " '" + name + "' is missing");
  if (it->second.type() != want)
    throw Error(std::string(what) + " '" + name + "': expected " + want.str() + ", got " + it->second.type().str());
}
}  // namespace

const std::vector<StepInfo>& CompiledGraph::steps() const {
  static const std::vector<StepInfo> none;
  return none;
}

const MemoryPlan& CompiledGraph::memoryPlan() const {
  static const MemoryPlan none;
  return none;
}

const std::vector<double>& CompiledGraph::stepSeconds() const {
  static const std::vector<double> none;
  return none;
}

void checkInputs(const ir::Graph& graph, const TensorMap& inputs) {
  for (ir::Node n : graph.nodes()) {
    if (graph.kind(n) == ir::OpKind::Input)
      checkOne(inputs, graph.op(n).attrs.getString("name"), graph.type(n), "input");
    else if (graph.kind(n) == ir::OpKind::MemRead || graph.kind(n) == ir::OpKind::MemWindow)
      checkOne(inputs, memName(graph.op(n).attrs.getInt("slot")), graph.type(n), "memory");
  }
}

void checkWeights(const ir::Graph& graph, const TensorMap& weights) {
  for (ir::Node n : graph.nodesOfKind(ir::OpKind::Weight))
    checkOne(weights, graph.op(n).attrs.getString("name"), graph.type(n), "weight");
}

}  // namespace txl::backend
