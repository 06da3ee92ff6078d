// ir/tensor.cpp - host tensor allocation.
#include "ir/tensor.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <set>

#include "ir/check.h"
#include "ir/host_memory.h"

namespace txl::ir {

Tensor Tensor::zeros(TensorType type) {
  auto owner = allocateZeroed(type.bytes());
  void* data = owner.get();
  return Tensor(std::move(type), data, std::move(owner));
}

Tensor Tensor::fileView(TensorType type, const void* data, std::shared_ptr<void> owner) {
  Tensor t(std::move(type), const_cast<void*>(data), std::move(owner));
  t.fileBacked_ = true;
  return t;
}

std::size_t Tensor::dropResidentPages(std::size_t offset, std::size_t count) const {
  if (!fileBacked_ || offset >= bytes()) return 0;
  count = std::min(count, bytes() - offset);
  static const std::uintptr_t page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  const auto begin = reinterpret_cast<std::uintptr_t>(data_) + offset;
  const std::uintptr_t first = (begin + page - 1) / page * page, last = (begin + count) / page * page;
  if (last <= first) return 0;
  // A private read-only file mapping: the dropped pages are re-read from the file.
  if (::madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED) != 0) return 0;
  return last - first;
}

Tensor Tensor::clone() const {
  Tensor t = zeros(type_);
  if (bytes()) std::memcpy(t.raw(), data_, bytes());
  return t;
}

Tensor Tensor::reshaped(Shape shape) const {
  TensorType t{type_.dtype, std::move(shape)};
  TXL_CHECK(t.numel() == type_.numel(), "reshape of " + type_.str() + " to " + t.str());
  Tensor out(std::move(t), data_, owner_);
  out.fileBacked_ = fileBacked_;
  return out;
}

std::size_t distinctBytes(const TensorMap& tensors) {
  std::set<const void*> seen;
  std::size_t bytes = 0;
  for (const auto& [name, t] : tensors)
    if (seen.insert(t.raw()).second) bytes += t.bytes();
  return bytes;
}

}  // namespace txl::ir
