// ir/dot.h - Graphviz export: one box per op (name, attributes, result type),
// one edge per operand labelled with its index.
#pragma once

#include <string>

#include "ir/graph.h"

namespace txl::ir {

std::string toDot(const Graph& g);

}  // namespace txl::ir
