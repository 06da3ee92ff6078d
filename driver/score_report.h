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
  std::int64_t unknown = 0;       // words scored as <unk>
  bool fromIds = false;           // token ids, not text
};

// `text` encoded with the model's vocabulary (txl::Error naming `source`
// when it has none, holds a symbol outside it, or is empty).
ScoreInput scoreInputFromText(const Model& m, std::string_view text, const std::string& source);
// The file `path` ("-": stdin) as text, or with `ids` as token ids in [0, n_token).
ScoreInput scoreInputFromFile(const Model& m, const std::string& path, bool ids);

// The figures of `txlc score --json` (without per_token_nll).
nlohmann::json scoreReport(const Model& m, const Setting& s, const ScoreInput& in, const ScoreResult& r,
                           double seconds);

}  // namespace txl::driver
