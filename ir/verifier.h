// ir/verifier.h - structural and type checks of a graph.
//
// A graph is valid when every node has the operand count its op allows, its
// operands produce values, its attributes are present and well-typed, and its
// declared result type equals the inferred one; input, output and memory
// names are unique. A failure names the node as the printer would show it:
//   "%7 = linear(%3, %6): input features 16 != weight columns 8"
#pragma once

#include <optional>
#include <string>

#include "ir/graph.h"

namespace txl::ir {

// The first problem found, or nullopt if the graph is valid.
std::optional<std::string> verify(const Graph& g);

// Throws txl::Error with the first problem, prefixed by `context`.
void verifyOrThrow(const Graph& g, const std::string& context);

}  // namespace txl::ir
