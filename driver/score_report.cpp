// driver/score_report.cpp - scoreInputFromText(), scoreInputFromFile(), scoreReport().
#include "driver/score_report.h"

#include <cmath>

#include "driver/text_source.h"
#include "ir/check.h"

namespace txl::driver {

namespace {
void checkNotEmpty(const ScoreInput& in) {
  if (in.ids.empty()) throw Error(in.source + ": empty input, expected text to score");
}
}  // namespace

ScoreInput scoreInputFromText(const Model& m, std::string_view text, const std::string& source) {
  const frontend::Vocabulary& vocab = requireVocabulary(m, "score (or pass --ids for a file of token ids)");
  ScoreInput in;
  in.source = source;
  in.ids = vocab.encode(text, source);
  in.unknown = vocab.countUnknown(text);
  if (vocab.kind() == frontend::VocabKind::Char) in.characters = std::int64_t(in.ids.size());
  checkNotEmpty(in);
  return in;
}

ScoreInput scoreInputFromFile(const Model& m, const std::string& path, bool ids) {
  if (!ids) return scoreInputFromText(m, readTextFile(path), path);
  ScoreInput in;
  in.source = path;
  in.ids = readTokenIds(path, m.spec.n_token);
  in.fromIds = true;
  checkNotEmpty(in);
  return in;
}

nlohmann::json scoreReport(const Model& m, const Setting& s, const ScoreInput& in, const ScoreResult& r,
                           double seconds) {
  const double perToken = r.nllSum / double(r.scored);
  const double bitsPerToken = perToken / std::log(2.0);
  nlohmann::json j = {{"file", in.source},
                      {"tokens", r.scored},
                      {"nll_sum", r.nllSum},
                      {"nll_per_token", perToken},
                      {"perplexity", std::exp(perToken)},
                      {"bits_per_token", bitsPerToken},
                      {"batch", r.batch},
                      {"qlen", s.qlen},
                      {"mem_len", s.memLen},
                      {"clamp_len", s.clampLen},
                      {"same_length", s.sameLength},
                      {"semantics", frontend::semanticsName(m.spec.semantics)},
                      {"initial_memory", frontend::initialMemoryName(s.initialMemory)},
                      {"precision", precisionName(s.precision)},
                      {"dropped", r.dropped},
                      {"segments", r.segments},
                      {"seconds", seconds}};
  if (in.characters >= 0) j["bits_per_char"] = bitsPerToken;  // one token per character
  return j;
}

}  // namespace txl::driver
