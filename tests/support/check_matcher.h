// tests/support/check_matcher.h - a small FileCheck: match CHECK lines against text.
//
// Directives, one per line, in the check text (usually `// CHECK: ...` comments):
//   CHECK: pat       a later line contains pat
//   CHECK-NEXT: pat  the line right after the previous match contains pat
//   CHECK-NOT: pat   no line between the previous match and the next CHECK
//                    (or the end) contains pat
// In a pattern, {{regex}} matches a regular expression; the rest is literal.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace txl::testing {

struct CheckDirective {
  enum class Kind { Check, Next, Not } kind;
  std::string pattern;
  int line = 0;  // in the check file
};

// Extracts the directives from `checkText` (any prefix before "CHECK" is ignored).
std::vector<CheckDirective> parseCheckDirectives(const std::string& checkText);

// nullopt when `output` satisfies every directive; otherwise a message saying
// which directive failed, where, and what the output held there.
std::optional<std::string> matchChecks(const std::vector<CheckDirective>& checks, const std::string& output);

}  // namespace txl::testing
