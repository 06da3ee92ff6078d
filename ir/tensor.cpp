// ir/tensor.cpp - host tensor allocation.
#include "ir/tensor.h"

#include <cstdlib>
#include <cstring>
#include <new>
#include <set>

#include "ir/check.h"

namespace txl::ir {

namespace {
std::shared_ptr<void> alignedBuffer(std::size_t bytes) {
  std::size_t rounded = (bytes + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, rounded == 0 ? 64 : rounded);
  if (!p) throw std::bad_alloc();
  std::memset(p, 0, rounded == 0 ? 64 : rounded);
  return std::shared_ptr<void>(p, [](void* q) { std::free(q); });
}
}  // namespace

Tensor Tensor::zeros(TensorType type) {
  auto owner = alignedBuffer(type.bytes());
  void* data = owner.get();
  return Tensor(std::move(type), data, std::move(owner));
}

Tensor Tensor::clone() const {
  Tensor t = zeros(type_);
  if (bytes()) std::memcpy(t.raw(), data_, bytes());
  return t;
}

Tensor Tensor::reshaped(Shape shape) const {
  TensorType t{type_.dtype, std::move(shape)};
  TXL_CHECK(t.numel() == type_.numel(), "reshape of " + type_.str() + " to " + t.str());
  return Tensor(std::move(t), data_, owner_);
}

std::size_t distinctBytes(const TensorMap& tensors) {
  std::set<const void*> seen;
  std::size_t bytes = 0;
  for (const auto& [name, t] : tensors)
    if (seen.insert(t.raw()).second) bytes += t.bytes();
  return bytes;
}

}  // namespace txl::ir
