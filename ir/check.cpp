// ir/check.cpp - the failure path of TXL_CHECK, and oneLine().
#include "ir/check.h"

namespace txl {

std::string oneLine(const std::string& s) {
  static const char* const hex = "0123456789abcdef";
  std::string out;
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else if (c == '\r') out += "\\r";
    else if (u < 0x20 || u == 0x7f) out += std::string("\\x") + hex[u >> 4] + hex[u & 15];
    else out += c;
  }
  return out;
}

void failCheck(const char* file, int line, const char* cond, const std::string& message) {
  throw InternalError(std::string("internal error at ") + file + ":" + std::to_string(line) + ": " + cond +
                      (message.empty() ? "" : " (" + message + ")"));
}

}  // namespace txl
