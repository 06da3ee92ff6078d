// ir/check.h - internal invariants and the user-facing error type.
//
// TXL_CHECK is for invariants of txlc itself (a broken one is a txlc bug); it
// throws InternalError naming file and line. Anything a user can get wrong
// (spec, weights, tokens, flags) is reported with txl::Error: one line naming
// the file, the place, what was expected and what was found.
#pragma once

#include <stdexcept>
#include <cstddef>
#include <string>
#include <string_view>

namespace txl {

// A problem with user input. what() is one line, ready to print.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

// Choices (flags, keywords) that contradict each other: the user's mistake,
// found before anything runs (the command line exits 2, as for a bad flag).
class UsageError : public Error {
 public:
  explicit UsageError(const std::string& message) : Error(message) {}
};

// A broken internal invariant: a bug in txlc.
class InternalError : public std::logic_error {
 public:
  explicit InternalError(const std::string& message) : std::logic_error(message) {}
};

// `s` with control characters escaped (\n, \t, \r, \xNN), so that a
// message stays one line whatever it quotes (a file name may hold a newline),
// and at most kMaxLine bytes: a longer one is cut (at a character boundary)
// with the full length noted, `… (5000123 bytes)`. Every error and warning
// line passes through it, so no input makes one unbounded.
inline constexpr std::size_t kMaxLine = 2000;
std::string oneLine(const std::string& s);

// The most txlc quotes of any text that comes from a file or a flag.
inline constexpr std::size_t kMaxQuoted = 200;

// `s` in double quotes, escaped like oneLine() (NUL and every control byte,
// and `"` and `\`), cut to its first kMaxQuoted bytes with the full length
// noted: `"abc…" (5000000 bytes)`. The one way an error line quotes text it
// did not write itself (a tensor name, a key, a token, a model id).
std::string quote(std::string_view s);

// `s` cut like quote() but neither quoted nor escaped (oneLine() escapes the
// whole line): for text that is part of a path or a JSON pointer.
std::string clip(std::string_view s);

[[noreturn]] void failCheck(const char* file, int line, const char* cond, const std::string& message);

}  // namespace txl

#define TXL_CHECK(cond, message)                                         \
  do {                                                                   \
    if (!(cond)) ::txl::failCheck(__FILE__, __LINE__, #cond, (message)); \
  } while (0)
