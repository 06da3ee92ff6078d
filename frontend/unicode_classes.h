// frontend/unicode_classes.h - the Unicode character classes and lower-casing the HF word tokenizer needs.
//
// The Moses rules (frontend/moses_tokenizer.h) are written against Perl's
// Unicode properties, which sacremoses reads from its perluniprops tables, and
// Python's `re` classes (\s, \d); transformers lower-cases with str.lower().
// The tables are generated from Python's unicodedata by
// scripts/gen_unicode_classes.py (frontend/unicode_classes_data.inc). Perl's
// Alphabetic property is approximated by the categories L*, Nl and Mc, its
// Lowercase by Ll: they differ only on combining marks and a few modifier
// letters, none of which a word vocabulary's text depends on.
//
//   std::u32string s = toCodePoints("Zürich");   // invalid UTF-8 bytes become U+FFFD
//   isAlpha(s[1]);                              // true
//   toUtf8(lowerCase(s));                       // "zürich"
#pragma once

#include <string>
#include <string_view>

namespace txl::frontend {

bool isAlpha(char32_t c);        // Perl \p{IsAlpha}
bool isAlnum(char32_t c);        // Perl \p{IsAlnum}: IsAlpha or a decimal digit
bool isNumber(char32_t c);       // Perl \p{IsN}: any numeric character (Nd, Nl, No)
bool isDigit(char32_t c);        // Python re's \d: a decimal digit (Nd)
bool isCurrency(char32_t c);     // Perl \p{IsSc}
bool isOtherSymbol(char32_t c);  // Perl \p{IsSo}
bool isLower(char32_t c);        // Perl \p{IsLower}
bool isSpace(char32_t c);        // Python re's \s and str.strip()/split(): str.isspace()

// Python's str.lower() (full mapping: U+0130 becomes two code points).
std::u32string lowerCase(std::u32string_view s);

// UTF-8 <-> code points. toCodePoints() turns an invalid byte into U+FFFD (the
// caller checks validity first where it matters).
std::u32string toCodePoints(std::string_view utf8);
std::string toUtf8(std::u32string_view s);

}  // namespace txl::frontend
