// tests/support/check_matcher.cpp - matchChecks().
#include "tests/support/check_matcher.h"

#include <regex>
#include <sstream>

namespace txl::testing {

namespace {

std::vector<std::string> splitLines(const std::string& text) {
  std::vector<std::string> lines;
  std::stringstream in(text);
  std::string line;
  while (std::getline(in, line)) lines.push_back(line);
  return lines;
}

std::regex compile(const std::string& pattern) {
  std::string re;
  std::size_t pos = 0;
  while (pos < pattern.size()) {
    std::size_t open = pattern.find("{{", pos);
    std::size_t literalEnd = open == std::string::npos ? pattern.size() : open;
    for (std::size_t i = pos; i < literalEnd; ++i) {
      char c = pattern[i];
      if (std::string("\\^$.|?*+()[]{}").find(c) != std::string::npos) re += '\\';
      re += c;
    }
    if (open == std::string::npos) break;
    std::size_t close = pattern.find("}}", open + 2);
    if (close == std::string::npos) close = pattern.size();
    re += "(?:" + pattern.substr(open + 2, close - open - 2) + ")";
    pos = close + 2;
  }
  return std::regex(re);
}

bool contains(const std::string& line, const std::regex& re) { return std::regex_search(line, re); }

}  // namespace

std::vector<CheckDirective> parseCheckDirectives(const std::string& checkText) {
  std::vector<CheckDirective> out;
  auto lines = splitLines(checkText);
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::string& line = lines[i];
    struct Prefix {
      const char* text;
      CheckDirective::Kind kind;
    };
    for (auto p : {Prefix{"CHECK-NEXT:", CheckDirective::Kind::Next}, Prefix{"CHECK-NOT:", CheckDirective::Kind::Not},
                   Prefix{"CHECK:", CheckDirective::Kind::Check}}) {
      std::size_t at = line.find(p.text);
      if (at == std::string::npos) continue;
      std::string pattern = line.substr(at + std::string(p.text).size());
      std::size_t first = pattern.find_first_not_of(' ');
      pattern = first == std::string::npos ? "" : pattern.substr(first);
      while (!pattern.empty() && pattern.back() == ' ') pattern.pop_back();
      out.push_back({p.kind, pattern, int(i + 1)});
      break;
    }
  }
  return out;
}

std::optional<std::string> matchChecks(const std::vector<CheckDirective>& checks, const std::string& output) {
  auto lines = splitLines(output);
  std::size_t next = 0;  // first line a CHECK may match
  std::optional<std::size_t> lastMatch;
  std::vector<const CheckDirective*> pendingNots;
  auto where = [](const CheckDirective& c) { return "check line " + std::to_string(c.line) + " '" + c.pattern + "'"; };
  auto failNot = [&](std::size_t from, std::size_t to) -> std::optional<std::string> {
    for (const auto* n : pendingNots) {
      std::regex re = compile(n->pattern);
      for (std::size_t i = from; i < to && i < lines.size(); ++i)
        if (contains(lines[i], re))
          return "CHECK-NOT failed: " + where(*n) + " matched output line " + std::to_string(i + 1) + ": " + lines[i];
    }
    pendingNots.clear();
    return std::nullopt;
  };
  for (const auto& c : checks) {
    std::regex re = compile(c.pattern);
    switch (c.kind) {
      case CheckDirective::Kind::Not:
        pendingNots.push_back(&c);
        break;
      case CheckDirective::Kind::Next: {
        std::size_t line = lastMatch ? *lastMatch + 1 : 0;
        if (line >= lines.size() || !contains(lines[line], re))
          return "CHECK-NEXT failed: " + where(c) + " does not match output line " + std::to_string(line + 1) + ": " +
                 (line < lines.size() ? lines[line] : "<end of output>");
        if (auto e = failNot(next, line)) return e;
        lastMatch = line;
        next = line + 1;
        break;
      }
      case CheckDirective::Kind::Check: {
        std::size_t line = next;
        while (line < lines.size() && !contains(lines[line], re)) ++line;
        if (line >= lines.size())
          return "CHECK failed: " + where(c) + " not found after output line " + std::to_string(next);
        if (auto e = failNot(next, line)) return e;
        lastMatch = line;
        next = line + 1;
        break;
      }
    }
  }
  if (auto e = failNot(next, lines.size())) return e;
  return std::nullopt;
}

}  // namespace txl::testing
