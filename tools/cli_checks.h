// tools/cli_checks.h - CLI11 validators with txlc's one-line messages, and
// helpers the model-running commands share.
//
// A validator failing is a usage error (exit 2): "--qlen: expected a positive
// integer, got '0'".
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <vector>

namespace txl::tools {

// An integer in [min, max]; `what` describes it ("a positive integer").
CLI::Validator integerIn(std::int64_t min, std::int64_t max, const std::string& what);
inline CLI::Validator positiveInt() { return integerIn(1, std::int64_t(1) << 40, "a positive integer"); }
inline CLI::Validator nonNegativeInt() { return integerIn(0, std::int64_t(1) << 40, "a non-negative integer"); }
// --batch, --qlen, --mem-len, --clamp-len: the bounds checkSetting() applies
// (driver::kMaxBatch, driver::kMaxLength, docs/ERRORS.md "Limits"), worded as
// it words them, so that a value is refused the same way wherever it is checked.
CLI::Validator batchCheck();
CLI::Validator qlenCheck();
CLI::Validator memLenCheck();
CLI::Validator clampLenCheck();
// --threads: 0 (OpenMP's default) or a count up to the bound txlc accepts.
inline CLI::Validator threadCountCheck() { return integerIn(0, 4096, "a thread count in [0, 4096]"); }
// A path: any string but the empty one (which names no file).
CLI::Validator nonEmptyPath();
// One of `values`; `what` lists them ("'onednn' or 'reference'").
CLI::Validator oneOf(std::vector<std::string> values, const std::string& what);
// A real number in [min, max] (open at min when `openMin`).
CLI::Validator realIn(double min, double max, bool openMin, const std::string& what);

// The name among `candidates` nearest to `word` by edit distance (at most 2,
// and less than half the word), or "" when none is that close.
std::string closestName(const std::string& word, const std::vector<std::string>& candidates);
// When argv[first..argc) names a flag `cmd` does not take: the message
// "unknown flag '--qlne' for 'score'; did you mean --qlen?" (the suggestion
// when one is close), else "". Checked before CLI11's own errors, so that a
// misspelled required flag is named rather than reported missing.
std::string unknownFlagMessage(const CLI::App& cmd, int first, int argc, char** argv);

// Adds the MODEL positional unless the executable carries its model.
void addModelArgument(CLI::App& cmd, std::string& model, const std::string& help);

// True when stderr is a terminal (progress lines are shown only then).
bool stderrIsTerminal();

}  // namespace txl::tools
