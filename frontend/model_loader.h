// frontend/model_loader.h - the forms a user hands a model in.
//
// MODEL is either
//   - a spec file (reference names or a Hugging Face config); the weights come
//     from `--weights FILE` (required unless random weights are asked for), or
//   - a directory holding config.json, exactly one *.safetensors file (or, with
//     none, a PyTorch checkpoint: pytorch_model.bin or one *.bin / *.pt file,
//     read by frontend/torch_checkpoint.h without running pickle code) and
//     optionally a vocabulary (vocab.json, vocab.txt, or Hugging Face's
//     vocab.pkl); `--weights` overrides the directory's weights file, and may
//     itself be a PyTorch checkpoint.
// Every mistake is one txl::Error line naming the path.
//
//   LoadedModel m = loadModel("models/kjv-char", std::nullopt, {});
//   m.weights.at("r_w_bias");
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "frontend/model_spec.h"
#include "frontend/weights.h"

namespace txl::frontend {

struct LoadOptions {
  bool randomWeights = false;  // --random-weights: ignore files, use randomWeights(spec, seed)
  std::uint64_t seed = 0;
  BindOptions bind;
};

struct LoadedModel {
  ModelSpec spec;
  WeightMap weights;
  std::string vocabPath;    // empty if none
  std::string dir;          // the model directory, or the spec file's directory
  std::string weightsPath;  // the safetensors file bound (empty with random weights)
};

LoadedModel loadModel(const std::string& modelPath, const std::optional<std::string>& weightsPath,
                      const LoadOptions& options = {});

}  // namespace txl::frontend
