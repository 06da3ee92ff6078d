// ir/tensor.h - a host tensor: a TensorType plus a buffer.
//
// The buffer is shared: a Tensor may view memory owned by something else (a
// memory-mapped safetensors file, an arena) through `owner`, or own a fresh
// 64-byte aligned allocation. Copying a Tensor copies the view, not the data.
//
//   Tensor t = Tensor::zeros({DType::F32, {4, 8}});
//   t.data<float>()[0] = 1.0f;
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <span>
#include <string>

#include "ir/types.h"

namespace txl::ir {

class Tensor {
 public:
  Tensor() = default;
  // A view of `data`, kept alive by `owner` (may be null for unowned views).
  Tensor(TensorType type, void* data, std::shared_ptr<void> owner)
      : type_(std::move(type)), data_(data), owner_(std::move(owner)) {}

  static Tensor zeros(TensorType type);  // owns a zero-filled buffer
  // A read-only view of a memory-mapped file, kept mapped by `owner`: its
  // pages may be dropped from memory (dropResidentPages) and are read back
  // from the file when next touched. Writing to it is an error (the mapping
  // is read-only).
  static Tensor fileView(TensorType type, const void* data, std::shared_ptr<void> owner);
  Tensor clone() const;  // deep copy into an owned buffer

  const TensorType& type() const { return type_; }
  DType dtype() const { return type_.dtype; }
  const Shape& shape() const { return type_.shape; }
  std::int64_t numel() const { return type_.numel(); }
  std::size_t bytes() const { return type_.bytes(); }
  bool empty() const { return data_ == nullptr && type_.numel() != 0; }
  bool fileBacked() const { return fileBacked_; }
  // For a file-backed tensor: drops the resident pages that lie wholly inside
  // bytes [offset, offset + count) of it; they come back from the file on the
  // next read. Returns the bytes dropped; 0 (and nothing happens) for any
  // other tensor, whose memory has no copy to come back from.
  std::size_t dropResidentPages(std::size_t offset, std::size_t count) const;

  void* raw() { return data_; }
  const void* raw() const { return data_; }
  template <typename T>
  T* data() {
    return static_cast<T*>(data_);
  }
  template <typename T>
  const T* data() const {
    return static_cast<const T*>(data_);
  }
  template <typename T>
  std::span<T> span() {
    return {data<T>(), static_cast<std::size_t>(numel())};
  }
  template <typename T>
  std::span<const T> span() const {
    return {data<T>(), static_cast<std::size_t>(numel())};
  }

  // Makes this tensor an unowned view of `data` with `type`, reusing its
  // shape's storage: no allocation unless the rank grows (for hot loops).
  void assignView(const TensorType& type, void* data) {
    type_.dtype = type.dtype;
    type_.shape.assign(type.shape.begin(), type.shape.end());
    data_ = data;
    owner_.reset();
    fileBacked_ = false;
  }

  // Same buffer, another shape with the same element count.
  Tensor reshaped(Shape shape) const;

 private:
  TensorType type_;
  void* data_ = nullptr;
  std::shared_ptr<void> owner_;
  bool fileBacked_ = false;
};

// Tensors by name: weights, graph inputs and outputs.
using TensorMap = std::map<std::string, Tensor>;

// Bytes of the distinct buffers of a map (tied tensors sharing one count once).
std::size_t distinctBytes(const TensorMap& tensors);

}  // namespace txl::ir
