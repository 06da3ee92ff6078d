// frontend/hf_word_tokenizer.cpp - special tokens, lower-casing, the Moses pipeline and number splitting.
#include "frontend/hf_word_tokenizer.h"

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "frontend/input_file.h"
#include "frontend/model_spec.h"
#include "frontend/moses_tokenizer.h"
#include "frontend/unicode_classes.h"
#include "ir/check.h"

namespace txl::frontend {

namespace {

struct Piece {
  std::u32string text;
  bool special = false;
};

// transformers' Trie.split(): the text cut at each special token, scanning left
// to right and taking the longest special token that starts at a position.
std::vector<Piece> splitSpecials(const std::u32string& text, const std::vector<std::u32string>& specials) {
  std::vector<Piece> out;
  std::size_t start = 0;
  for (std::size_t i = 0; i < text.size();) {
    std::size_t best = 0;
    for (const std::u32string& s : specials)
      if (s.size() > best && text.compare(i, s.size(), s) == 0) best = s.size();
    if (best == 0) {
      ++i;
      continue;
    }
    if (i > start) out.push_back({text.substr(start, i - start), false});
    out.push_back({text.substr(i, best), true});
    i += best;
    start = i;
  }
  if (start < text.size()) out.push_back({text.substr(start), false});
  return out;
}

std::u32string strip(const std::u32string& s) {
  std::size_t b = 0, e = s.size();
  while (b < e && isSpace(s[b])) ++b;
  while (e > b && isSpace(s[e - 1])) --e;
  return s.substr(b, e - b);
}

// tokenize_numbers(): re.sub(r"(?<=\d)[,.](?=\d)", r" @\g<0>@ ", word).split()
void appendNumberSplit(const std::u32string& word, std::vector<std::string>& out) {
  std::size_t start = 0;
  for (std::size_t i = 1; i + 1 < word.size(); ++i) {
    if ((word[i] == U',' || word[i] == U'.') && isDigit(word[i - 1]) && isDigit(word[i + 1])) {
      out.push_back(toUtf8(std::u32string_view(word).substr(start, i - start)));
      out.push_back(word[i] == U',' ? "@,@" : "@.@");
      start = i + 1;
    }
  }
  out.push_back(toUtf8(std::u32string_view(word).substr(start)));
}

}  // namespace

nlohmann::json HfTokenizerOptions::toJson() const {
  nlohmann::json j = {{"lower_case", lowerCase},
                      {"delimiter", delimiter ? nlohmann::json(*delimiter) : nlohmann::json(nullptr)},
                      {"language", language},
                      {"special_tokens", specialTokens}};
  return j;
}

HfTokenizerOptions HfTokenizerOptions::fromJson(const nlohmann::json& j, const std::string& source) {
  if (!j.is_object()) throw Error(source + ": expected an object of tokenizer options, got " + j.dump());
  HfTokenizerOptions o;
  if (auto it = j.find("lower_case"); it != j.end()) {
    if (!it->is_boolean()) throw Error(source + "/lower_case: expected true or false, got " + it->dump());
    o.lowerCase = it->get<bool>();
  }
  if (auto it = j.find("delimiter"); it != j.end() && !it->is_null()) {
    if (!it->is_string()) throw Error(source + "/delimiter: expected a string or null, got " + it->dump());
    o.delimiter = it->get<std::string>();
  }
  if (auto it = j.find("language"); it != j.end()) {
    if (!it->is_string()) throw Error(source + "/language: expected a string, got " + it->dump());
    o.language = it->get<std::string>();
  }
  if (auto it = j.find("special_tokens"); it != j.end()) {
    if (!it->is_array()) throw Error(source + "/special_tokens: expected an array of strings, got " + it->dump());
    o.specialTokens.clear();
    for (const auto& s : *it) {
      if (!s.is_string() || s.get<std::string>().empty())
        throw Error(source + "/special_tokens: expected non-empty strings, got " + s.dump());
      o.specialTokens.push_back(s.get<std::string>());
    }
  }
  return o;
}

nlohmann::json HfTokenizerOptions::toTokenizerConfig() const {
  nlohmann::json j = {{"tokenizer_class", "TransfoXLTokenizer"},
                      {"lower_case", lowerCase},
                      {"delimiter", delimiter ? nlohmann::json(*delimiter) : nlohmann::json(nullptr)},
                      {"language", language},
                      {"never_split", specialTokens}};
  return j;
}

std::optional<HfTokenizerOptions> HfTokenizerOptions::fromTokenizerConfig(const nlohmann::json& j,
                                                                          const std::string& source) {
  if (!j.is_object()) throw Error(source + ": expected a JSON object, got " + j.dump());
  auto cls = j.find("tokenizer_class");
  if (cls == j.end() || *cls != "TransfoXLTokenizer") return std::nullopt;
  HfTokenizerOptions o = fromJson(nlohmann::json::object(), source);
  if (auto it = j.find("lower_case"); it != j.end()) {
    if (!it->is_boolean()) throw Error(source + ": /lower_case: expected true or false, got " + it->dump());
    o.lowerCase = it->get<bool>();
  }
  if (auto it = j.find("delimiter"); it != j.end() && !it->is_null()) {
    if (!it->is_string()) throw Error(source + ": /delimiter: expected a string or null, got " + it->dump());
    o.delimiter = it->get<std::string>();
  }
  if (auto it = j.find("language"); it != j.end()) {
    if (!it->is_string()) throw Error(source + ": /language: expected a string, got " + it->dump());
    o.language = it->get<std::string>();
  }
  // A special token is a string or an AddedToken's {"content": ...}.
  auto token = [&](const nlohmann::json& t, const std::string& where) {
    const nlohmann::json* c = t.is_object() && t.contains("content") ? &t.at("content") : &t;
    if (!c->is_string() || c->get<std::string>().empty())
      throw Error(source + ": " + where + ": expected a non-empty string, got " + t.dump());
    return c->get<std::string>();
  };
  std::vector<std::string> specials;
  for (const char* key : {"unk_token", "eos_token"}) {
    auto it = j.find(key);
    specials.push_back(it == j.end() || it->is_null() ? (std::string(key) == "unk_token" ? "<unk>" : "<eos>")
                                                      : token(*it, std::string("/") + key));
  }
  for (const char* key : {"additional_special_tokens", "never_split"}) {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) {
      if (std::string(key) == "additional_special_tokens") specials.push_back("<formula>");
      continue;
    }
    if (!it->is_array()) throw Error(source + ": /" + key + ": expected an array of strings, got " + it->dump());
    for (std::size_t k = 0; k < it->size(); ++k)
      specials.push_back(token((*it)[k], "/" + std::string(key) + "/" + std::to_string(k)));
  }
  o.specialTokens.clear();
  for (auto& s : specials)
    if (std::find(o.specialTokens.begin(), o.specialTokens.end(), s) == o.specialTokens.end())
      o.specialTokens.push_back(std::move(s));
  return o;
}

std::optional<HfTokenizerOptions> tokenizerConfigBeside(const std::string& vocabPath) {
  const std::filesystem::path config = std::filesystem::path(vocabPath).parent_path() / "tokenizer_config.json";
  std::error_code ec;
  if (!std::filesystem::is_regular_file(config, ec)) return std::nullopt;
  const std::string text = readInputFile(config.string(), kMaxSpecBytes, "a tokenizer config");
  return HfTokenizerOptions::fromTokenizerConfig(parseJsonText(text, config.string()), config.string());
}

std::vector<std::string> hfTokenizeLine(std::string_view line, const HfTokenizerOptions& options) {
  std::vector<std::u32string> specials;
  for (const std::string& s : options.specialTokens) specials.push_back(toCodePoints(s));
  std::u32string text = toCodePoints(line);
  if (options.lowerCase) {
    // Lower-case all but the special tokens spelled exactly; a special token
    // spelled in capitals becomes one by lower-casing.
    std::u32string lowered;
    for (const Piece& p : splitSpecials(text, specials)) lowered += p.special ? p.text : lowerCase(p.text);
    text = std::move(lowered);
  }
  std::vector<std::string> words;
  for (const Piece& p : splitSpecials(text, specials)) {
    if (p.special) {
      words.push_back(toUtf8(p.text));
      continue;
    }
    const std::u32string piece = strip(p.text);
    if (piece.empty()) continue;
    if (options.delimiter && options.delimiter->empty()) {
      for (char32_t c : piece) words.push_back(toUtf8(std::u32string_view(&c, 1)));
      continue;
    }
    const std::u32string normalized = mosesNormalizePunctuation(piece, options.language);
    for (const std::u32string& w : mosesTokenize(normalized, options.language, specials)) appendNumberSplit(w, words);
  }
  return words;
}

}  // namespace txl::frontend
