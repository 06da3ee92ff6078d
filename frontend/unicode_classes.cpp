// frontend/unicode_classes.cpp - character classes by binary search over generated ranges.
#include "frontend/unicode_classes.h"

#include <algorithm>
#include <iterator>

#include "frontend/vocabulary.h"

namespace txl::frontend {

namespace {

struct CodePointRange {
  char32_t lo, hi;
};
struct LowerMapping {
  char32_t from, to1, to2;
};

#include "frontend/unicode_classes_data.inc"

template <std::size_t N>
bool inRanges(const CodePointRange (&table)[N], char32_t c) {
  auto it = std::upper_bound(std::begin(table), std::end(table), c,
                             [](char32_t v, const CodePointRange& r) { return v < r.lo; });
  return it != std::begin(table) && c <= std::prev(it)->hi;
}

}  // namespace

bool isAlpha(char32_t c) { return c < 0x80 ? ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') : inRanges(kAlpha, c); }
bool isAlnum(char32_t c) { return c < 0x80 ? isAlpha(c) || (c >= '0' && c <= '9') : inRanges(kAlnum, c); }
bool isNumber(char32_t c) { return c < 0x80 ? c >= '0' && c <= '9' : inRanges(kNumber, c); }
bool isDigit(char32_t c) { return c < 0x80 ? c >= '0' && c <= '9' : inRanges(kDigit, c); }
bool isCurrency(char32_t c) { return inRanges(kCurrency, c); }
bool isOtherSymbol(char32_t c) { return inRanges(kOtherSymbol, c); }
bool isLower(char32_t c) { return c < 0x80 ? c >= 'a' && c <= 'z' : inRanges(kLower, c); }
bool isSpace(char32_t c) { return inRanges(kSpace, c); }

std::u32string lowerCase(std::u32string_view s) {
  std::u32string out;
  out.reserve(s.size());
  for (char32_t c : s) {
    if (c < 0x80) {
      out.push_back(c >= 'A' && c <= 'Z' ? c + 0x20 : c);
      continue;
    }
    auto it = std::lower_bound(std::begin(kLowerMap), std::end(kLowerMap), c,
                               [](const LowerMapping& m, char32_t v) { return m.from < v; });
    if (it == std::end(kLowerMap) || it->from != c) {
      out.push_back(c);
    } else {
      out.push_back(it->to1);
      if (it->to2) out.push_back(it->to2);
    }
  }
  return out;
}

std::u32string toCodePoints(std::string_view utf8) {
  std::u32string out;
  out.reserve(utf8.size());
  for (std::size_t pos = 0; pos < utf8.size();) {
    std::uint32_t cp = 0;
    std::size_t len = decodeUtf8(utf8, pos, cp);
    if (len == 0) {
      out.push_back(U'\uFFFD');
      ++pos;
    } else {
      out.push_back(char32_t(cp));
      pos += len;
    }
  }
  return out;
}

std::string toUtf8(std::u32string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char32_t c : s) {
    if (c < 0x80) {
      out.push_back(char(c));
    } else if (c < 0x800) {
      out.push_back(char(0xC0 | (c >> 6)));
      out.push_back(char(0x80 | (c & 0x3F)));
    } else if (c < 0x10000) {
      out.push_back(char(0xE0 | (c >> 12)));
      out.push_back(char(0x80 | ((c >> 6) & 0x3F)));
      out.push_back(char(0x80 | (c & 0x3F)));
    } else {
      out.push_back(char(0xF0 | (c >> 18)));
      out.push_back(char(0x80 | ((c >> 12) & 0x3F)));
      out.push_back(char(0x80 | ((c >> 6) & 0x3F)));
      out.push_back(char(0x80 | (c & 0x3F)));
    }
  }
  return out;
}

}  // namespace txl::frontend
