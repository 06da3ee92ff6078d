// ir/types.cpp - dtype names and sizes, tensor type helpers.
#include "ir/types.h"

namespace txl::ir {

std::string_view dtypeName(DType dtype) {
  switch (dtype) {
    case DType::F32:
      return "f32";
    case DType::BF16:
      return "bf16";
    case DType::I64:
      return "i64";
  }
  return "?";
}

std::optional<DType> parseDType(std::string_view name) {
  if (name == "f32") return DType::F32;
  if (name == "bf16") return DType::BF16;
  if (name == "i64") return DType::I64;
  return std::nullopt;
}

std::size_t dtypeSize(DType dtype) {
  switch (dtype) {
    case DType::F32:
      return 4;
    case DType::BF16:
      return 2;
    case DType::I64:
      return 8;
  }
  return 0;
}

std::int64_t TensorType::numel() const {
  std::int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

std::string shapeStr(const Shape& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

std::string TensorType::str() const { return std::string(dtypeName(dtype)) + shapeStr(shape); }

}  // namespace txl::ir
