// backend/reference/reference_interpreter.h - the reference executor: the IR run op by op.
//
// The ground truth the passes and the oneDNN lowering are checked against.
// Its plan walks the graph in topological order, keeps one tensor per node and
// runs each node's kernel from backend/reference/reference_kernels.h; nothing is fused,
// reordered or reused. Inputs, weights and memories are read in place (never
// copied). Outputs come back by name, memory writes as "mem.<slot>".
//
//   auto plan = makeReferenceExecutor()->compile(graph, weights);
//   const TensorMap& out = plan->run({{"tokens", tokens}, {"mem.0", mem0}});
//   out.at("nll");  out.at("mem.1");
#pragma once

#include <memory>

#include "backend/executor.h"

namespace txl::backend {

std::unique_ptr<Executor> makeReferenceExecutor();

}  // namespace txl::backend
