// driver/score_report.h - what `txlc score` reads and reports: a text (or token ids) in, the figures out.
//
// The text is encoded with the model's vocabulary (every character or word
// one token; a word not in a word vocabulary counts as <unk> and is noted),
// or read as whitespace-separated token ids. The report has the stable keys
// of `txlc score --json` (docs/CLI.md): tokens, nll_sum, nll_per_token,
// perplexity, bits_per_token (and bits_per_char for a character
// vocabulary), the setting, dropped, segments and seconds.
//
//   ScoreInput in = scoreInputFromFile(m, "valid.txt", /*ids=*/false);
//   ScoreResult r = scoreTokens(session, in.ids, {.qlen = s.qlen}, in.source);
//   nlohmann::json j = scoreReport(m, s, in, r, seconds);
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "driver/model.h"
#include "driver/scorer.h"
#include "driver/setting.h"

namespace txl::driver {

struct ScoreInput {
  std::string source;             // the file as named, or what names an in-memory text
  std::vector<std::int64_t> ids;  // at least one
  std::int64_t characters = -1;   // a character vocabulary's text: its characters (bits per character)
  std::int64_t unknown = 0;       // tokens scored as <unk>: unknown words (or <unk> ids)
  bool fromIds = false;           // token ids, not text
};

// `text` encoded with the model's vocabulary (txl::Error naming `source`
// when it has none, holds a symbol outside it, or is empty). Refused first,
// each with one line naming the place: a NUL byte (a binary file); a UTF-8
// byte-order mark the vocabulary has no symbol for (strip it); a '\r' (CRLF
// line ends) in a text for a character vocabulary without '\r' (dos2unix).
// A word vocabulary reads '\r' as a blank, so CRLF text scores as LF text.
ScoreInput scoreInputFromText(const Model& m, std::string_view text, const std::string& source);
// The file `path` ("-": stdin) as text, or with `ids` as token ids in [0, n_token).
ScoreInput scoreInputFromFile(const Model& m, const std::string& path, bool ids);

// The share of the input's tokens scored as <unk> (0 without a <unk>).
double unknownFraction(const ScoreInput& in);
// txl::Error naming the file and the fraction when it is above `max`.
void checkUnknownFraction(const ScoreInput& in, double max);

// The figures of `txlc score --json` (without per_token_nll), with the
// standard error of the mean per-token NLL (nll_stderr, over every predicted
// token of every stream, driver::nllStandardError) and perplexity_stderr
// (perplexity * nll_stderr); r.interrupted: the figures of the tokens scored.
// The notes a score gives on stderr (each line "txlc: note: ..." or
// "txlc: warning: ...", ending in a line break; "" for none): the tokens the
// cut into streams dropped, the tokens scored as <unk> of `file`.
std::string scoreNotes(const ScoreInput& in, const ScoreResult& r, const std::string& file);

nlohmann::json scoreReport(const Model& m, const Setting& s, const ScoreInput& in, const ScoreResult& r,
                           double seconds);

}  // namespace txl::driver
