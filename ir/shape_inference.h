// ir/shape_inference.h - result types of ops from operand types and attributes.
//
// inferType() also checks that the attributes an op needs are present, of the
// right type and in range, so the verifier is "infer, then compare".
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ir/op.h"

namespace txl::ir {

struct Inferred {
  std::optional<TensorType> type;  // empty for sinks
  std::string error;               // non-empty: what is wrong
  bool ok() const { return error.empty(); }
};

// `declared` is the node's own type, needed by ops whose type is not implied
// by operands or attributes (input, weight, constant, mem_read).
Inferred inferType(OpKind kind, const std::vector<TensorType>& operands, const Attrs& attrs,
                   const std::optional<TensorType>& declared = std::nullopt);

// numpy-style broadcast of two shapes; nullopt if incompatible.
std::optional<Shape> broadcastShapes(const Shape& a, const Shape& b);

// Normalizes a possibly negative axis against rank; nullopt if out of range.
std::optional<std::int64_t> normalizeAxis(std::int64_t axis, std::int64_t rank);

}  // namespace txl::ir
