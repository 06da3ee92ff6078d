// ir/types.h - element types and static tensor types of the txlc IR.
//
// A TensorType is a dtype plus a static shape. Shapes are row-major; the
// activations of Transformer-XL are time-major ([length, batch, features]),
// as in the reference implementation.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace txl::ir {

enum class DType { F32, BF16, I64 };

std::string_view dtypeName(DType dtype);  // "f32", "bf16", "i64"
std::optional<DType> parseDType(std::string_view name);
std::size_t dtypeSize(DType dtype);

using Shape = std::vector<std::int64_t>;

struct TensorType {
  DType dtype = DType::F32;
  Shape shape;

  std::int64_t numel() const;  // product of dims (1 for a scalar)
  std::int64_t rank() const { return static_cast<std::int64_t>(shape.size()); }
  std::size_t bytes() const { return static_cast<std::size_t>(numel()) * dtypeSize(dtype); }
  std::string str() const;  // "f32[6,2,16]"
  friend bool operator==(const TensorType&, const TensorType&) = default;
};

std::string shapeStr(const Shape& shape);  // "[6,2,16]"

}  // namespace txl::ir
