// frontend/checkpoint_source.cpp - CheckpointSource: a checkpoint's f32 tensors handed out in place.
#include "frontend/checkpoint_source.h"

#include "ir/check.h"

namespace txl::frontend {

CheckpointSource::CheckpointSource(const TorchCheckpoint& ckpt) : path_(ckpt.path) {
  for (const CheckpointTensor& t : ckpt.tensors)
    if (t.tiedTo.empty()) tensors_.emplace(t.name, t.tensor);  // the reader refuses a name given twice
}

CheckpointSource::CheckpointSource(std::string path, const std::vector<std::pair<std::string, ir::Tensor>>& tensors)
    : path_(std::move(path)) {
  for (const auto& [name, t] : tensors)
    if (!tensors_.emplace(name, t).second) throw Error(path_ + ": tensor " + quote(name) + " appears twice");
}

std::vector<std::string> CheckpointSource::names() const {
  std::vector<std::string> out;
  out.reserve(tensors_.size());
  for (const auto& [name, t] : tensors_) out.push_back(name);
  return out;
}

const ir::Tensor& CheckpointSource::find(const std::string& name) const {
  auto it = tensors_.find(name);
  if (it == tensors_.end()) throw Error(path_ + ": no tensor " + quote(name));
  return it->second;
}

const ir::Shape& CheckpointSource::shape(const std::string& name) const { return find(name).shape(); }

ir::Tensor CheckpointSource::toF32(const std::string& name, const ConvertOptions& options) const {
  const ir::Tensor& t = find(name);
  TXL_CHECK(t.dtype() == ir::DType::F32, "checkpoint tensor " + name + " is not f32");
  checkFinite(path_, name, t, options);
  return t;
}

}  // namespace txl::frontend
