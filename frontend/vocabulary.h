// frontend/vocabulary.h - tokenizers: text to token ids and back.
//
// Two kinds, as the bundled models use them:
//   - character level, from `vocab.json` {"type": "char", "symbols": [...]}:
//     token id = index; every symbol is one Unicode character (UTF-8), "\n"
//     included. Text is encoded code point by code point; a character outside
//     the vocabulary is an error naming its line and column.
//   - word level, from `vocab.txt`: one symbol per line, token id = line
//     number from 0 (the reference's convention: only the first
//     whitespace-separated field of a line counts). Text is encoded line by
//     line: each line is split on whitespace, "<eos>" is added at its end, and
//     a word not in the vocabulary becomes "<unk>" (an error when the
//     vocabulary has no "<unk>").
//   A word vocabulary splits each line with one of two tokenizers:
//   - whitespace: the line's whitespace-separated fields are the words (the
//     authors' Vocab.tokenize() with delimiter None);
//   - hf: transformers' TransfoXLTokenizer pipeline (frontend/hf_word_tokenizer.h:
//     special tokens, lower_case, Moses punctuation normalization and
//     tokenization, "@,@" / "@.@" inside numbers), so "the city, and the
//     house." is "the city , and the house .". The default for Hugging Face's
//     vocab.pkl, whose options (lower_case, delimiter, language, special,
//     never_split) it uses, and for a vocab.txt with a TransfoXLTokenizer's
//     tokenizer_config.json (what `txlc import` writes) or a vocab.pkl beside it.
// decode() turns ids back into text: characters concatenated; words joined by
// spaces, "<eos>" as a line break.
//
//   Vocabulary v = Vocabulary::load("models/kjv-char/vocab.json");
//   std::vector<std::int64_t> ids = v.encode(text, "valid.txt");
//   std::string back = v.decode(ids);
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "frontend/hf_word_tokenizer.h"

namespace txl::frontend {

enum class VocabKind { Char, Word };

// How a word vocabulary splits text into words (see above).
enum class WordTokenizer { Whitespace, Hf };
const char* wordTokenizerName(WordTokenizer t);  // "whitespace", "hf"
// "whitespace" or "hf"; txl::Error naming `where` otherwise.
WordTokenizer parseWordTokenizer(const std::string& name, const std::string& where);

struct EncodeOptions {
  // Word level: add "<eos>" after a last line that has no line break (the
  // reference does, reading a file line by line). Off for prompts, which
  // continue their last line.
  bool eosAtEnd = true;
};

class Vocabulary {
 public:
  // By file name: *.json is a character vocabulary, anything else (vocab.txt)
  // a word list. Errors name `path`.
  static Vocabulary load(const std::string& path);
  // {"type": "char", "symbols": [...]} or {"type": "word", "symbols": [...]},
  // a word vocabulary optionally with "tokenizer": "whitespace" | "hf" and
  // "hf_tokenizer": {options} (HfTokenizerOptions::toJson());
  // `source` names the origin in error messages.
  static Vocabulary fromJson(const nlohmann::json& j, const std::string& source);
  static Vocabulary fromSymbols(VocabKind kind, std::vector<std::string> symbols, const std::string& source);

  VocabKind kind() const { return kind_; }
  std::int64_t size() const { return std::int64_t(symbols_.size()); }
  const std::string& symbol(std::int64_t id) const;  // txl::Error if out of range
  const std::vector<std::string>& symbols() const { return symbols_; }
  std::int64_t eosId() const { return eos_; }  // -1 when absent
  std::int64_t unkId() const { return unk_; }  // -1 when absent
  nlohmann::json toJson() const;               // the fromJson() form

  // The word tokenizer encode() uses: whitespace unless the file chose hf.
  WordTokenizer tokenizer() const { return tokenizer_; }
  const HfTokenizerOptions& hfOptions() const { return hfOptions_; }
  // --tokenizer: txl::Error naming `what` for a character vocabulary. hf on a
  // vocabulary that records no options uses transformers' defaults.
  void setTokenizer(WordTokenizer t, const std::string& what);
  void setHfOptions(HfTokenizerOptions o) { hfOptions_ = std::move(o); }

  // Encodes `text`; `source` names it in error messages ("valid.txt: line 3
  // column 7: character 'é' (U+00E9) is not in the vocabulary").
  std::vector<std::int64_t> encode(std::string_view text, const std::string& source,
                                   const EncodeOptions& options = {}) const;
  // How many words encode() mapped to <unk> on its last call is not kept;
  // countUnknown() recounts for a report.
  std::int64_t countUnknown(std::string_view text) const;

  // The text of one token, for streaming output: a character; a word with the
  // separator it needs after `previous` (-1: none) - " word", or "\n" for <eos>.
  std::string decodeToken(std::int64_t id, std::int64_t previous) const;
  std::string decode(std::span<const std::int64_t> ids) const;

 private:
  // The bytes of `path` (read whole): a JSON vocabulary or a word list.
  static Vocabulary parseText(const std::string& text, const std::string& path);
  VocabKind kind_ = VocabKind::Char;
  std::string source_;
  std::vector<std::string> symbols_;
  std::unordered_map<std::string, std::int64_t> index_;    // word level
  std::unordered_map<std::uint32_t, std::int64_t> chars_;  // character level: code point -> id
  std::int64_t eos_ = -1, unk_ = -1;
  WordTokenizer tokenizer_ = WordTokenizer::Whitespace;
  HfTokenizerOptions hfOptions_;
  // The words of one line (without its line break), by the word tokenizer,
  // with the column each starts at (whitespace; 0 for hf, whose words are
  // normalized text).
  struct LineWord {
    std::string text;
    std::size_t column = 0;
  };
  std::vector<LineWord> lineWords(std::string_view line, const std::string& source, std::size_t lineNo) const;
};

// Decodes one UTF-8 code point at `text[pos]`; returns its length in bytes, or
// 0 for an invalid sequence. `cp` receives the code point.
std::size_t decodeUtf8(std::string_view text, std::size_t pos, std::uint32_t& cp);

}  // namespace txl::frontend
