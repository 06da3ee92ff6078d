// frontend/moses_tokenizer.cpp - sacremoses' MosesPunctNormalizer and MosesTokenizer rules.
//
// Every rule is a fixed-length pattern (single characters of a class,
// literals, anchors, an optional one-character lookahead) substituted the way
// Python's re.sub() does: scanning left to right, each match consumed before
// the search goes on. The few variable-length rules (runs of spaces, runs of
// dots) are written out by hand. Rule names in the comments are sacremoses'
// constants (sacremoses/normalize.py, sacremoses/tokenize.py), which port the
// Moses perl scripts normalize-punctuation.perl and tokenizer.perl.
#include "frontend/moses_tokenizer.h"

#include <algorithm>
#include <functional>
#include <unordered_set>

#include "frontend/unicode_classes.h"

namespace txl::frontend {

namespace {

using Pred = std::function<bool(char32_t)>;

// One element of a fixed-length pattern.
struct Elem {
  enum Kind { Class, Literal, Start, End } kind = Class;
  Pred pred;           // Class
  std::u32string lit;  // Literal
  bool ahead = false;  // a lookahead: tested, never consumed (must come last)
};

Elem cls(Pred p) { return Elem{Elem::Class, std::move(p), {}, false}; }
Elem lit(std::u32string s) { return Elem{Elem::Literal, {}, std::move(s), false}; }
Elem ahead(Pred p) { return Elem{Elem::Class, std::move(p), {}, true}; }
Elem atEnd() { return Elem{Elem::End, {}, {}, false}; }
Pred oneOf(std::u32string set) {
  return [set = std::move(set)](char32_t c) { return set.find(c) != std::u32string::npos; };
}
Pred noneOf(Pred p) {
  return [p = std::move(p)](char32_t c) { return !p(c); };
}

// re.sub(pattern, replacement, text) for a fixed-length pattern; in
// `replacement`, \1..\9 is the text the pattern's n-th element matched.
std::u32string sub(const std::u32string& text, const std::vector<Elem>& pattern, std::u32string_view replacement) {
  std::u32string out;
  out.reserve(text.size() + 16);
  std::vector<std::pair<std::size_t, std::size_t>> groups(pattern.size());
  const std::size_t n = text.size();
  std::size_t i = 0;
  while (i <= n) {
    std::size_t pos = i;
    bool ok = true;
    for (std::size_t k = 0; k < pattern.size() && ok; ++k) {
      const Elem& e = pattern[k];
      switch (e.kind) {
        case Elem::Start:
          ok = pos == 0;
          break;
        case Elem::End:
          ok = pos == n;
          break;
        case Elem::Literal:
          ok = text.compare(pos, e.lit.size(), e.lit) == 0 && pos + e.lit.size() <= n;
          groups[k] = {pos, e.lit.size()};
          pos += ok ? e.lit.size() : 0;
          break;
        case Elem::Class:
          ok = pos < n && e.pred(text[pos]);
          groups[k] = {pos, 1};
          if (ok && !e.ahead) ++pos;
          break;
      }
    }
    if (ok && pos > i) {
      for (std::size_t r = 0; r < replacement.size(); ++r) {
        if (replacement[r] == U'\\' && r + 1 < replacement.size() && replacement[r + 1] >= U'1' &&
            replacement[r + 1] <= U'9') {
          const auto& [at, len] = groups[std::size_t(replacement[r + 1] - U'1')];
          out.append(text, at, len);
          ++r;
        } else {
          out.push_back(replacement[r]);
        }
      }
      i = pos;
    } else {
      if (i < n) out.push_back(text[i]);
      ++i;
    }
  }
  return out;
}

// str.replace(from, to): every non-overlapping occurrence, left to right.
std::u32string replaceAll(const std::u32string& text, std::u32string_view from, std::u32string_view to) {
  std::u32string out;
  std::size_t i = 0;
  for (std::size_t at; (at = text.find(from, i)) != std::u32string::npos; i = at + from.size()) {
    out.append(text, i, at - i);
    out.append(to);
  }
  out.append(text, i);
  return out;
}

// re.sub(r"<class>+", " ", text): each run of class characters becomes one space.
std::u32string collapse(const std::u32string& text, const Pred& p) {
  std::u32string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    if (p(text[i])) {
      out.push_back(U' ');
      while (i < text.size() && p(text[i])) ++i;
    } else {
      out.push_back(text[i++]);
    }
  }
  return out;
}

bool isBlank(char32_t c) { return c == U' '; }

// str.strip() (Unicode whitespace).
std::u32string strip(const std::u32string& text) {
  std::size_t b = 0, e = text.size();
  while (b < e && isSpace(text[b])) ++b;
  while (e > b && isSpace(text[e - 1])) --e;
  return text.substr(b, e - b);
}

// str.split(): on runs of Unicode whitespace.
std::vector<std::u32string> split(const std::u32string& text) {
  std::vector<std::u32string> out;
  for (std::size_t i = 0; i < text.size();) {
    while (i < text.size() && isSpace(text[i])) ++i;
    std::size_t e = i;
    while (e < text.size() && !isSpace(text[e])) ++e;
    if (e > i) out.push_back(text.substr(i, e - i));
    i = e;
  }
  return out;
}

bool isAsciiLetter(char32_t c) { return (c >= U'a' && c <= U'z') || (c >= U'A' && c <= U'Z'); }
bool isAsciiDigitChar(char32_t c) { return c >= U'0' && c <= U'9'; }

// Moses' English non-breaking prefixes (nonbreaking_prefix.en, as sacremoses
// ships it): a token "<prefix>." keeps its period. The "#NUMERIC_ONLY#" ones
// keep it only before a number.
const std::unordered_set<std::u32string>& englishPrefixes() {
  static const std::unordered_set<std::u32string> set = {
      U"A",   U"B",     U"C",    U"D",    U"E",    U"F",    U"G",    U"H",    U"I",    U"J",      U"K",    U"L",
      U"M",   U"N",     U"O",    U"P",    U"Q",    U"R",    U"S",    U"T",    U"U",    U"V",      U"W",    U"X",
      U"Y",   U"Z",     U"Adj",  U"Adm",  U"Adv",  U"Asst", U"Bart", U"Bldg", U"Brig", U"Bros",   U"Capt", U"Cmdr",
      U"Col", U"Comdr", U"Con",  U"Corp", U"Cpl",  U"DR",   U"Dr",   U"Drs",  U"Ens",  U"Gen",    U"Gov",  U"Hon",
      U"Hr",  U"Hosp",  U"Insp", U"Lt",   U"MM",   U"MR",   U"MRS",  U"MS",   U"Maj",  U"Messrs", U"Mlle", U"Mme",
      U"Mr",  U"Mrs",   U"Ms",   U"Msgr", U"Op",   U"Ord",  U"Pfc",  U"Ph",   U"Prof", U"Pvt",    U"Rep",  U"Reps",
      U"Res", U"Rev",   U"Rt",   U"Sen",  U"Sens", U"Sfc",  U"Sgt",  U"Sr",   U"St",   U"Supt",   U"Surg", U"v",
      U"vs",  U"i.e",   U"rev",  U"e.g",  U"Rs",   U"Nos",  U"Nr",   U"Jan",  U"Feb",  U"Mar",    U"Apr",  U"Jun",
      U"Jul", U"Aug",   U"Sep",  U"Oct",  U"Nov",  U"Dec"};
  return set;
}
const std::unordered_set<std::u32string>& englishNumericOnlyPrefixes() {
  static const std::unordered_set<std::u32string> set = {U"No", U"Art", U"pp"};
  return set;
}

// MosesTokenizer.handles_nonbreaking_prefixes(): a token "<prefix>." is split
// into "<prefix> ." unless the prefix holds a period and a letter ("U.S."),
// is a non-breaking prefix, or the next token starts with a lower-case
// letter; a numeric-only prefix ("No.") keeps its period before a token that
// starts with an ASCII digit.
std::u32string nonbreakingPrefixes(const std::u32string& text, const std::string& lang) {
  static const std::unordered_set<std::u32string> none;
  const bool en = lang == "en";
  const auto& prefixes = en ? englishPrefixes() : none;
  const auto& numericOnly = en ? englishNumericOnlyPrefixes() : none;
  std::vector<std::u32string> tokens = split(text);
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    const std::u32string& token = tokens[i];
    if (token.size() < 2 || token.back() != U'.') continue;
    const std::u32string prefix = token.substr(0, token.size() - 1);
    const bool last = i + 1 == tokens.size();
    const bool dottedWord = prefix.find(U'.') != std::u32string::npos &&
                            std::any_of(prefix.begin(), prefix.end(), [](char32_t c) { return isAlpha(c); });
    if (dottedWord || (prefixes.contains(prefix) && !numericOnly.contains(prefix)) ||
        (!last && isLower(tokens[i + 1][0])))
      continue;
    if (numericOnly.contains(prefix) && !last && isAsciiDigitChar(tokens[i + 1][0])) continue;
    tokens[i] = prefix + U" .";
  }
  std::u32string out;
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    if (i) out.push_back(U' ');
    out += tokens[i];
  }
  return out;
}

// MosesTokenizer.replace_multidots(): runs of periods become DOTMULTI markers
// so that the later rules leave them whole; restore_multidots() undoes it.
std::u32string replaceMultidots(const std::u32string& text) {
  // REPLACE_DOT_WITH_LITERALSTRING_1: \.([\.]+) -> " DOTMULTI\1"
  std::u32string out;
  for (std::size_t i = 0; i < text.size();) {
    if (text[i] == U'.' && i + 1 < text.size() && text[i + 1] == U'.') {
      std::size_t e = i + 1;
      while (e < text.size() && text[e] == U'.') ++e;
      out += U" DOTMULTI";
      out.append(text, i + 1, e - i - 1);
      i = e;
    } else {
      out.push_back(text[i++]);
    }
  }
  // REPLACE_DOT_WITH_LITERALSTRING_2 and _3, while "DOTMULTI." remains.
  const std::vector<Elem> two = {lit(U"DOTMULTI."), cls(noneOf(oneOf(U".")))};
  const std::vector<Elem> three = {lit(U"DOTMULTI.")};
  while (out.find(U"DOTMULTI.") != std::u32string::npos) {
    out = sub(out, two, U"DOTDOTMULTI \\2");
    out = sub(out, three, U"DOTDOTMULTI");
  }
  return out;
}

std::u32string restoreMultidots(std::u32string text) {
  while (text.find(U"DOTDOTMULTI") != std::u32string::npos) text = replaceAll(text, U"DOTDOTMULTI", U"DOTMULTI.");
  return replaceAll(text, U"DOTMULTI", U".");
}

std::u32string protectedMarker(std::size_t i) {
  std::string digits = std::to_string(i);
  if (digits.size() < 3) digits.insert(0, 3 - digits.size(), '0');  // str(i).zfill(3)
  std::u32string out = U"THISISPROTECTED";
  for (char c : digits) out.push_back(char32_t(c));
  return out;
}

bool equalsIgnoringAsciiCase(std::u32string_view a, std::u32string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    char32_t x = a[i], y = b[i];
    if (x >= U'A' && x <= U'Z') x += 0x20;
    if (y >= U'A' && y <= U'Z') y += 0x20;
    if (x != y) return false;
  }
  return true;
}

}  // namespace

std::u32string mosesNormalizePunctuation(std::u32string_view input, const std::string& lang) {
  std::u32string t(input);
  const Pred punct = oneOf(U".!:?;,");
  // EXTRA_WHITESPACE
  t = replaceAll(t, U"\r", U"");
  t = replaceAll(t, U"(", U" (");
  t = replaceAll(t, U")", U") ");
  t = collapse(t, isBlank);
  t = sub(t, {lit(U") "), cls(punct)}, U")\\2");
  t = replaceAll(t, U"( ", U"(");
  t = replaceAll(t, U" )", U")");
  t = sub(t, {cls(isDigit), lit(U" %")}, U"\\1%");
  t = replaceAll(t, U" :", U":");
  t = replaceAll(t, U" ;", U";");
  // NORMALIZE_UNICODE_IF_NOT_PENN (added when penn=True, the default)
  t = replaceAll(t, U"`", U"'");
  t = replaceAll(t, U"''", U" \" ");
  // NORMALIZE_UNICODE
  t = replaceAll(t, U"\u201E", U"\"");   // „
  t = replaceAll(t, U"\u201C", U"\"");   // “
  t = replaceAll(t, U"\u201D", U"\"");   // ”
  t = replaceAll(t, U"\u2013", U"-");    // –
  t = replaceAll(t, U"\u2014", U" - ");  // —
  t = collapse(t, isBlank);
  t = replaceAll(t, U"\u00B4", U"'");                                                // ´
  t = sub(t, {cls(isAsciiLetter), lit(U"\u2018"), cls(isAsciiLetter)}, U"\\1'\\3");  // a‘b
  t = sub(t, {cls(isAsciiLetter), lit(U"\u2019"), cls(isAsciiLetter)}, U"\\1'\\3");  // a’b
  t = replaceAll(t, U"\u2018", U"'");                                                // ‘
  t = replaceAll(t, U"\u201A", U"'");                                                // ‚
  t = replaceAll(t, U"\u2019", U"'");                                                // ’
  t = replaceAll(t, U"''", U"\"");
  t = replaceAll(t, U"\u00B4\u00B4", U"\"");  // ´´ (never left by the rule above; kept for the order)
  t = replaceAll(t, U"\u2026", U"...");       // …
  // FRENCH_QUOTES
  t = replaceAll(t, U"\u00A0\u00AB\u00A0", U"\"");
  t = replaceAll(t, U"\u00AB\u00A0", U"\"");
  t = replaceAll(t, U"\u00AB", U"\"");
  t = replaceAll(t, U"\u00A0\u00BB\u00A0", U"\"");
  t = replaceAll(t, U"\u00A0\u00BB", U"\"");
  t = replaceAll(t, U"\u00BB", U"\"");
  // HANDLE_PSEUDO_SPACES
  t = replaceAll(t, U"\u00A0%", U"%");
  t = replaceAll(t, U"n\u00BA\u00A0", U"n\u00BA ");
  t = replaceAll(t, U"\u00A0:", U":");
  t = replaceAll(t, U"\u00A0\u00BAC", U" \u00BAC");
  t = replaceAll(t, U"\u00A0cm", U" cm");
  t = replaceAll(t, U"\u00A0?", U"?");
  t = replaceAll(t, U"\u00A0!", U"!");
  t = replaceAll(t, U"\u00A0;", U";");
  t = replaceAll(t, U",\u00A0", U", ");
  t = collapse(t, isBlank);
  // EN_QUOTATION_FOLLOWED_BY_COMMA / DE_ES_FR_QUOTATION_FOLLOWED_BY_COMMA
  if (lang == "en") {
    // "([,.]+) -> \1"
    std::u32string out;
    for (std::size_t i = 0; i < t.size();) {
      std::size_t e = i + 1;
      while (t[i] == U'"' && e < t.size() && (t[e] == U',' || t[e] == U'.')) ++e;
      if (t[i] == U'"' && e > i + 1) {
        out.append(t, i + 1, e - i - 1);
        out.push_back(U'"');
        i = e;
      } else {
        out.push_back(t[i++]);
      }
    }
    t = std::move(out);
  } else if (lang == "de" || lang == "es" || lang == "fr") {
    t = replaceAll(t, U",\"", U"\",");
    // (\.+)"(\s*[^<]) -> "\1\2: periods before a closing quote move after it, unless the quote ends the text.
    std::u32string out;
    for (std::size_t i = 0; i < t.size();) {
      std::size_t e = i;
      while (e < t.size() && t[e] == U'.') ++e;
      if (e > i && e < t.size() && t[e] == U'"') {
        std::size_t s = e + 1;
        while (s < t.size() && isSpace(t[s])) ++s;
        // \s* backtracks so that [^<] can take a space when nothing else follows.
        std::size_t end = std::u32string::npos;
        if (s < t.size() && t[s] != U'<') end = s + 1;
        else if (s > e + 1 && t[s - 1] != U'<') end = s;
        if (end != std::u32string::npos) {
          out.push_back(U'"');
          out.append(t, i, e - i);
          out.append(t, e + 1, end - e - 1);
          i = end;
          continue;
        }
      }
      if (e > i) {
        out.append(t, i, e - i);
        i = e;
      } else {
        out.push_back(t[i++]);
      }
    }
    t = std::move(out);
  }
  // DE_ES_CZ_CS_FR / OTHER: (\d)\u00A0(\d)
  const bool comma = lang == "de" || lang == "es" || lang == "cz" || lang == "cs" || lang == "fr";
  t = sub(t, {cls(isDigit), lit(U"\u00A0"), cls(isDigit)}, comma ? U"\\1,\\3" : U"\\1.\\3");
  return strip(t);
}

std::vector<std::u32string> mosesTokenize(std::u32string_view input, const std::string& lang,
                                          const std::vector<std::u32string>& protect) {
  // DEDUPLICATE_SPACE, ASCII_JUNK
  std::u32string t = collapse(std::u32string(input), isSpace);
  t.erase(std::remove_if(t.begin(), t.end(), [](char32_t c) { return c < 0x20; }), t.end());

  // protected_patterns: every match (each pattern in turn, case-insensitive) is
  // replaced by THISISPROTECTED<nnn> until the end.
  std::vector<std::u32string> protectedTokens;
  for (const std::u32string& p : protect) {
    if (p.empty()) continue;
    for (std::size_t i = 0; i + p.size() <= t.size();) {
      if (equalsIgnoringAsciiCase(std::u32string_view(t).substr(i, p.size()), p)) {
        protectedTokens.push_back(t.substr(i, p.size()));
        i += p.size();
      } else {
        ++i;
      }
    }
  }
  for (std::size_t i = 0; i < protectedTokens.size(); ++i) t = replaceAll(t, protectedTokens[i], protectedMarker(i));

  t = strip(t);
  // PAD_NOT_ISALNUM: ([^IsAlnum\s\.'\`\,\-]) -> " \1 "
  t = sub(t, {cls([](char32_t c) {
            return !isAlnum(c) && !isSpace(c) && c != U'.' && c != U'\'' && c != U'`' && c != U',' && c != U'-';
          })},
          U" \\1 ");
  // AGGRESSIVE_HYPHEN_SPLIT: ([IsAlnum])\-(?=[IsAlnum]) -> "\1 @-@ "
  t = sub(t, {cls(isAlnum), lit(U"-"), ahead(isAlnum)}, U"\\1 @-@ ");
  t = replaceMultidots(t);
  // COMMA_SEPARATE_1..3: a comma is split off unless it stands between numbers.
  t = sub(t, {cls(noneOf(isNumber)), lit(U",")}, U"\\1 , ");
  t = sub(t, {lit(U","), cls(noneOf(isNumber))}, U" , \\2");
  t = sub(t, {cls(isNumber), lit(U","), atEnd()}, U"\\1 , ");
  // Apostrophes.
  const Pred notAlpha = noneOf(isAlpha);
  if (lang == "en") {
    // ENGLISH_SPECIFIC_APOSTROPHE 1..5: "don't" -> "don 't", "dogs'" -> "dogs '", "1990's" -> "1990 's".
    t = sub(t, {cls(notAlpha), lit(U"'"), cls(notAlpha)}, U"\\1 ' \\3");
    t = sub(t, {cls([](char32_t c) { return !isAlpha(c) && !isNumber(c); }), lit(U"'"), cls(isAlpha)}, U"\\1 ' \\3");
    t = sub(t, {cls(isAlpha), lit(U"'"), cls(notAlpha)}, U"\\1 ' \\3");
    t = sub(t, {cls(isAlpha), lit(U"'"), cls(isAlpha)}, U"\\1 '\\3");
    t = sub(t, {cls(isNumber), lit(U"'"), cls(oneOf(U"s"))}, U"\\1 '\\3");
  } else if (lang == "fr" || lang == "it") {
    // FR_IT_SPECIFIC_APOSTROPHE 1..4: "l'homme" -> "l' homme".
    t = sub(t, {cls(notAlpha), lit(U"'"), cls(notAlpha)}, U"\\1 ' \\3");
    t = sub(t, {cls(notAlpha), lit(U"'"), cls(isAlpha)}, U"\\1 ' \\3");
    t = sub(t, {cls(isAlpha), lit(U"'"), cls(notAlpha)}, U"\\1 ' \\3");
    t = sub(t, {cls(isAlpha), lit(U"'"), cls(isAlpha)}, U"\\1' \\3");
  } else {
    t = replaceAll(t, U"'", U" ' ");  // NON_SPECIFIC_APOSTROPHE
  }
  t = nonbreakingPrefixes(t, lang);
  t = strip(collapse(t, isSpace));  // DEDUPLICATE_SPACE, strip
  // TRAILING_DOT_APOSTROPHE: \.' ?$ -> " . ' " (the text is stripped: no space can follow)
  if (t.size() >= 2 && t.compare(t.size() - 2, 2, U".'") == 0) t.replace(t.size() - 2, 2, U" . ' ");
  for (std::size_t i = 0; i < protectedTokens.size(); ++i) t = replaceAll(t, protectedMarker(i), protectedTokens[i]);
  t = restoreMultidots(t);
  return split(t);
}

}  // namespace txl::frontend
