// tests/frontend/weights_test.cpp - weight slots, binding by reference and Hugging Face names, tying.
#include <catch2/catch.hpp>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "frontend/model_spec.h"
#include "frontend/safetensors.h"
#include "frontend/weights.h"
#include "ir/check.h"

using namespace txl::frontend;
using txl::ir::Tensor;
namespace fs = std::filesystem;

namespace {

const fs::path kConformance = fs::path(TXL_TEST_DATA_DIR) / "conformance";

ModelSpec caseSpec(const std::string& name) {
  std::ifstream in(kConformance / name / "case.json");
  auto j = nlohmann::json::parse(in);
  return parseModelSpec(j.at("config"), name + "/case.json");
}

SafetensorsFile caseWeights(const std::string& name) {
  return SafetensorsFile::open((kConformance / name / "weights.safetensors").string());
}

using Entries = std::vector<std::pair<std::string, Tensor>>;

// The stored (non-aliased) tensors of a binding, under reference names.
Entries stored(const ModelSpec& spec, const WeightMap& w) {
  Entries out;
  for (const WeightSlot& s : weightSlots(spec))
    if (s.aliasOf.empty()) out.emplace_back(s.name, w.at(s.name));
  return out;
}

std::string bindError(const ModelSpec& spec, const Entries& entries) {
  try {
    bindWeights(spec, SafetensorsFile::fromBytes(serializeSafetensors(entries), "w.safetensors"));
  } catch (const txl::Error& e) {
    return e.what();
  }
  return "(no error)";
}

bool sameValues(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && std::memcmp(a.raw(), b.raw(), a.bytes()) == 0;
}

Entries without(Entries e, const std::string& name) {
  std::erase_if(e, [&](const auto& p) { return p.first == name; });
  return e;
}

}  // namespace

TEST_CASE("every conformance case binds, every slot present with its shape", "[weights]") {
  for (const auto& entry : fs::directory_iterator(kConformance)) {
    if (!entry.is_directory()) continue;
    const std::string name = entry.path().filename().string();
    INFO("case " << name);
    ModelSpec spec = caseSpec(name);
    SafetensorsFile file = caseWeights(name);
    WeightMap w = bindWeights(spec, file);
    auto slots = weightSlots(spec);
    CHECK(w.size() == slots.size());
    std::size_t owned = 0;
    for (const WeightSlot& s : slots) {
      REQUIRE(w.contains(s.name));
      CHECK(w.at(s.name).shape() == s.shape);
      CHECK(w.at(s.name).dtype() == txl::ir::DType::F32);
      if (!s.aliasOf.empty()) CHECK(w.at(s.name).raw() == w.at(s.aliasOf).raw());
      else ++owned;
    }
    // Every stored tensor was used: the file holds exactly the owned slots.
    CHECK(file.names().size() == owned);
  }
}

TEST_CASE("tying follows SEMANTICS.md", "[weights]") {
  SECTION("tie_weight aliases the softmax table to the embedding") {
    ModelSpec spec = caseSpec("tiny_base");
    WeightMap w = bindWeights(spec, caseWeights("tiny_base"));
    CHECK(w.at("crit.out_layers.0.weight").raw() == w.at("word_emb.emb_layers.0.weight").raw());
    CHECK_FALSE(w.contains("word_emb.emb_projs.0"));
    CHECK_FALSE(w.contains("crit.out_projs.0"));
  }
  SECTION("untied softmax has its own table") {
    ModelSpec spec = caseSpec("prenorm_shortmem");
    WeightMap w = bindWeights(spec, caseWeights("prenorm_shortmem"));
    CHECK(w.at("crit.out_layers.0.weight").raw() != w.at("word_emb.emb_layers.0.weight").raw());
  }
  SECTION("div_val 1, d_embed != d_model: emb_projs.0 serves every tied cluster") {
    ModelSpec spec = caseSpec("adaptive_div1");
    WeightMap w = bindWeights(spec, caseWeights("adaptive_div1"));
    for (int i = 0; i < 3; ++i)
      CHECK(w.at("crit.out_projs." + std::to_string(i)).raw() == w.at("word_emb.emb_projs.0").raw());
    CHECK(w.at("crit.out_layers.0.bias").shape() == txl::ir::Shape{300});
    CHECK_FALSE(w.contains("crit.out_layers.1.weight"));
    CHECK(w.at("crit.cluster_weight").shape() == txl::ir::Shape{2, 16});
  }
  SECTION("div_val > 1: tie_projs [false, true, true]") {
    ModelSpec spec = caseSpec("adaptive");
    WeightMap w = bindWeights(spec, caseWeights("adaptive"));
    CHECK(w.at("crit.out_projs.0").raw() != w.at("word_emb.emb_projs.0").raw());
    CHECK(w.at("crit.out_projs.1").raw() == w.at("word_emb.emb_projs.1").raw());
    CHECK(w.at("crit.out_projs.2").raw() == w.at("word_emb.emb_projs.2").raw());
    CHECK(w.at("crit.out_layers.2.weight").shape() == txl::ir::Shape{500, 8});
    CHECK(w.at("crit.out_layers.2.weight").raw() == w.at("word_emb.emb_layers.2.weight").raw());
  }
  SECTION("untie_r: per-layer biases") {
    ModelSpec spec = caseSpec("untied_r");
    WeightMap w = bindWeights(spec, caseWeights("untied_r"));
    CHECK(w.at("r_w_bias").shape() == txl::ir::Shape{3, 2, 8});
  }
  SECTION("attn_type 2: q_net and kv_net, no relative biases") {
    ModelSpec spec = caseSpec("absolute");
    WeightMap w = bindWeights(spec, caseWeights("absolute"));
    CHECK(w.at("layers.1.dec_attn.kv_net.weight").shape() == txl::ir::Shape{32, 16});
    CHECK_FALSE(w.contains("r_w_bias"));
    CHECK_FALSE(w.contains("layers.0.dec_attn.qkv_net.weight"));
  }
}

TEST_CASE("both bundled models bind", "[weights]") {
  for (const char* model : {"kjv-char", "kjv-words"}) {
    INFO(model);
    const fs::path dir = fs::path(TXL_MODELS_DIR) / model;
    ModelSpec spec = loadModelSpec((dir / "config.json").string());
    WeightMap w = bindWeights(spec, SafetensorsFile::open((dir / "model.safetensors").string()));
    CHECK(w.size() == weightSlots(spec).size());
    CHECK(w.at("layers.3.dec_attn.qkv_net.weight").shape() == txl::ir::Shape{384, 128});
  }
}

TEST_CASE("Hugging Face names bind to the same tensors", "[weights]") {
  for (const char* name : {"untied_r", "adaptive", "tiny_base"}) {
    INFO(name);
    ModelSpec spec = caseSpec(name);
    WeightMap ref = bindWeights(spec, caseWeights(name));
    Entries hf;
    for (auto& [n, t] : stored(spec, ref)) {
      if (spec.untie_r && (n == "r_w_bias" || n == "r_r_bias")) {
        for (std::int64_t l = 0; l < spec.n_layer; ++l) {
          Tensor layer = Tensor::zeros({txl::ir::DType::F32, {spec.n_head, spec.d_head}});
          std::memcpy(layer.raw(), t.data<float>() + l * layer.numel(), layer.bytes());
          hf.emplace_back("transformer.layers." + std::to_string(l) + ".dec_attn." + n, layer);
        }
      } else {
        hf.emplace_back(huggingFaceName(spec, n), t);
      }
    }
    hf.emplace_back("transformer.pos_emb.inv_freq", Tensor::zeros({txl::ir::DType::F32, {spec.d_model / 2}}));
    WeightMap w = bindWeights(spec, SafetensorsFile::fromBytes(serializeSafetensors(hf), "hf.safetensors"));
    REQUIRE(w.size() == ref.size());
    for (const auto& [n, t] : ref) CHECK(sameValues(w.at(n), t));
    CHECK(huggingFaceName(spec, "crit.out_layers.0.bias") == "crit.out_layers.0.bias");
    CHECK(huggingFaceName(spec, "layers.0.pos_ff.CoreNet.0.bias") == "transformer.layers.0.pos_ff.CoreNet.0.bias");

    if (spec.untie_r) {
      Entries missing = without(hf, "transformer.layers.2.dec_attn.r_r_bias");
      CHECK(bindError(spec, missing) ==
            "w.safetensors: missing tensor \"transformer.layers.2.dec_attn.r_r_bias\" (expected shape [2,8])");
    }
  }
}

TEST_CASE("stored tied copies: identical accepted, different refused naming both", "[weights][errors]") {
  ModelSpec spec = caseSpec("tiny_base");
  WeightMap ref = bindWeights(spec, caseWeights("tiny_base"));
  Entries e = stored(spec, ref);
  e.emplace_back("crit.out_layers.0.weight", ref.at("word_emb.emb_layers.0.weight").clone());
  WeightMap w = bindWeights(spec, SafetensorsFile::fromBytes(serializeSafetensors(e), "w.safetensors"));
  CHECK(w.at("crit.out_layers.0.weight").raw() == w.at("word_emb.emb_layers.0.weight").raw());

  Tensor changed = ref.at("word_emb.emb_layers.0.weight").clone();
  changed.data<float>()[5] += 1.0f;
  e.back().second = changed;
  std::string err = bindError(spec, e);
  CHECK_THAT(err, Catch::Matchers::StartsWith("w.safetensors: tied tensors \"crit.out_layers.0.weight\" and "
                                              "\"word_emb.emb_layers.0.weight\" differ (tie_weight is true): "
                                              "element 5 is "));

  ModelSpec adaptive = caseSpec("adaptive");
  WeightMap a = bindWeights(adaptive, caseWeights("adaptive"));
  Entries ea = stored(adaptive, a);
  Tensor proj = a.at("word_emb.emb_projs.2").clone();
  proj.data<float>()[0] = 42.0f;
  ea.emplace_back("crit.out_projs.2", proj);
  CHECK_THAT(bindError(adaptive, ea),
             Catch::Matchers::StartsWith("w.safetensors: tied tensors \"crit.out_projs.2\" and "
                                         "\"word_emb.emb_projs.2\" differ (tie_projs says so): element 0 is 42"));
}

TEST_CASE("missing, unexpected, mis-shaped and doubly named tensors", "[weights][errors]") {
  ModelSpec spec = caseSpec("tiny_base");
  WeightMap ref = bindWeights(spec, caseWeights("tiny_base"));
  Entries e = stored(spec, ref);

  CHECK(bindError(spec, without(e, "layers.1.dec_attn.r_net.weight")) ==
        "w.safetensors: missing tensor \"layers.1.dec_attn.r_net.weight\" (expected shape [16,16])");

  Entries renamed = without(e, "r_w_bias");
  renamed.emplace_back("r_w_bais", ref.at("r_w_bias"));
  CHECK(bindError(spec, renamed) ==
        "w.safetensors: missing tensor \"r_w_bias\" (expected shape [2,8]); the file has unexpected \"r_w_bais\"");

  Entries extra = e;
  extra.emplace_back("layers.2.dec_attn.o_net.weight", ref.at("layers.0.dec_attn.o_net.weight"));
  CHECK(bindError(spec, extra) ==
        "w.safetensors: unexpected tensor \"layers.2.dec_attn.o_net.weight\" with shape [16,16]: not a weight of a "
        "model with this spec (attn_type 0, 2 layers, 1 clusters, div_val 1)");

  Entries misshaped = without(e, "layers.0.dec_attn.qkv_net.weight");
  misshaped.emplace_back("layers.0.dec_attn.qkv_net.weight",
                         ref.at("layers.0.dec_attn.qkv_net.weight").reshaped({16, 48}));
  CHECK(bindError(spec, misshaped) ==
        "w.safetensors: tensor \"layers.0.dec_attn.qkv_net.weight\": expected shape [48,16], found [16,48]");

  Entries twice = e;
  twice.emplace_back("transformer.r_w_bias", ref.at("r_w_bias"));
  CHECK(bindError(spec, twice) ==
        "w.safetensors: tensors \"r_w_bias\" and \"transformer.r_w_bias\" both give \"r_w_bias\"");

  Entries perLayer = without(e, "r_w_bias");
  perLayer.emplace_back("transformer.layers.0.dec_attn.r_w_bias", ref.at("r_w_bias"));
  perLayer.emplace_back("transformer.layers.1.dec_attn.r_w_bias", ref.at("r_w_bias"));
  CHECK(bindError(spec, perLayer) ==
        "w.safetensors: unexpected tensor \"transformer.layers.0.dec_attn.r_w_bias\": per-layer biases need untie_r "
        "true (the spec says false: one shared \"r_w_bias\")");

  // The config decides: a spec with 3 layers does not bind 2-layer weights.
  nlohmann::json j = spec.toJson();
  j["n_layer"] = 3;
  CHECK(bindError(parseModelSpec(j, "spec.json"), e) ==
        "w.safetensors: missing tensor \"layers.2.dec_attn.qkv_net.weight\" (expected shape [48,16])");

  // Non-finite weights are refused by default, naming the tensor.
  Entries nan = without(e, "crit.out_layers.0.bias");
  Tensor bias = ref.at("crit.out_layers.0.bias").clone();
  bias.data<float>()[3] = std::numeric_limits<float>::quiet_NaN();
  nan.emplace_back("crit.out_layers.0.bias", bias);
  CHECK(bindError(spec, nan) ==
        "w.safetensors: tensor \"crit.out_layers.0.bias\": element 3 is NaN (1 non-finite "
        "values); non-finite weights are refused");
}

TEST_CASE("randomWeights: deterministic, complete, tied, layer norms 1 and 0", "[weights]") {
  ModelSpec spec = caseSpec("adaptive");
  WeightMap a = randomWeights(spec, 7), b = randomWeights(spec, 7), c = randomWeights(spec, 8);
  CHECK(a.size() == weightSlots(spec).size());
  for (const auto& [n, t] : a) CHECK(sameValues(t, b.at(n)));
  CHECK_FALSE(sameValues(a.at("layers.0.dec_attn.qkv_net.weight"), c.at("layers.0.dec_attn.qkv_net.weight")));
  CHECK(a.at("crit.out_projs.1").raw() == a.at("word_emb.emb_projs.1").raw());
  CHECK(a.at("layers.1.pos_ff.layer_norm.weight").data<float>()[3] == 1.0f);
  CHECK(a.at("layers.1.pos_ff.layer_norm.bias").data<float>()[3] == 0.0f);
  float maxAbs = 0;
  for (float v : a.at("layers.0.dec_attn.qkv_net.weight").span<float>()) maxAbs = std::max(maxAbs, std::abs(v));
  CHECK(maxAbs > 0.01f);
  CHECK(maxAbs < 0.035f);
  // Random weights written out bind back.
  WeightMap back = bindWeights(spec, SafetensorsFile::fromBytes(serializeSafetensors(stored(spec, a)), "r"));
  for (const auto& [n, t] : a) CHECK(sameValues(t, back.at(n)));
}

TEST_CASE("parameterCount counts every distinct parameter", "[weights][spec]") {
  for (const auto& entry : fs::directory_iterator(kConformance)) {
    if (!entry.is_directory()) continue;
    const std::string name = entry.path().filename().string();
    INFO(name);
    ModelSpec spec = caseSpec(name);
    std::int64_t n = 0;
    for (const WeightSlot& s : weightSlots(spec)) {
      if (!s.aliasOf.empty()) continue;
      std::int64_t k = 1;
      for (auto d : s.shape) k *= d;
      n += k;
    }
    CHECK(spec.parameterCount() == n);
  }
}
