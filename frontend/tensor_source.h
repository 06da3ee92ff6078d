// frontend/tensor_source.h - named tensors that weights are bound from: a safetensors file, a PyTorch checkpoint.
//
// bindWeights() (frontend/weights.h) asks a source for its names and shapes,
// then converts the tensors it binds one by one. Each source hands out the
// bytes it already holds: a safetensors file views its read-only mapping
// (frontend/safetensors.h); a PyTorch checkpoint's tensors are the ones its
// reader made (frontend/checkpoint_source.h), F32 storages viewing the
// file's mapping, others widened once. A source never goes through a copy of
// all its tensors, so a model loaded from either holds its weights once.
//
//   SafetensorsFile file = SafetensorsFile::open("model.safetensors");
//   const TensorSource& source = file;
//   for (const std::string& name : source.names()) use(name, source.shape(name), source.toF32(name));
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "ir/tensor.h"

namespace txl::frontend {

// What to do with NaN or Inf met while converting to f32.
enum class NonFinitePolicy { Refuse, Warn, Allow };

struct ConvertOptions {
  NonFinitePolicy nonFinite = NonFinitePolicy::Refuse;
  // Receives warnings (NonFinitePolicy::Warn); null prints "warning: ..." to stderr.
  std::function<void(const std::string&)> warn;
};

class TensorSource {
 public:
  virtual ~TensorSource() = default;
  // The file the tensors come from, as the user named it; every message starts with it.
  virtual const std::string& path() const = 0;
  // The tensor names, sorted.
  virtual std::vector<std::string> names() const = 0;
  // The stored shape of `name`; a txl::Error when there is no such tensor.
  virtual const ir::Shape& shape(const std::string& name) const = 0;
  // `name` as f32, in place when the stored bytes already are aligned f32,
  // else converted into a tensor of its own. A dtype that is not a float
  // type, and non-finite values under NonFinitePolicy::Refuse, are a txl::Error.
  virtual ir::Tensor toF32(const std::string& name, const ConvertOptions& options = {}) const = 0;
};

// Applies options.nonFinite to `values`, the f32 form of tensor `name` of
// `source`: NaN or Inf is refused (Refuse), reported (Warn) or kept (Allow):
//   model.safetensors: tensor "w": element 3 is NaN (2 non-finite values); non-finite weights are refused
// `wasFinite(i)`, when given, says whether element i was finite before a
// narrowing to f32 (an F64 value past f32's range, reported as such).
void checkFinite(const std::string& source, const std::string& name, const ir::Tensor& values,
                 const ConvertOptions& options, const std::function<bool(std::size_t)>& wasFinite = {});

}  // namespace txl::frontend
