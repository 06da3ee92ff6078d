// frontend/weights.cpp - binding a tensor source's tensors to the model's weight slots.
//
// Algorithm:
//   1. Map each file name to a canonical name: strip "transformer.", ignore
//      the position buffer "pos_emb.inv_freq", and collect per-layer
//      "layers.N.dec_attn.r_w_bias" / "r_r_bias" (Hugging Face with untie_r)
//      to be stacked into [n_layer, H, D]. Two file names for one canonical
//      name are an error.
//   2. Walk weightSlots(spec): an owned slot must be in the file with its
//      shape; a tied slot takes its target's buffer, and a stored copy of it
//      must have the same shape and identical values.
//   3. Any file tensor left unused is an error.
#include "frontend/weights.h"

#include <cmath>
#include <cstring>
#include <optional>
#include <set>

#include <nlohmann/json.hpp>

#include "ir/check.h"

namespace txl::frontend {

namespace {

const std::string kHfPrefix = "transformer.";

std::string inQuotes(const std::string& s) { return quote(s); }

bool startsWith(const std::string& s, std::string_view prefix) { return s.rfind(prefix, 0) == 0; }

// "layers.N.dec_attn.r_w_bias" -> {N, "r_w_bias"}.
std::optional<std::pair<std::int64_t, std::string>> perLayerBias(const std::string& name) {
  if (!startsWith(name, "layers.")) return std::nullopt;
  std::size_t dot = name.find('.', 7);
  if (dot == std::string::npos || dot == 7 || dot - 7 > 9) return std::nullopt;
  std::int64_t layer = 0;
  for (std::size_t i = 7; i < dot; ++i) {
    if (name[i] < '0' || name[i] > '9') return std::nullopt;
    layer = layer * 10 + (name[i] - '0');
  }
  std::string rest = name.substr(dot + 1);
  if (rest == "dec_attn.r_w_bias") return std::make_pair(layer, std::string("r_w_bias"));
  if (rest == "dec_attn.r_r_bias") return std::make_pair(layer, std::string("r_r_bias"));
  return std::nullopt;
}

// Where a canonical tensor comes from in the file.
struct Source {
  std::string fileName;                        // the name as stored (single tensor)
  std::map<std::int64_t, std::string> layers;  // per-layer Hugging Face biases
};

class Binder {
 public:
  Binder(const ModelSpec& spec, const TensorSource& file, const BindOptions& options)
      : spec_(spec), file_(file), convert_{options.nonFinite, options.warn} {}

  WeightMap run() {
    mapNames();
    WeightMap out;
    for (const WeightSlot& slot : weightSlots(spec_)) {
      auto it = sources_.find(slot.name);
      if (slot.aliasOf.empty()) {
        if (it == sources_.end()) failMissing(slot);
        out[slot.name] = load(slot, it->second);
      } else {
        const ir::Tensor& target = out.at(slot.aliasOf);
        if (it != sources_.end()) checkTiedCopy(slot, it->second, target);
        out[slot.name] = target;
      }
      if (it != sources_.end()) sources_.erase(it);
    }
    if (!sources_.empty()) failUnexpected();
    return out;
  }

 private:
  [[noreturn]] void fail(const std::string& message) const { throw Error(file_.path() + ": " + message); }

  void mapNames() {
    for (const std::string& stored : file_.names()) {
      std::string name = stored;
      if (startsWith(name, kHfPrefix)) {
        name = name.substr(kHfPrefix.size());
        hf_ = true;
      }
      if (name == "pos_emb.inv_freq") continue;  // a buffer of the reference, recomputed by us
      if (auto bias = perLayerBias(name)) {
        Source& s = sources_[bias->second];
        if (!s.fileName.empty())
          fail("tensors " + inQuotes(s.fileName) + " and " + inQuotes(stored) + " both give " + inQuotes(bias->second));
        if (!s.layers.emplace(bias->first, stored).second)
          fail("tensors " + inQuotes(s.layers.at(bias->first)) + " and " + inQuotes(stored) + " both give " +
               inQuotes(name));
        continue;
      }
      Source& s = sources_[name];
      if (!s.fileName.empty())
        fail("tensors " + inQuotes(s.fileName) + " and " + inQuotes(stored) + " both give " + inQuotes(name));
      if (!s.layers.empty())
        fail("tensors " + inQuotes(s.layers.begin()->second) + " and " + inQuotes(stored) + " both give " +
             inQuotes(name));
      s.fileName = stored;
    }
  }

  std::string displayName(const std::string& canonical) const {
    return hf_ ? huggingFaceName(spec_, canonical) : canonical;
  }

  void checkShape(const std::string& stored, const ir::Shape& want) const {
    const ir::Shape& got = file_.shape(stored);
    if (got != want)
      fail("tensor " + inQuotes(stored) + ": expected shape " + ir::shapeStr(want) + ", found " + ir::shapeStr(got));
  }

  ir::Tensor load(const WeightSlot& slot, const Source& src) const {
    if (src.layers.empty()) {
      checkShape(src.fileName, slot.shape);
      return file_.toF32(src.fileName, convert_);
    }
    // Per-layer biases stacked into [n_layer, H, D].
    if (!spec_.untie_r || spec_.attn_type != 0)
      fail("unexpected tensor " + inQuotes(src.layers.begin()->second) +
           ": per-layer biases need untie_r true (the spec says false: one shared " + inQuotes(slot.name) + ")");
    ir::Shape layerShape(slot.shape.begin() + 1, slot.shape.end());
    for (std::int64_t l = 0; l < spec_.n_layer; ++l)
      if (!src.layers.contains(l))
        fail("missing tensor " + inQuotes(kHfPrefix + "layers." + std::to_string(l) + ".dec_attn." + slot.name) +
             " (expected shape " + ir::shapeStr(layerShape) + ")");
    if (src.layers.size() > static_cast<std::size_t>(spec_.n_layer))
      fail("unexpected tensor " + inQuotes(src.layers.rbegin()->second) + ": the model has " +
           std::to_string(spec_.n_layer) + " layers");
    ir::Tensor out = ir::Tensor::zeros({ir::DType::F32, slot.shape});
    std::size_t stride = static_cast<std::size_t>(spec_.n_head * spec_.d_head);
    for (const auto& [l, stored] : src.layers) {
      checkShape(stored, layerShape);
      ir::Tensor t = file_.toF32(stored, convert_);
      std::memcpy(out.data<float>() + static_cast<std::size_t>(l) * stride, t.raw(), stride * sizeof(float));
    }
    return out;
  }

  void checkTiedCopy(const WeightSlot& slot, const Source& src, const ir::Tensor& target) const {
    ir::Tensor copy = load(slot, src);
    const std::string stored = src.fileName.empty() ? src.layers.begin()->second : src.fileName;
    const float* a = copy.data<float>();
    const float* b = target.data<float>();
    for (std::int64_t i = 0; i < copy.numel(); ++i) {
      if (std::memcmp(a + i, b + i, sizeof(float)) != 0) {
        const char* why = startsWith(slot.name, "crit.out_layers.") ? "tie_weight is true" : "tie_projs says so";
        fail("tied tensors " + inQuotes(stored) + " and " + inQuotes(displayName(slot.aliasOf)) + " differ (" + why +
             "): element " + std::to_string(i) + " is " + std::to_string(a[i]) + " vs " + std::to_string(b[i]));
      }
    }
  }

  [[noreturn]] void failMissing(const WeightSlot& slot) const {
    std::string hint;
    std::set<std::string> expected;
    for (const WeightSlot& s : weightSlots(spec_)) expected.insert(s.name);
    for (const auto& [canonical, s] : sources_) {
      if (expected.contains(canonical)) continue;
      const std::string stored = s.fileName.empty() ? s.layers.begin()->second : s.fileName;
      hint = "; the file has unexpected " + inQuotes(stored);
      break;
    }
    if (spec_.untie_r && hf_ && (slot.name == "r_w_bias" || slot.name == "r_r_bias")) {
      fail("missing tensor " + inQuotes(huggingFaceName(spec_, slot.name)) + " (expected shape " +
           ir::shapeStr(ir::Shape(slot.shape.begin() + 1, slot.shape.end())) + ")" + hint);
    }
    fail("missing tensor " + inQuotes(displayName(slot.name)) + " (expected shape " + ir::shapeStr(slot.shape) + ")" +
         hint);
  }

  [[noreturn]] void failUnexpected() const {
    const auto& [canonical, s] = *sources_.begin();
    const std::string stored = s.fileName.empty() ? s.layers.begin()->second : s.fileName;
    std::string more = sources_.size() > 1 ? " and " + std::to_string(sources_.size() - 1) + " more" : "";
    if (!s.layers.empty())
      fail("unexpected tensor " + inQuotes(stored) + more + ": per-layer biases need untie_r true and attn_type 0");
    fail("unexpected tensor " + inQuotes(stored) + " with shape " + ir::shapeStr(file_.shape(stored)) + more +
         ": not a weight of a model with this spec (attn_type " + std::to_string(spec_.attn_type) + ", " +
         std::to_string(spec_.n_layer) + " layers, " + std::to_string(spec_.clusterCount()) + " clusters, div_val " +
         std::to_string(spec_.div_val) + ")");
  }

  const ModelSpec& spec_;
  const TensorSource& file_;
  ConvertOptions convert_;
  bool hf_ = false;
  std::map<std::string, Source> sources_;  // canonical name -> where it is stored
};

// splitmix64: a small, well-mixed, portable generator.
struct SplitMix {
  std::uint64_t state;
  std::uint64_t next() {
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  float uniform() { return static_cast<float>(next() >> 40) * (1.0f / 16777216.0f); }  // [0, 1)
};

std::uint64_t fnv1a(const std::string& s) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ULL;
  return h;
}

}  // namespace

std::vector<WeightSlot> weightSlots(const ModelSpec& s) {
  std::vector<WeightSlot> slots;
  auto add = [&](std::string name, ir::Shape shape, std::string aliasOf = {}) {
    slots.push_back({std::move(name), std::move(shape), std::move(aliasOf)});
  };
  const std::int64_t d = s.d_model, hd = s.n_head * s.d_head, clusters = s.clusterCount();
  const auto bounds = s.clusterBounds();
  const bool single = s.div_val == 1;
  const bool projected = !single || s.d_embed != s.d_model;
  auto embedDim = [&](std::int64_t i) { return single ? s.d_embed : s.clusterEmbedDim(i); };
  auto rows = [&](std::int64_t i) { return single ? s.n_token : bounds[i + 1] - bounds[i]; };
  const std::int64_t tables = single ? 1 : clusters;

  for (std::int64_t i = 0; i < tables; ++i)
    add("word_emb.emb_layers." + std::to_string(i) + ".weight", {rows(i), embedDim(i)});
  if (projected)
    for (std::int64_t i = 0; i < tables; ++i) add("word_emb.emb_projs." + std::to_string(i), {d, embedDim(i)});

  for (std::int64_t l = 0; l < s.n_layer; ++l) {
    const std::string p = "layers." + std::to_string(l) + ".";
    if (s.attn_type == 0) {
      add(p + "dec_attn.qkv_net.weight", {3 * hd, d});
      add(p + "dec_attn.r_net.weight", {hd, d});
    } else {
      add(p + "dec_attn.q_net.weight", {hd, d});
      add(p + "dec_attn.kv_net.weight", {2 * hd, d});
    }
    add(p + "dec_attn.o_net.weight", {d, hd});
    add(p + "dec_attn.layer_norm.weight", {d});
    add(p + "dec_attn.layer_norm.bias", {d});
    add(p + "pos_ff.CoreNet.0.weight", {s.d_inner, d});
    add(p + "pos_ff.CoreNet.0.bias", {s.d_inner});
    add(p + "pos_ff.CoreNet.3.weight", {d, s.d_inner});
    add(p + "pos_ff.CoreNet.3.bias", {d});
    add(p + "pos_ff.layer_norm.weight", {d});
    add(p + "pos_ff.layer_norm.bias", {d});
  }
  if (s.attn_type == 0) {
    ir::Shape bias = s.untie_r ? ir::Shape{s.n_layer, s.n_head, s.d_head} : ir::Shape{s.n_head, s.d_head};
    add("r_w_bias", bias);
    add("r_r_bias", bias);
  }

  for (std::int64_t i = 0; i < tables; ++i) {
    const std::string p = "crit.out_layers." + std::to_string(i) + ".";
    add(p + "weight", {rows(i), embedDim(i)},
        s.tie_weight ? "word_emb.emb_layers." + std::to_string(i) + ".weight" : "");
    add(p + "bias", {rows(i)});
  }
  if (projected) {
    for (std::int64_t i = 0; i < clusters; ++i) {
      std::string target;
      if (s.tie_projs[static_cast<std::size_t>(i)]) target = "word_emb.emb_projs." + std::to_string(single ? 0 : i);
      add("crit.out_projs." + std::to_string(i), {d, embedDim(i)}, target);
    }
  }
  if (clusters > 1) {
    add("crit.cluster_weight", {clusters - 1, s.d_embed});
    add("crit.cluster_bias", {clusters - 1});
  }
  return slots;
}

std::string huggingFaceName(const ModelSpec& spec, const std::string& canonical) {
  if (startsWith(canonical, "crit.")) return canonical;
  if (spec.untie_r && (canonical == "r_w_bias" || canonical == "r_r_bias"))
    return kHfPrefix + "layers.0.dec_attn." + canonical;
  return kHfPrefix + canonical;
}

WeightMap bindWeights(const ModelSpec& spec, const TensorSource& file, const BindOptions& options) {
  return Binder(spec, file, options).run();
}

WeightMap randomWeights(const ModelSpec& spec, std::uint64_t seed) {
  const float range = 0.02f * std::sqrt(3.0f);
  WeightMap out;
  for (const WeightSlot& slot : weightSlots(spec)) {
    if (!slot.aliasOf.empty()) {
      out[slot.name] = out.at(slot.aliasOf);
      continue;
    }
    ir::Tensor t = ir::Tensor::zeros({ir::DType::F32, slot.shape});
    const bool norm = slot.name.find("layer_norm.") != std::string::npos;
    float* v = t.data<float>();
    if (norm) {
      const float value = slot.name.ends_with(".weight") ? 1.0f : 0.0f;
      for (std::int64_t i = 0; i < t.numel(); ++i) v[i] = value;
    } else {
      SplitMix rng{seed ^ fnv1a(slot.name)};
      for (std::int64_t i = 0; i < t.numel(); ++i) v[i] = (2.0f * rng.uniform() - 1.0f) * range;
    }
    out[slot.name] = t;
  }
  return out;
}

}  // namespace txl::frontend
