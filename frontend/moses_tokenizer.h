// frontend/moses_tokenizer.h - Moses punctuation normalization and tokenization, as transformers runs them.
//
// transformers' TransfoXLTokenizer.moses_pipeline() calls sacremoses'
// MosesPunctNormalizer(lang).normalize() and then
// MosesTokenizer(lang).tokenize(text, aggressive_dash_splits=True,
// return_str=False, escape=False, protected_patterns=never_split). These are
// reimplementations of exactly those two calls (sacremoses' defaults
// otherwise: penn=True, norm_quote_commas=True, norm_numbers=True, no
// pre/post Unicode replacement), rule by rule in sacremoses' order; every rule
// is a left-to-right, non-overlapping substitution like Python's re.sub().
// Each rule in moses_tokenizer.cpp names the sacremoses constant it reproduces.
//
//   std::u32string t = mosesNormalizePunctuation(U"the city , and the house .", "en");
//   std::vector<std::u32string> words = mosesTokenize(t, "en", {U"<unk>"});
//   // the , city , and , the , house , .
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace txl::frontend {

// MosesPunctNormalizer(lang).normalize(text). `lang` chooses the quote/comma
// and number rules ("en"; "de", "es", "fr"; "cz", "cs"; others).
std::u32string mosesNormalizePunctuation(std::u32string_view text, const std::string& lang);

// MosesTokenizer(lang).tokenize(text, aggressive_dash_splits=True,
// escape=False, protected_patterns=protect): the tokens. Occurrences of a
// `protect` string (ASCII letters compared without case, like sacremoses'
// re.IGNORECASE search of the pattern) pass through unsplit. `lang` chooses
// the apostrophe rules ("en"; "fr", "it"; others) and the non-breaking
// prefixes (English's list for "en", none for other languages).
std::vector<std::u32string> mosesTokenize(std::u32string_view text, const std::string& lang,
                                          const std::vector<std::u32string>& protect);

}  // namespace txl::frontend
