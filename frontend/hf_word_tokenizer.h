// frontend/hf_word_tokenizer.h - transformers' TransfoXLTokenizer text-to-words pipeline.
//
// What transformers (4.x, models/deprecated/transfo_xl) does to one line of
// text before looking its words up in a Transfo-XL word vocabulary:
//   1. PreTrainedTokenizer.tokenize(): with lower_case, the text is
//      lower-cased (str.lower()) except where it spells a special token; then
//      it is cut at every special token ("<unk>", "<eos>", "<formula>", the
//      longest match first), which passes through as one word.
//   2. TransfoXLTokenizer._tokenize() on each piece between them: strip();
//      with delimiter "" the piece's characters are the words; otherwise
//      moses_pipeline(): sacremoses' punctuation normalizer and tokenizer
//      (frontend/moses_tokenizer.h, aggressive hyphen splitting "a @-@ b", no
//      XML escaping, the special tokens protected), then tokenize_numbers():
//      a ',' or '.' between two digits becomes its own word "@,@" / "@.@".
// Any other delimiter is ignored by transformers 4.x (it always runs the Moses
// pipeline), and so here. The options come from the vocabulary file
// (vocab.pkl's lower_case, delimiter, language, special, never_split).
//
//   HfTokenizerOptions o;
//   hfTokenizeLine("The city, and 5,000 houses.", o);
//   // The city , and 5 @,@ 000 houses .
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace txl::frontend {

struct HfTokenizerOptions {
  bool lowerCase = false;
  std::optional<std::string> delimiter;  // "" splits into characters; anything else is ignored, as transformers does
  std::string language = "en";           // sacremoses' language: apostrophes, non-breaking prefixes, quotes
  // The special tokens (transformers' all_special_tokens: unk_token, eos_token,
  // additional_special_tokens), plus the vocabulary's own `special` and
  // `never_split` lists.
  std::vector<std::string> specialTokens = {"<unk>", "<eos>", "<formula>"};

  nlohmann::json toJson() const;  // {"lower_case", "delimiter", "language", "special_tokens"}
  // The toJson() form; `source` names it in errors.
  static HfTokenizerOptions fromJson(const nlohmann::json& j, const std::string& source);

  // Hugging Face's tokenizer_config.json for a TransfoXLTokenizer: the
  // constructor arguments transformers passes it ("tokenizer_class",
  // "lower_case", "delimiter", "language", "unk_token", "eos_token",
  // "additional_special_tokens", "never_split"). `txlc import` writes it
  // beside vocab.txt so that the imported folder keeps the tokenizer.
  nlohmann::json toTokenizerConfig() const;
  // The options of a tokenizer_config.json whose tokenizer_class is
  // "TransfoXLTokenizer"; nullopt for any other class (or none).
  static std::optional<HfTokenizerOptions> fromTokenizerConfig(const nlohmann::json& j, const std::string& source);
};

// The tokenizer_config.json in the folder of `vocabPath`, read as
// fromTokenizerConfig() reads it; nullopt when there is none.
std::optional<HfTokenizerOptions> tokenizerConfigBeside(const std::string& vocabPath);

// The words of one line (no line break in it; no "<eos>" is added). `line`
// must be valid UTF-8 (the caller reports where it is not).
std::vector<std::string> hfTokenizeLine(std::string_view line, const HfTokenizerOptions& options);

}  // namespace txl::frontend
