// frontend/vocabulary.cpp - character and word tokenizers.
#include "frontend/vocabulary.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "frontend/model_spec.h"
#include "frontend/torch_checkpoint.h"
#include "frontend/input_file.h"
#include "ir/check.h"

namespace txl::frontend {

namespace {

bool isSpace(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }

std::string readFile(const std::string& path) { return readInputFile(path, kMaxVocabularyBytes, "a vocabulary file"); }

std::string codePointName(std::uint32_t cp) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "U+%04X", unsigned(cp));
  return buf;
}

// A character as a message shows it: printable ones quoted, others escaped.
std::string showChar(std::string_view bytes, std::uint32_t cp) {
  if (cp == '\n') return "'\\n' (U+000A)";
  if (cp == '\t') return "'\\t' (U+0009)";
  if (cp == '\r') return "'\\r' (U+000D)";
  if (cp < 0x20 || cp == 0x7f) return codePointName(cp);
  return "'" + std::string(bytes) + "' (" + codePointName(cp) + ")";
}

}  // namespace

std::size_t decodeUtf8(std::string_view s, std::size_t pos, std::uint32_t& cp) {
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(s[i]); };
  const unsigned char b0 = byte(pos);
  std::size_t len;
  std::uint32_t min;
  if (b0 < 0x80) {
    cp = b0;
    return 1;
  } else if ((b0 & 0xe0) == 0xc0) {
    len = 2, cp = b0 & 0x1f, min = 0x80;
  } else if ((b0 & 0xf0) == 0xe0) {
    len = 3, cp = b0 & 0x0f, min = 0x800;
  } else if ((b0 & 0xf8) == 0xf0) {
    len = 4, cp = b0 & 0x07, min = 0x10000;
  } else {
    return 0;
  }
  if (pos + len > s.size()) return 0;
  for (std::size_t i = 1; i < len; ++i) {
    if ((byte(pos + i) & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (byte(pos + i) & 0x3f);
  }
  if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;  // overlong, too big, surrogate
  return len;
}

Vocabulary Vocabulary::load(const std::string& path) {
  // Hugging Face's vocab.pkl: a pickle (or torch.save) of the tokenizer's
  // fields, interpreted without running it; its symbols are a word list.
  if (std::filesystem::path(path).extension() == ".pkl") {
    VocabularyPickle pkl = readVocabularyPickleWithOptions(path);
    Vocabulary v = fromSymbols(VocabKind::Word, std::move(pkl.symbols), path);
    v.tokenizer_ = WordTokenizer::Hf;
    // transformers gives the constructor's arguments (tokenizer_config.json)
    // precedence over the pickle's members.
    std::optional<HfTokenizerOptions> config = tokenizerConfigBeside(path);
    v.hfOptions_ = config ? std::move(*config) : std::move(pkl.tokenizer);
    return v;
  }
  std::string text = readFile(path);
  Vocabulary v = parsingFile(path, "a vocabulary", [&] { return parseText(text, path); });
  // A word list in a Hugging Face folder keeps transformers' tokenizer: with
  // a TransfoXLTokenizer's tokenizer_config.json beside it (as `txlc import`
  // writes it), or beside Hugging Face's vocab.pkl (transformers reads both,
  // the symbols from vocab.txt), with the pickle's options.
  if (v.kind_ == VocabKind::Word) {
    std::optional<HfTokenizerOptions> o = tokenizerConfigBeside(path);
    const std::filesystem::path pkl = std::filesystem::path(path).parent_path() / "vocab.pkl";
    std::error_code ec;
    if (!o && std::filesystem::path(path).filename() == "vocab.txt" && std::filesystem::is_regular_file(pkl, ec))
      o = readVocabularyPickleWithOptions(pkl.string()).tokenizer;
    if (o) {
      v.tokenizer_ = WordTokenizer::Hf;
      v.hfOptions_ = std::move(*o);
    }
  }
  return v;
}

Vocabulary Vocabulary::parseText(const std::string& text, const std::string& path) {
  if (std::filesystem::path(path).extension() == ".json") return fromJson(parseJsonText(text, path), path);
  // One symbol per line: the first whitespace-separated field (the reference's
  // Vocab._build_from_file); a line with none is an error, since it would
  // shift every later id.
  std::vector<std::string> symbols;
  std::size_t pos = 0, line = 1;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    std::string_view l(text.data() + pos, end - pos);
    std::size_t b = 0;
    while (b < l.size() && isSpace(l[b])) ++b;
    std::size_t e = b;
    while (e < l.size() && !isSpace(l[e])) ++e;
    if (b == e) throw Error(path + ": line " + std::to_string(line) + ": expected a symbol, got an empty line");
    symbols.emplace_back(l.substr(b, e - b));
    pos = end + 1;
    ++line;
  }
  return fromSymbols(VocabKind::Word, std::move(symbols), path);
}

Vocabulary Vocabulary::fromJson(const nlohmann::json& j, const std::string& source) {
  if (!j.is_object()) throw Error(source + ": expected a JSON object {\"type\": ..., \"symbols\": [...]}");
  auto type = j.find("type");
  if (type == j.end() || !type->is_string())
    throw Error(source + ": /type: expected \"char\" or \"word\", got " + (type == j.end() ? "nothing" : type->dump()));
  VocabKind kind;
  if (*type == "char") kind = VocabKind::Char;
  else if (*type == "word") kind = VocabKind::Word;
  else throw Error(source + ": /type: expected \"char\" or \"word\", got " + type->dump());
  auto syms = j.find("symbols");
  if (syms == j.end() || !syms->is_array())
    throw Error(source + ": /symbols: expected an array of strings, got " +
                (syms == j.end() ? "nothing" : syms->dump()));
  std::vector<std::string> symbols;
  for (std::size_t i = 0; i < syms->size(); ++i) {
    const auto& s = (*syms)[i];
    if (!s.is_string())
      throw Error(source + ": /symbols/" + std::to_string(i) + ": expected a string, got " + s.dump());
    symbols.push_back(s.get<std::string>());
  }
  Vocabulary v = fromSymbols(kind, std::move(symbols), source);
  if (auto t = j.find("tokenizer"); t != j.end()) {
    if (!t->is_string()) throw Error(source + ": /tokenizer: expected \"whitespace\" or \"hf\", got " + t->dump());
    v.setTokenizer(parseWordTokenizer(t->get<std::string>(), source + ": /tokenizer"), source + ": /tokenizer");
  }
  if (auto o = j.find("hf_tokenizer"); o != j.end())
    v.hfOptions_ = HfTokenizerOptions::fromJson(*o, source + ": /hf_tokenizer");
  return v;
}

Vocabulary Vocabulary::fromSymbols(VocabKind kind, std::vector<std::string> symbols, const std::string& source) {
  Vocabulary v;
  v.kind_ = kind;
  v.source_ = source;
  if (symbols.empty()) throw Error(source + ": expected at least one symbol, got none");
  for (std::size_t i = 0; i < symbols.size(); ++i) {
    const std::string& s = symbols[i];
    const std::string where = source + ": symbol " + std::to_string(i);
    if (kind == VocabKind::Char) {
      std::uint32_t cp = 0;
      std::size_t len = s.empty() ? 0 : decodeUtf8(s, 0, cp);
      if (len == 0 || len != s.size())
        throw Error(where + ": expected one UTF-8 character, got " +
                    nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
      if (!v.chars_.emplace(cp, std::int64_t(i)).second)
        throw Error(where + ": " + showChar(s, cp) + " is also symbol " + std::to_string(v.chars_.at(cp)));
    } else {
      if (s.empty()) throw Error(where + ": expected a word, got an empty string");
      for (char c : s)
        if (isSpace(c) || c == '\n') throw Error(where + ": expected a word without whitespace, got \"" + s + "\"");
      if (!v.index_.emplace(s, std::int64_t(i)).second)
        throw Error(where + ": \"" + s + "\" is also symbol " + std::to_string(v.index_.at(s)));
    }
  }
  v.symbols_ = std::move(symbols);
  if (kind == VocabKind::Word) {
    auto eos = v.index_.find("<eos>");
    if (eos == v.index_.end()) throw Error(source + ": expected the symbol <eos> in a word vocabulary, got none");
    v.eos_ = eos->second;
    auto unk = v.index_.find("<unk>");
    if (unk != v.index_.end()) v.unk_ = unk->second;
  }
  return v;
}

const std::string& Vocabulary::symbol(std::int64_t id) const {
  if (id < 0 || id >= size())
    throw Error("token id " + std::to_string(id) + " is outside the vocabulary [0, " + std::to_string(size()) + ")");
  return symbols_[std::size_t(id)];
}

nlohmann::json Vocabulary::toJson() const {
  nlohmann::json j = {{"type", kind_ == VocabKind::Char ? "char" : "word"}, {"symbols", symbols_}};
  if (kind_ == VocabKind::Word && tokenizer_ == WordTokenizer::Hf) {
    j["tokenizer"] = wordTokenizerName(tokenizer_);
    j["hf_tokenizer"] = hfOptions_.toJson();
  }
  return j;
}

const char* wordTokenizerName(WordTokenizer t) { return t == WordTokenizer::Hf ? "hf" : "whitespace"; }

WordTokenizer parseWordTokenizer(const std::string& name, const std::string& where) {
  if (name == "whitespace") return WordTokenizer::Whitespace;
  if (name == "hf") return WordTokenizer::Hf;
  throw Error(where + ": expected whitespace or hf, got \"" + name + "\"");
}

void Vocabulary::setTokenizer(WordTokenizer t, const std::string& what) {
  if (kind_ != VocabKind::Word)
    throw Error(what + ": " + wordTokenizerName(t) + " splits words; " + source_ +
                " is a character vocabulary (expected a word vocabulary)");
  tokenizer_ = t;
}

std::vector<Vocabulary::LineWord> Vocabulary::lineWords(std::string_view l, const std::string& source,
                                                        std::size_t line) const {
  std::vector<LineWord> words;
  if (tokenizer_ == WordTokenizer::Hf) {
    // The pipeline works on characters: name the first invalid byte.
    std::size_t column = 1;
    for (std::size_t pos = 0; pos < l.size(); ++column) {
      std::uint32_t cp = 0;
      const std::size_t len = decodeUtf8(l, pos, cp);
      if (len == 0) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "0x%02X", unsigned(static_cast<unsigned char>(l[pos])));
        throw Error(source + ": line " + std::to_string(line) + " column " + std::to_string(column) +
                    ": expected UTF-8 text, got the invalid byte " + buf);
      }
      pos += len;
    }
    for (std::string& w : hfTokenizeLine(l, hfOptions_)) words.push_back({std::move(w), 0});
    return words;
  }
  for (std::size_t b = 0; b < l.size();) {
    while (b < l.size() && isSpace(l[b])) ++b;
    std::size_t e = b;
    while (e < l.size() && !isSpace(l[e])) ++e;
    if (e == b) break;
    words.push_back({std::string(l.substr(b, e - b)), b + 1});
    b = e;
  }
  return words;
}

std::vector<std::int64_t> Vocabulary::encode(std::string_view text, const std::string& source,
                                             const EncodeOptions& options) const {
  std::vector<std::int64_t> ids;
  std::size_t line = 1, lineStart = 0;
  if (kind_ == VocabKind::Char) {
    ids.reserve(text.size());
    std::size_t column = 1;
    for (std::size_t pos = 0; pos < text.size();) {
      std::uint32_t cp = 0;
      std::size_t len = decodeUtf8(text, pos, cp);
      if (len == 0) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "0x%02X", unsigned(static_cast<unsigned char>(text[pos])));
        throw Error(source + ": line " + std::to_string(line) + " column " + std::to_string(column) + " (byte " +
                    std::to_string(pos) + "): expected UTF-8 text, got the invalid byte " + buf);
      }
      auto it = chars_.find(cp);
      if (it == chars_.end())
        throw Error(source + ": line " + std::to_string(line) + " column " + std::to_string(column) + ": character " +
                    showChar(text.substr(pos, len), cp) + " is not in the vocabulary (" + source_ + ", " +
                    std::to_string(size()) + " symbols)");
      ids.push_back(it->second);
      pos += len;
      if (cp == '\n') ++line, column = 1;
      else ++column;
    }
    return ids;
  }
  // Word level: line by line, as the reference's Vocab.tokenize(add_eos=True).
  ids.reserve(text.size() / 4);
  while (lineStart < text.size()) {
    std::size_t end = text.find('\n', lineStart);
    const bool terminated = end != std::string_view::npos;
    if (!terminated) end = text.size();
    std::string_view l = text.substr(lineStart, end - lineStart);
    for (const LineWord& word : lineWords(l, source, line)) {
      auto it = index_.find(word.text);
      if (it != index_.end()) {
        ids.push_back(it->second);
      } else if (unk_ >= 0) {
        ids.push_back(unk_);
      } else {
        const std::string column = word.column ? " column " + std::to_string(word.column) : "";
        throw Error(source + ": line " + std::to_string(line) + column + ": word \"" + word.text +
                    "\" is not in the vocabulary (" + source_ + " has no <unk>)");
      }
    }
    if (terminated || options.eosAtEnd) ids.push_back(eos_);
    lineStart = end + 1;
    ++line;
  }
  return ids;
}

std::int64_t Vocabulary::countUnknown(std::string_view text) const {
  if (kind_ != VocabKind::Word) return 0;
  std::int64_t n = 0;
  std::size_t line = 1;
  for (std::size_t start = 0; start < text.size(); ++line) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    for (const LineWord& word : lineWords(text.substr(start, end - start), source_, line))
      if (!index_.contains(word.text)) ++n;
    start = end + 1;
  }
  return n;
}

std::string Vocabulary::decodeToken(std::int64_t id, std::int64_t previous) const {
  const std::string& s = symbol(id);
  if (kind_ == VocabKind::Char) return s;
  if (id == eos_) return "\n";
  if (previous < 0 || previous == eos_) return s;
  return " " + s;
}

std::string Vocabulary::decode(std::span<const std::int64_t> ids) const {
  std::string out;
  std::int64_t previous = -1;
  for (std::int64_t id : ids) {
    out += decodeToken(id, previous);
    previous = id;
  }
  return out;
}

}  // namespace txl::frontend
