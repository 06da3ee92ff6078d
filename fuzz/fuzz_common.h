// fuzz/fuzz_common.h - what every txlc fuzz target shares.
//
// A target feeds the bytes to one reader of untrusted input. The reader may
// refuse them with txl::Error (a one-line message: the expected outcome for
// most inputs); anything else escaping - InternalError, a nlohmann or
// standard-library exception, a sanitizer report, a hang - is a finding.
// Each message is also checked to be one line, as docs/ERRORS.md promises.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "ir/check.h"

namespace txl::fuzz {

// Aborts (a libFuzzer finding) when a user-facing message is not one line.
inline void requireOneLine(const txl::Error& e) {
  const std::string message = e.what();
  if (message.empty() || message.find('\n') != std::string::npos) {
    std::fprintf(stderr, "fuzz: error message is not one non-empty line: \"%s\"\n", message.c_str());
    std::abort();
  }
}

// Aborts when an invariant the target checks does not hold.
inline void require(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "fuzz: %s\n", what);
    std::abort();
  }
}

}  // namespace txl::fuzz
