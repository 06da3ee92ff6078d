// frontend/model_loader.h - the forms a user hands a model in.
//
// MODEL is recognized by its content (frontend/file_form.h), never its extension:
//   - a PyTorch checkpoint file (pytorch_model.bin, the authors' model.pt), read
//     as `txlc import` reads it: its spec from config.json beside it or from
//     the pickled module, the vocabulary from the folder that holds it;
//   - safetensors weights with config.json (and a vocabulary) beside them;
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
  bool specOnly = false;  // the spec and the files' paths; no weights are read or made
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

// Only the spec of MODEL (a folder's config.json, a spec file, the spec of a
// checkpoint or safetensors file); any other file is a txl::Error naming what it is.
ModelSpec loadModelFileSpec(const std::string& path);

}  // namespace txl::frontend
