// frontend/model_spec.h - the hyperparameters of a Transformer-XL model.
//
// A ModelSpec is what the reference's MemTransformerLM constructor takes
// (kimiyoung/transformer-xl, pytorch/mem_transformer.py), validated. It is read
// from JSON in one of two dialects:
//   - reference names, as in the conformance cases' `config` (n_token, n_layer,
//     ..., with the reference's defaults for optional keys);
//   - a Hugging Face `config.json` with "model_type": "transfo-xl" (vocab_size,
//     proj_share_all_but_first, tie_word_embeddings, aliases such as
//     hidden_size; Hugging Face's defaults for keys it leaves out).
// Every problem is reported as one txl::Error line naming the file and the
// JSON pointer: `config.json: /cutoffs/1: must be greater than /cutoffs/0
// (20000), got 100`. docs/MODEL_SPEC.md lists every key.
//
//   ModelSpec spec = loadModelSpec("models/kjv-char/config.json");
//   for (std::int64_t i = 0; i < spec.clusterCount(); ++i) use(spec.clusterEmbedDim(i));
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace txl::frontend {

// Which code's arithmetic a model follows where the two published
// implementations of Transformer-XL differ (docs/SEMANTICS.md):
//   Authors      the authors' PyTorch code (kimiyoung/transformer-xl, pytorch/):
//                tail cluster i of the adaptive softmax reads head column
//                shortlist + n_tail - i; a stream starts with an empty memory;
//                a query that sees no key has no defined answer (refused).
//   HuggingFace  Hugging Face's TransfoXLLMHeadModel and the authors'
//                TensorFlow code, which trained the published checkpoints:
//                tail cluster i reads head column shortlist + i - 1; a stream
//                starts with mem_len rows of zeros per layer; a query that sees
//                no key averages every value uniformly.
enum class Semantics { Authors, HuggingFace };
// How a stream's memory starts: no rows (the authors' PyTorch code), or
// mem_len rows of zero layer inputs per layer, attended like real rows (HF, TF).
enum class InitialMemory { Empty, Zeros };

const char* semanticsName(Semantics s);          // "authors", "huggingface"
const char* initialMemoryName(InitialMemory m);  // "empty", "zeros"
// Parses the names above; txl::Error "<what>: expected ..., got ..." otherwise.
Semantics parseSemantics(const std::string& name, const std::string& what);
InitialMemory parseInitialMemory(const std::string& name, const std::string& what);

struct ModelSpec {
  std::int64_t n_token = 0, n_layer = 0, n_head = 0, d_model = 0, d_head = 0, d_inner = 0, d_embed = 0;
  std::int64_t div_val = 1;
  std::vector<std::int64_t> cutoffs;
  bool tie_weight = true;
  std::vector<bool> tie_projs;  // one per cluster: cutoffs.size() + 1
  bool pre_lnorm = false;
  std::int64_t tgt_len = 0, ext_len = 0, mem_len = 0;
  bool same_length = false;
  std::int64_t attn_type = 0, clamp_len = -1;  // clamp_len <= 0: no clamping
  bool untie_r = false;
  double layer_norm_epsilon = 1e-5;
  // A Hugging Face config means HuggingFace, a reference-style spec Authors;
  // the key "semantics" overrides either.
  Semantics semantics = Semantics::Authors;
  std::string source;                 // the file it came from, for messages
  std::vector<std::string> warnings;  // non-fatal remarks (unknown keys), for the tool to print

  nlohmann::json toJson() const;                       // reference names, every key ("semantics" unless Authors)
  std::int64_t clusterCount() const;                   // cutoffs.size() + 1
  std::vector<std::int64_t> clusterBounds() const;     // [0, cutoffs..., n_token]
  std::int64_t clusterEmbedDim(std::int64_t i) const;  // d_embed / div_val^i
  std::int64_t parameterCount() const;                 // distinct parameters (tied ones once)
  // The initial memory the model's semantics prescribes.
  InitialMemory defaultInitialMemory() const {
    return semantics == Semantics::HuggingFace ? InitialMemory::Zeros : InitialMemory::Empty;
  }
  // The head column of the adaptive softmax that scores tail cluster i (1-based).
  std::int64_t tailClusterColumn(std::int64_t i) const;
};

// Limits applied by the validation (documented in docs/MODEL_SPEC.md).
inline constexpr std::int64_t kMaxDim = 2147483647;  // any one size
inline constexpr std::int64_t kMaxLayers = 256;      // n_layer
// tgt_len, mem_len, clamp_len: the bound a run's qlen, mem_len and clamp_len
// have (driver::kMaxLength), checked here so that the message names the
// spec's key, not a flag the user never gave.
inline constexpr std::int64_t kMaxSegmentLength = std::int64_t{1} << 20;
inline constexpr std::int64_t kMaxParameterBytes = std::int64_t{64} << 30;  // f32 weights, 64 GiB

// Validates `j` (reference names or a Hugging Face transfo-xl config) and
// returns the spec; `file` names the source in error messages.
ModelSpec parseModelSpec(const nlohmann::json& j, const std::string& file);

// Reads and parses a JSON file; malformed JSON gives "path: line L column C: ...".
ModelSpec loadModelSpec(const std::string& path);

// Parses JSON text strictly: syntax errors become txl::Error
// "file: line L column C: what", and a key repeated inside one object (which
// nlohmann would silently resolve to its last value) is refused as
// "file: /pointer: duplicate key". Shared by the spec and safetensors readers.
nlohmann::json parseJsonText(std::string_view text, const std::string& file);

}  // namespace txl::frontend
