// frontend/checkpoint_source.h - a PyTorch checkpoint's tensors as a TensorSource.
//
// The tensors frontend/torch_checkpoint.h read, bound as they are: an F32
// storage of a mapped file stays a view of the mapping, a half-precision or
// strided one is the f32 tensor the reader widened it into, once. Ties (a
// tensor repeating an earlier one's storage, offset, shape and stride) are
// left out, as the weight binder finds tied slots by itself. Nothing is
// copied on the way to the bound weights.
//
//   CheckpointSource source(readTorchCheckpoint("hf/pytorch_model.bin"));
//   WeightMap w = bindWeights(spec, source);
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "frontend/tensor_source.h"
#include "frontend/torch_checkpoint.h"
#include "ir/tensor.h"

namespace txl::frontend {

class CheckpointSource : public TensorSource {
 public:
  // The untied tensors of `ckpt`, named by `ckpt.path`.
  explicit CheckpointSource(const TorchCheckpoint& ckpt);
  // Named f32 tensors (a CheckpointModel's), named by `path` in messages.
  CheckpointSource(std::string path, const std::vector<std::pair<std::string, ir::Tensor>>& tensors);

  const std::string& path() const override { return path_; }
  std::vector<std::string> names() const override;
  const ir::Shape& shape(const std::string& name) const override;
  // The f32 tensor itself (shared, not copied), after the non-finite check.
  ir::Tensor toF32(const std::string& name, const ConvertOptions& options = {}) const override;

 private:
  const ir::Tensor& find(const std::string& name) const;

  std::string path_;
  std::map<std::string, ir::Tensor> tensors_;
};

}  // namespace txl::frontend
