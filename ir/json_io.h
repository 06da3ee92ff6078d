// ir/json_io.h - the graph as JSON (schema "txlc-graph/1", see docs/IR.md).
//
//   {"format": "txlc-graph/1", "name": "tiny",
//    "nodes": [{"id": 0, "op": "input", "operands": [], "attrs": {"name": "x"},
//               "type": {"dtype": "f32", "shape": [4, 8]}}, ...]}
//
// Nodes appear in topological order with ids renumbered from 0; sinks have no
// "type". Weights are referenced by name, never inlined. Floats that JSON
// cannot hold are written as {"float": "inf" | "-inf" | "nan"}.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>

#include "ir/graph.h"

namespace txl::ir {

nlohmann::json toJson(const Graph& g);
// Throws txl::Error naming the JSON pointer of the first problem.
Graph fromJson(const nlohmann::json& j, const std::string& sourceName = "<json>");

}  // namespace txl::ir
