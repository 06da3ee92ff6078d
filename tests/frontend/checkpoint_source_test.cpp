// tests/frontend/checkpoint_source_test.cpp - a checkpoint binds in place: the weights are the reader's tensors,
// not copies, and its messages are the safetensors source's.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <functional>
#include <limits>

#include "frontend/checkpoint_source.h"
#include "frontend/model_loader.h"
#include "frontend/model_spec.h"
#include "frontend/safetensors.h"
#include "frontend/torch_checkpoint.h"
#include "frontend/weights.h"
#include "ir/check.h"

using namespace txl::frontend;

namespace {

const std::filesystem::path kDir = std::filesystem::path(TXL_TEST_DATA_DIR) / "data" / "checkpoints";

std::string errorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const txl::Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("binding a checkpoint does not copy its tensors", "[checkpoint_source]") {
  for (const char* name : {"hf_tiny", "hf_tiny_fp16", "hf_tiny_legacy"}) {
    INFO(name);
    const ModelSpec spec = loadModelSpec((kDir / name / "config.json").string());
    const TorchCheckpoint ckpt = readTorchCheckpoint((kDir / name / "pytorch_model.bin").string());
    const WeightMap w = bindWeights(spec, CheckpointSource(ckpt));
    std::size_t shared = 0;
    for (const CheckpointTensor& t : ckpt.tensors) {
      if (!t.tiedTo.empty() || t.name == "transformer.pos_emb.inv_freq") continue;
      const std::string canonical = t.name.starts_with("transformer.") ? t.name.substr(12) : t.name;
      if (canonical.find("r_w_bias") != std::string::npos || canonical.find("r_r_bias") != std::string::npos)
        continue;  // per-layer biases are stacked into one tensor
      REQUIRE(w.contains(canonical));
      CHECK(w.at(canonical).raw() == t.tensor.raw());
      ++shared;
    }
    CHECK(shared > 10);
  }
}

TEST_CASE("a checkpoint source refuses non-finite values like a safetensors file", "[checkpoint_source]") {
  txl::ir::Tensor t = txl::ir::Tensor::zeros({txl::ir::DType::F32, {2, 3}});
  t.data<float>()[4] = std::numeric_limits<float>::quiet_NaN();
  const std::vector<std::pair<std::string, txl::ir::Tensor>> tensors = {{"w", t}};
  const CheckpointSource ckpt("m.bin", tensors);
  const SafetensorsFile file = SafetensorsFile::fromBytes(serializeSafetensors(tensors), "m.bin");
  const std::string refused = errorOf([&] { ckpt.toF32("w"); });
  CHECK(refused == "m.bin: tensor \"w\": element 4 is NaN (1 non-finite values); non-finite weights are refused");
  CHECK(refused == errorOf([&] { file.toF32("w"); }));
  CHECK(errorOf([&] { ckpt.shape("v"); }) == errorOf([&] { file.shape("v"); }));
  std::vector<std::string> warned;
  ConvertOptions warn{NonFinitePolicy::Warn, [&](const std::string& m) { warned.push_back(m); }};
  CHECK(std::isnan(ckpt.toF32("w", warn).data<float>()[4]));
  CHECK(warned == std::vector<std::string>{"m.bin: tensor \"w\": 1 non-finite values (first: element 4 is NaN)"});
  CHECK(ckpt.names() == file.names());
}

TEST_CASE("loading a checkpoint binds the reader's f32 storages as views of the file", "[checkpoint_source]") {
  const LoadedModel m = loadModel((kDir / "hf_tiny").string(), std::nullopt);
  // A view of the mapping is file-backed; a copy (of the tensor, or of a whole image) is not.
  CHECK(m.weights.at("layers.0.dec_attn.qkv_net.weight").fileBacked());
  CHECK(m.weights.at("word_emb.emb_layers.0.weight").fileBacked());
  const LoadedModel half = loadModel((kDir / "hf_tiny_fp16" / "config.json").string(),
                                     (kDir / "hf_tiny_fp16" / "pytorch_model.bin").string());
  CHECK_FALSE(half.weights.at("layers.0.dec_attn.qkv_net.weight").fileBacked());  // F16, widened once
}
