// frontend/model_spec.cpp - reading and validating a Transformer-XL model spec.
//
// Algorithm:
//   1. Parse the text strictly (line/column errors, duplicate keys refused).
//   2. Pick the dialect: "model_type" present means a Hugging Face config
//      (must be "transfo-xl"; Hugging Face's defaults), else reference names
//      (the reference's defaults; some keys required).
//   3. Read each key with its aliases (vocab_size = n_token, hidden_size =
//      d_model, ...); two aliases with different values are an error.
//   4. Check consistency across keys: cutoffs against n_token, div_val
//      against d_embed, tie_projs length, even d_model, same_length with a
//      memory, and the options the runtime does not support.
//   5. Count the parameters with checked arithmetic and refuse absurd sizes.
// The first problem found ends the parse with one txl::Error line.
#include "frontend/model_spec.h"

#include "frontend/file_form.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <cstdio>
#include <fstream>
#include <limits>
#include <optional>
#include <set>
#include <sstream>

#include "frontend/input_file.h"
#include "ir/check.h"

namespace txl::frontend {

using nlohmann::json;

namespace {

// ---------------------------------------------------------------- strict JSON

std::string pointerToken(std::string_view key) {
  std::string s;
  for (char c : clip(key)) {
    if (c == '~') s += "~0";
    else if (c == '/') s += "~1";
    else s += c;
  }
  return s;
}

// "/key", escaped.
std::string keyPointer(std::string_view key) {
  std::string p = "/";
  p += pointerToken(key);
  return p;
}

// "line L column C: what" for the 1-based byte `position` of `text`; `what`
// is a nlohmann message, whose own "[json.exception...] ... at line L, column
// C: " prefix is dropped.
std::string describeAt(std::string_view text, std::size_t position, const std::string& what) {
  std::size_t byte = std::min<std::size_t>(position == 0 ? 0 : position - 1, text.size());
  std::size_t line = 1, column = 1;
  for (std::size_t i = 0; i < byte; ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  std::size_t at = what.find("column ");
  at = at == std::string::npos ? std::string::npos : what.find(": ", at);
  if (at == std::string::npos) {
    at = what.find("] ");
    at = at == std::string::npos ? 0 : at + 2;
  } else {
    at += 2;
  }
  std::string tail;
  for (char c : what.substr(at)) tail += (static_cast<unsigned char>(c) < 0x20) ? ' ' : c;
  // nlohmann reads a NUL outside a string as the end of the input; say what is there.
  if (byte < text.size() && text[byte] == '\0' && what.find("unexpected end of input") != std::string::npos)
    tail = "a NUL byte (U+0000); expected JSON text";
  return "line " + std::to_string(line) + " column " + std::to_string(column) + ": " + tail;
}

// Builds the document through nlohmann's SAX interface: one pass, linear in
// the text (its callback parser rescans the parent container after every
// object it closes, which is quadratic in a long array of objects). Nesting
// deeper than kMaxDepth and duplicate keys are refused with the JSON pointer
// of the value; the pointer is built only for a message.
class StrictBuilder : public nlohmann::json_sax<json> {
 public:
  StrictBuilder(const std::string& file, std::string_view text) : file_(file), text_(text) {}

  json take() { return std::move(root_); }

  bool null() override { return put(json(nullptr)); }
  bool boolean(bool v) override { return put(json(v)); }
  bool number_integer(number_integer_t v) override { return put(json(v)); }
  bool number_unsigned(number_unsigned_t v) override { return put(json(v)); }
  bool number_float(number_float_t v, const string_t&) override { return put(json(v)); }
  bool string(string_t& v) override { return put(json(std::move(v))); }
  bool binary(binary_t& v) override { return put(json::binary(std::move(v))); }
  bool start_object(std::size_t) override { return open(json::object()); }
  bool start_array(std::size_t) override { return open(json::array()); }
  bool end_object() override { return close(); }
  bool end_array() override { return close(); }
  bool key(string_t& k) override {
    const bool duplicate = stack_.back()->contains(k);
    keys_.back() = std::move(k);
    if (duplicate) throw Error(file_ + ": " + pointer() + ": duplicate key");
    return true;
  }
  // nlohmann reports most faults as parse_error, but a number too large for a
  // double ("1e999") as out_of_range: rethrow the first as itself, and give the
  // others the same "line L column C: what" form, placed at the token's first
  // character (`position` is just past its last).
  bool parse_error(std::size_t position, const std::string& token, const nlohmann::detail::exception& e) override {
    if (const auto* p = dynamic_cast<const json::parse_error*>(&e)) throw *p;
    const std::size_t first = position >= token.size() ? position - token.size() + 1 : 1;
    throw Error(file_ + ": " + describeAt(text_, first, e.what()));
  }

 private:
  static constexpr std::size_t kMaxDepth = 64;

  json* put(json&& v) {
    if (stack_.empty()) {
      root_ = std::move(v);
      return &root_;
    }
    json* parent = stack_.back();
    if (parent->is_array()) {
      parent->push_back(std::move(v));
      return &parent->back();
    }
    return &((*parent)[keys_.back()] = std::move(v));
  }
  bool open(json&& v) {
    if (stack_.size() > kMaxDepth)
      throw Error(file_ + ": " + pointer() + ": JSON nested deeper than " + std::to_string(kMaxDepth) + " levels");
    stack_.push_back(put(std::move(v)));
    keys_.emplace_back();
    return true;
  }
  bool close() {
    stack_.pop_back();
    keys_.pop_back();
    return true;
  }
  // The pointer of the value being read (keys cut to kMaxQuoted bytes).
  std::string pointer() const {
    std::string p;
    for (std::size_t i = 0; i < stack_.size(); ++i) {
      const json* c = stack_[i];
      const bool last = i + 1 == stack_.size();
      if (c->is_array()) {
        if (!last) p += "/" + std::to_string(c->size() - 1);  // the open child is its last element
      } else if (!keys_[i].empty()) {
        const std::string& k = keys_[i];
        p += keyPointer(k.size() > kMaxQuoted ? k.substr(0, kMaxQuoted) + "..." : k);
      }
    }
    return p.empty() ? "/" : oneLine(p);
  }

  const std::string& file_;
  std::string_view text_;
  json root_;
  std::vector<json*> stack_;
  std::vector<std::string> keys_;  // per open object: the key being read
};

// ---------------------------------------------------------------- spec reader

// A value rendered for a message: one line, at most ~60 characters.
std::string show(const json& v) {
  std::string s = v.dump(-1, ' ', true, json::error_handler_t::replace);
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  return s;
}

const std::set<std::string, std::less<>> kKnownKeys = {"n_token",
                                                       "vocab_size",
                                                       "n_layer",
                                                       "num_hidden_layers",
                                                       "n_head",
                                                       "num_attention_heads",
                                                       "d_model",
                                                       "hidden_size",
                                                       "d_head",
                                                       "d_inner",
                                                       "d_embed",
                                                       "div_val",
                                                       "cutoffs",
                                                       "tie_weight",
                                                       "tie_word_embeddings",
                                                       "tie_projs",
                                                       "proj_share_all_but_first",
                                                       "pre_lnorm",
                                                       "tgt_len",
                                                       "ext_len",
                                                       "mem_len",
                                                       "same_length",
                                                       "attn_type",
                                                       "clamp_len",
                                                       "untie_r",
                                                       "dropout",
                                                       "dropatt",
                                                       "layer_norm_epsilon",
                                                       "sample_softmax",
                                                       "adaptive",
                                                       "model_type",
                                                       "semantics"};

struct Field {
  std::string pointer;  // "/vocab_size"
  const json* value = nullptr;
  explicit operator bool() const { return value != nullptr; }
};

class SpecReader {
 public:
  SpecReader(const json& j, const std::string& file) : j_(j), file_(file) {}

  [[noreturn]] void fail(const std::string& pointer, const std::string& message) const {
    throw Error(file_ + ": " + pointer + ": " + message);
  }

  // The first of `names` present; a second one with another value is an error.
  Field find(std::initializer_list<const char*> names) const {
    Field found;
    for (const char* name : names) {
      auto it = j_.find(name);
      if (it == j_.end()) continue;
      if (!found) {
        found = {keyPointer(name), &*it};
      } else if (*it != *found.value) {
        fail(keyPointer(name), "conflicts with " + found.pointer + " (" + show(*found.value) + "), got " + show(*it));
      }
    }
    return found;
  }

  Field require(std::initializer_list<const char*> names) const {
    Field f = find(names);
    if (!f) fail(keyPointer(*names.begin()), "required key is missing");
    return f;
  }

  std::int64_t integer(const Field& f, std::int64_t lo, std::int64_t hi, const std::string& expected) const {
    const json& v = *f.value;
    if (!v.is_number_integer()) fail(f.pointer, "expected " + expected + ", got " + show(v));
    if (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(hi))
      fail(f.pointer, "expected " + expected + " at most " + std::to_string(hi) + ", got " + show(v));
    std::int64_t x = v.get<std::int64_t>();
    if (x > hi) fail(f.pointer, "expected " + expected + " at most " + std::to_string(hi) + ", got " + show(v));
    if (x < lo) fail(f.pointer, "expected " + expected + ", got " + show(v));
    return x;
  }

  std::int64_t size(std::initializer_list<const char*> names, std::optional<std::int64_t> dflt, std::int64_t lo = 1,
                    std::int64_t hi = kMaxDim) const {
    Field f = dflt ? find(names) : require(names);
    if (!f) return *dflt;
    return integer(f, lo, hi, lo > 0 ? "a positive integer" : "a non-negative integer");
  }

  bool boolean(std::initializer_list<const char*> names, bool dflt) const {
    Field f = find(names);
    if (!f) return dflt;
    if (!f.value->is_boolean()) fail(f.pointer, "expected true or false, got " + show(*f.value));
    return f.value->get<bool>();
  }

  double number(const Field& f, const std::string& expected) const {
    if (!f.value->is_number()) fail(f.pointer, "expected " + expected + ", got " + show(*f.value));
    return f.value->get<double>();
  }

  const json& root() const { return j_; }
  const std::string& file() const { return file_; }

 private:
  const json& j_;
  const std::string& file_;
};

// Checked arithmetic for the parameter count.
struct Checked {
  const SpecReader& r;
  std::int64_t mul(std::int64_t a, std::int64_t b, const std::string& pointer, const std::string& what) const {
    std::int64_t out;
    if (__builtin_mul_overflow(a, b, &out)) r.fail(pointer, "size product " + what + " overflows 64 bits");
    return out;
  }
  std::int64_t add(std::int64_t a, std::int64_t b, const std::string& pointer, const std::string& what) const {
    std::int64_t out;
    if (__builtin_add_overflow(a, b, &out)) r.fail(pointer, "size sum " + what + " overflows 64 bits");
    return out;
  }
};

std::vector<std::int64_t> readCutoffs(const SpecReader& r, const Field& f) {
  std::vector<std::int64_t> cutoffs;
  if (!f.value->is_array())
    r.fail(f.pointer, "expected an array of increasing positive integers, got " + show(*f.value));
  if (f.value->size() > 64) r.fail(f.pointer, "expected at most 64 cutoffs, got " + std::to_string(f.value->size()));
  for (std::size_t i = 0; i < f.value->size(); ++i) {
    Field e{f.pointer + "/" + std::to_string(i), &(*f.value)[i]};
    std::int64_t c = r.integer(e, 1, kMaxDim, "a positive integer");
    if (i > 0 && c <= cutoffs.back())
      r.fail(e.pointer, "must be greater than " + f.pointer + "/" + std::to_string(i - 1) + " (" +
                            std::to_string(cutoffs.back()) + "), got " + std::to_string(c));
    cutoffs.push_back(c);
  }
  return cutoffs;
}

std::vector<bool> readTieProjs(const SpecReader& r, const Field& f, std::size_t clusters) {
  if (!f.value->is_array())
    r.fail(f.pointer,
           "expected an array of " + std::to_string(clusters) + " booleans (one per cluster), got " + show(*f.value));
  if (f.value->size() != clusters)
    r.fail(f.pointer, "expected " + std::to_string(clusters) + " booleans (one per cluster: cutoffs has " +
                          std::to_string(clusters - 1) + " entries), got " + std::to_string(f.value->size()));
  std::vector<bool> out;
  for (std::size_t i = 0; i < clusters; ++i) {
    const json& e = (*f.value)[i];
    if (!e.is_boolean()) r.fail(f.pointer + "/" + std::to_string(i), "expected true or false, got " + show(e));
    out.push_back(e.get<bool>());
  }
  return out;
}

std::string gib(double bytes) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f", bytes / static_cast<double>(std::int64_t{1} << 30));
  return buf;
}

}  // namespace

// ---------------------------------------------------------------- public

json parseJsonText(std::string_view text, const std::string& file) {
  StrictBuilder builder(file, text);
  try {
    json::sax_parse(text.begin(), text.end(), &builder, json::input_format_t::json, /*strict=*/true);
    return builder.take();
  } catch (const json::parse_error& e) {
    throw Error(file + ": " + describeAt(text, e.byte, e.what()));
  } catch (const json::exception& e) {
    throw Error(file + ": invalid JSON: " + e.what());
  }
}

std::int64_t ModelSpec::clusterCount() const { return static_cast<std::int64_t>(cutoffs.size()) + 1; }

std::vector<std::int64_t> ModelSpec::clusterBounds() const {
  std::vector<std::int64_t> b{0};
  b.insert(b.end(), cutoffs.begin(), cutoffs.end());
  b.push_back(n_token);
  return b;
}

std::int64_t ModelSpec::clusterEmbedDim(std::int64_t i) const {
  TXL_CHECK(i >= 0 && i < clusterCount(), "cluster index " + std::to_string(i));
  std::int64_t d = d_embed;
  for (std::int64_t k = 0; k < i && d > 0; ++k) d /= div_val;
  return d;
}

std::int64_t ModelSpec::parameterCount() const {
  // Distinct parameters, tied ones once (validated specs cannot overflow).
  const auto bounds = clusterBounds();
  const std::int64_t hd = n_head * d_head;
  const bool projected = div_val > 1 || d_embed != d_model;
  std::int64_t n = n_token;  // softmax biases
  for (std::int64_t i = 0; i < clusterCount(); ++i) {
    const bool single = div_val == 1;
    const std::int64_t e = single ? d_embed : clusterEmbedDim(i);
    const std::int64_t rows = single ? (i == 0 ? n_token : 0) : bounds[i + 1] - bounds[i];
    n += rows * e * (tie_weight ? 1 : 2);
    if (projected && (!single || i == 0)) n += d_model * e;                      // word_emb.emb_projs.i
    if (projected && !tie_projs[static_cast<std::size_t>(i)]) n += d_model * e;  // crit.out_projs.i
  }
  n += (clusterCount() - 1) * (d_embed + 1);  // cluster_weight, cluster_bias
  const std::int64_t attention = (attn_type == 0 ? 5 : 4) * hd * d_model;
  n += n_layer * (attention + 2 * d_inner * d_model + d_inner + d_model + 4 * d_model);
  if (attn_type == 0) n += 2 * hd * (untie_r ? n_layer : 1);
  return n;
}

json ModelSpec::toJson() const {
  json j = json::object();
  j["n_token"] = n_token;
  j["n_layer"] = n_layer;
  j["n_head"] = n_head;
  j["d_model"] = d_model;
  j["d_head"] = d_head;
  j["d_inner"] = d_inner;
  j["d_embed"] = d_embed;
  j["div_val"] = div_val;
  j["cutoffs"] = cutoffs;
  j["tie_weight"] = tie_weight;
  j["tie_projs"] = json::array();
  for (bool t : tie_projs) j["tie_projs"].push_back(t);
  j["pre_lnorm"] = pre_lnorm;
  j["tgt_len"] = tgt_len;
  j["ext_len"] = ext_len;
  j["mem_len"] = mem_len;
  j["same_length"] = same_length;
  j["attn_type"] = attn_type;
  j["clamp_len"] = clamp_len;
  j["untie_r"] = untie_r;
  j["layer_norm_epsilon"] = layer_norm_epsilon;
  if (semantics != Semantics::Authors) j["semantics"] = semanticsName(semantics);
  return j;
}

std::int64_t ModelSpec::tailClusterColumn(std::int64_t i) const {
  const std::int64_t shortlist = cutoffs.empty() ? n_token : cutoffs[0];
  const std::int64_t tails = static_cast<std::int64_t>(cutoffs.size());
  return semantics == Semantics::HuggingFace ? shortlist + i - 1 : shortlist + tails - i;
}

const char* semanticsName(Semantics s) { return s == Semantics::HuggingFace ? "huggingface" : "authors"; }
const char* initialMemoryName(InitialMemory m) { return m == InitialMemory::Zeros ? "zeros" : "empty"; }

Semantics parseSemantics(const std::string& name, const std::string& what) {
  if (name == "authors") return Semantics::Authors;
  if (name == "huggingface") return Semantics::HuggingFace;
  throw Error(what + ": expected \"authors\" or \"huggingface\", got " + show(json(name)));
}

InitialMemory parseInitialMemory(const std::string& name, const std::string& what) {
  if (name == "empty") return InitialMemory::Empty;
  if (name == "zeros") return InitialMemory::Zeros;
  throw Error(what + ": expected \"zeros\" or \"empty\", got " + show(json(name)));
}

ModelSpec parseModelSpec(const json& j, const std::string& file) {
  ModelSpec s;
  s.source = file;
  if (!j.is_object()) throw Error(file + ": expected a JSON object at the top level, got " + show(j));
  SpecReader r(j, file);

  // Dialect.
  bool hf = false;
  if (Field f = r.find({"model_type"})) {
    if (!f.value->is_string() || f.value->get<std::string>() != "transfo-xl")
      r.fail(f.pointer, "expected \"transfo-xl\", got " + show(*f.value));
    hf = true;
  }
  s.semantics = hf ? Semantics::HuggingFace : Semantics::Authors;
  if (Field f = r.find({"semantics"})) {
    const std::string name = f.value->is_string() ? f.value->get<std::string>() : "";
    if (name != "authors" && name != "huggingface")
      r.fail(f.pointer, "expected \"authors\" or \"huggingface\", got " + show(*f.value));
    s.semantics = parseSemantics(name, file + ": " + f.pointer);
  }
  auto dflt = [&](std::int64_t hfDefault) { return hf ? std::optional<std::int64_t>(hfDefault) : std::nullopt; };

  // Sizes.
  // The sizes are required in both dialects: a Hugging Face config without
  // them would silently become Hugging Face's default, the WikiText-103
  // large model (docs/MODEL_SPEC.md).
  (void)dflt;
  s.n_token = hf ? r.size({"vocab_size", "n_token"}, std::nullopt) : r.size({"n_token", "vocab_size"}, std::nullopt);
  s.n_layer = r.size({"n_layer", "num_hidden_layers"}, std::nullopt);
  if (s.n_layer > kMaxLayers)
    r.fail("/n_layer", "expected at most " + std::to_string(kMaxLayers) + " layers, got " + std::to_string(s.n_layer));
  s.n_head = r.size({"n_head", "num_attention_heads"}, std::nullopt);
  s.d_model = r.size({"d_model", "hidden_size"}, std::nullopt);
  s.d_head = r.size({"d_head"}, std::nullopt);
  s.d_inner = r.size({"d_inner"}, std::nullopt);
  if (Field f = r.find({"d_embed"}); f && !f.value->is_null()) {
    // The reference's train.py passes -1 for "same as d_model".
    s.d_embed = r.integer(f, -1, kMaxDim, "a positive integer (or -1 or null for d_model)");
    if (s.d_embed == 0) r.fail(f.pointer, "expected a positive integer (or -1 or null for d_model), got 0");
    if (s.d_embed < 0) s.d_embed = s.d_model;
  } else {
    s.d_embed = f ? s.d_model : (hf ? 1024 : s.d_model);
  }
  s.div_val = r.size({"div_val"}, hf ? 4 : 1);
  s.tgt_len = r.size({"tgt_len"}, dflt(128), 1, kMaxSegmentLength);
  s.mem_len = r.size({"mem_len"}, dflt(1600), 0, kMaxSegmentLength);
  s.ext_len = r.size({"ext_len"}, 0, 0);
  s.pre_lnorm = r.boolean({"pre_lnorm"}, false);
  s.same_length = r.boolean({"same_length"}, hf);
  s.untie_r = r.boolean({"untie_r"}, hf);
  s.tie_weight = r.boolean({"tie_weight", "tie_word_embeddings"}, true);
  if (Field f = r.find({"attn_type"})) s.attn_type = r.integer(f, 0, kMaxDim, "0 (relative) or 2 (absolute)");
  if (Field f = r.find({"clamp_len"})) {
    s.clamp_len = r.integer(f, -1, kMaxSegmentLength, "-1 (no clamping) or a non-negative integer");
  } else {
    s.clamp_len = hf ? 1000 : -1;
  }
  if (Field f = r.find({"layer_norm_epsilon"})) {
    double eps = r.number(f, "a positive number");
    if (!(eps > 0) || !std::isfinite(eps) || eps >= 1)
      r.fail(f.pointer, "expected a positive number below 1, got " + show(*f.value));
    s.layer_norm_epsilon = eps;
  }
  for (const char* key : {"dropout", "dropatt"}) {
    if (Field f = r.find({key})) {
      double p = r.number(f, "a probability in [0, 1)");
      if (!(p >= 0 && p < 1)) r.fail(f.pointer, "expected a probability in [0, 1), got " + show(*f.value));
    }
  }
  if (Field f = r.find({"adaptive"}); f && !f.value->is_boolean())
    r.fail(f.pointer, "expected true or false, got " + show(*f.value));
  std::int64_t sampleSoftmax = -1;
  if (Field f = r.find({"sample_softmax"})) {
    sampleSoftmax = r.integer(f, std::numeric_limits<std::int64_t>::min(), kMaxDim, "an integer");
  }

  // Clusters.
  Field cutoffsField = r.find({"cutoffs"});
  if (cutoffsField) {
    s.cutoffs = readCutoffs(r, cutoffsField);
  } else if (hf) {
    s.cutoffs = {20000, 40000, 200000};
  }
  const std::string nTokenPointer = r.find({"n_token", "vocab_size"}).pointer;
  if (!s.cutoffs.empty() && s.cutoffs.back() >= s.n_token) {
    const std::string nToken = nTokenPointer.empty() ? std::string("/vocab_size") : nTokenPointer;
    if (!cutoffsField)
      r.fail("/cutoffs", "missing, and the Hugging Face default [20000, 40000, 200000] needs " + nToken +
                             " > 200000, got " + std::to_string(s.n_token));
    r.fail(cutoffsField.pointer + "/" + std::to_string(s.cutoffs.size() - 1),
           "must be less than " + nToken + " (" + std::to_string(s.n_token) + "), got " +
               std::to_string(s.cutoffs.back()));
  }
  const std::size_t clusters = s.cutoffs.size() + 1;
  Field tieProjs = r.find({"tie_projs"});
  Field share = r.find({"proj_share_all_but_first"});
  if (share && !share.value->is_boolean()) r.fail(share.pointer, "expected true or false, got " + show(*share.value));
  if (tieProjs) s.tie_projs = readTieProjs(r, tieProjs, clusters);
  if (share || (hf && !tieProjs)) {
    bool all = share ? share.value->get<bool>() : true;
    std::vector<bool> derived(clusters, all);
    derived[0] = false;
    if (tieProjs && s.tie_projs != derived) {
      json want = json::array();
      for (bool b : derived) want.push_back(b);
      r.fail(tieProjs.pointer, "conflicts with " + share.pointer + " (" + show(*share.value) + "): expected " +
                                   show(want) + ", got " + show(*tieProjs.value));
    }
    s.tie_projs = derived;
  }
  if (s.tie_projs.empty()) s.tie_projs.assign(clusters, false);

  // Consistency.
  if (s.d_model % 2 != 0)
    r.fail(r.find({"d_model", "hidden_size"}).pointer,
           "expected an even number (the position table has d_model/2 sines and d_model/2 cosines), got " +
               std::to_string(s.d_model));
  for (std::int64_t i = 1; i < static_cast<std::int64_t>(clusters); ++i) {
    if (s.clusterEmbedDim(i) == 0)
      r.fail("/div_val", "cluster " + std::to_string(i) + " would get d_embed / div_val^" + std::to_string(i) +
                             " = 0 embedding dimensions (d_embed " + std::to_string(s.d_embed) +
                             "); expected div_val^" + std::to_string(i) + " <= d_embed, got div_val " +
                             std::to_string(s.div_val));
  }
  if (s.same_length && s.mem_len == 0 && s.semantics == Semantics::Authors)
    r.fail("/same_length", "true needs /mem_len > 0 (with no memory every key would be masked), got mem_len 0");

  // Not supported.
  if (s.attn_type == 1 || s.attn_type == 3)
    r.fail("/attn_type", std::string(s.attn_type == 1 ? "1 (Shaw et al. relative attention)"
                                                      : "3 (Al-Rfou et al. learned absolute positions)") +
                             " is not supported; expected 0 (Transformer-XL relative) or 2 (absolute sinusoid)");
  if (s.attn_type > 3)
    r.fail("/attn_type", "expected 0 (relative) or 2 (absolute), got " + std::to_string(s.attn_type));
  if (s.attn_type == 2 && s.mem_len > 0)
    r.fail("/mem_len", "attn_type 2 with a memory is not supported; expected 0, got " + std::to_string(s.mem_len));
  if (s.ext_len > 0)
    r.fail("/ext_len", "extended context is not supported; expected 0, got " + std::to_string(s.ext_len));
  if (sampleSoftmax > 0)
    r.fail("/sample_softmax",
           "sampled softmax is not supported; expected -1 (off), got " + std::to_string(sampleSoftmax));

  // Sizes: count every parameter with checked arithmetic.
  Checked c{r};
  const std::string pEmbed = "/d_embed", pHead = "/d_head", pInner = "/d_inner", pLayer = "/n_layer";
  const std::string pToken = nTokenPointer.empty() ? "/n_token" : nTokenPointer;
  std::int64_t hd = c.mul(s.n_head, s.d_head, pHead, "n_head × d_head");
  std::int64_t attnW =
      c.mul(c.mul(hd, s.d_model, pHead, "n_head × d_head × d_model"), 5, pHead, "5 × n_head × d_head × d_model");
  std::int64_t ffW =
      c.mul(c.mul(s.d_inner, s.d_model, pInner, "d_inner × d_model"), 2, pInner, "2 × d_inner × d_model");
  std::int64_t perLayer = c.add(c.add(attnW, ffW, pInner, "attention + feed-forward weights"),
                                s.d_inner + 6 * s.d_model, pInner, "layer parameters");
  std::int64_t total = c.mul(perLayer, s.n_layer, pLayer, "n_layer × layer parameters");
  std::string largest = total > 0 ? pLayer : pToken;
  std::int64_t largestTerm = total;
  auto bounds = s.clusterBounds();
  for (std::size_t i = 0; i < clusters; ++i) {
    std::int64_t rows = bounds[i + 1] - bounds[i];
    std::int64_t e = s.div_val == 1 ? s.d_embed : s.clusterEmbedDim(static_cast<std::int64_t>(i));
    std::int64_t table = c.mul(c.mul(rows, e, pToken, "n_token × d_embed"), 2, pToken, "2 × n_token × d_embed");
    std::int64_t proj = c.mul(c.mul(s.d_model, e, pEmbed, "d_model × d_embed"), 2, pEmbed, "2 × d_model × d_embed");
    total = c.add(total, c.add(table, proj, pToken, "embedding parameters"), pToken, "parameter count");
    if (table > largestTerm) largest = pToken, largestTerm = table;
  }
  if (total > kMaxParameterBytes / 4)
    r.fail(largest, "the weights would need " + gib(static_cast<double>(total) * 4) + " GiB as f32 (" +
                        std::to_string(total) + " parameters, an upper bound); expected at most " +
                        gib(static_cast<double>(kMaxParameterBytes)) + " GiB");

  // Unknown keys: ignored; noted for reference-style specs (a typo would
  // otherwise silently take a default). Hugging Face configs carry many keys.
  if (!hf) {
    for (auto it = j.begin(); it != j.end(); ++it)
      if (!kKnownKeys.contains(it.key()))
        s.warnings.push_back(file + ": /" + pointerToken(it.key()) + ": unknown key, ignored");
  }
  return s;
}

ModelSpec loadModelSpec(const std::string& path) {
  // A file of a known binary form is named for what it is, not reported as a JSON syntax error.
  switch (const FileForm form = sniffFile(path)) {
    case FileForm::TorchZip:
    case FileForm::Pickle:
    case FileForm::Safetensors:
    case FileForm::Artifact:
    case FileForm::Executable:
      throw Error(notSpecMessage(path, form));
    default:
      break;
  }
  const std::string text = readInputFile(path, kMaxSpecBytes, "a spec JSON file");
  const nlohmann::json j = parseJsonText(text, path);
  // A vocabulary in JSON (txlc's {"type", "symbols"}, or a symbol -> id map) is named, not reported as a missing key.
  if (j.is_object() && !j.empty() && !j.contains("n_token") && !j.contains("vocab_size") && !j.contains("n_layer") &&
      !j.contains("d_model") && !j.contains("n_head")) {
    const bool txlcVocab = j.contains("symbols") && j.contains("type");
    const bool idMap = std::all_of(j.begin(), j.end(), [](const nlohmann::json& v) { return v.is_number_integer(); });
    if (txlcVocab || idMap)
      throw Error(
          path + ": a vocabulary (JSON), not a model spec; give the folder that holds it (or pass it as --vocab FILE)");
  }
  return parseModelSpec(j, path);
}

}  // namespace txl::frontend
