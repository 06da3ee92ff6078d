// ir/check.cpp - the failure path of TXL_CHECK, oneLine() and quote().
#include "ir/check.h"

#include <algorithm>

namespace txl {

namespace {
// "ir/graph.cpp" from ".../src/ir/graph.cpp": the path below the source root.
std::string sourceName(const char* file) {
  std::string_view f = file;
  for (std::string_view dir :
       {"/ir/", "/frontend/", "/passes/", "/backend/", "/driver/", "/tools/", "/tests/", "/fuzz/"})
    if (auto at = f.rfind(dir); at != std::string_view::npos) return std::string(f.substr(at + 1));
  auto slash = f.rfind('/');
  return std::string(slash == std::string_view::npos ? f : f.substr(slash + 1));
}
}  // namespace

std::string oneLine(const std::string& s) {
  static const char* const hex = "0123456789abcdef";
  std::string out;
  for (char c : s) {
    if (out.size() >= kMaxLine) {
      std::size_t cut = kMaxLine;
      while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xC0) == 0x80) --cut;  // not inside a UTF-8 character
      out.resize(cut);
      return out + "\u2026 (" + std::to_string(s.size()) + " bytes)";
    }
    const auto u = static_cast<unsigned char>(c);
    if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else if (c == '\r') out += "\\r";
    else if (u < 0x20 || u == 0x7f) out += std::string("\\x") + hex[u >> 4] + hex[u & 15];
    else out += c;
  }
  return out;
}

namespace {

// The first kMaxQuoted bytes of `s`, ending at a UTF-8 character boundary.
std::string_view quotedPrefix(std::string_view s) {
  std::size_t cut = std::min(s.size(), kMaxQuoted);
  while (cut < s.size() && cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xc0) == 0x80) --cut;
  return s.substr(0, cut);
}

}  // namespace

std::string clip(std::string_view s) {
  const std::string_view shown = quotedPrefix(s);
  if (shown.size() == s.size()) return std::string(s);
  return std::string(shown) + "... (" + std::to_string(s.size()) + " bytes)";
}

std::string quote(std::string_view s) {
  static const char* const hex = "0123456789abcdef";
  const std::string_view shown = quotedPrefix(s);
  std::string out = "\"";
  for (char c : shown) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else if (c == '\r') out += "\\r";
    else if (c == '"') out += "\\\"";
    else if (c == '\\') out += "\\\\";
    else if (u < 0x20 || u == 0x7f) out += std::string("\\x") + hex[u >> 4] + hex[u & 15];
    else out += c;
  }
  out += '"';
  if (shown.size() < s.size()) out.insert(out.size() - 1, "...").append(" (" + std::to_string(s.size()) + " bytes)");
  return out;
}

// Only the file name of a txlc source: an internal error line never shows
// the build tree.
void failCheck(const char* file, int line, const char* cond, const std::string& message) {
  throw InternalError(std::string("internal error at ") + sourceName(file) + ":" + std::to_string(line) + ": " + cond +
                      (message.empty() ? "" : " (" + message + ")"));
}

}  // namespace txl
