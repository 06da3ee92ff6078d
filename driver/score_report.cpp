// driver/score_report.cpp - scoreInputFromText(), scoreInputFromFile(), scoreReport().
#include "driver/score_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iomanip>
#include <new>
#include <sstream>

#include "driver/text_source.h"
#include "frontend/file_form.h"
#include "ir/check.h"

namespace txl::driver {

namespace {
void checkNotEmpty(const ScoreInput& in) {
  if (in.ids.empty()) throw Error(in.source + ": empty input, expected text to score");
}
bool hasSymbol(const frontend::Vocabulary& vocab, std::string_view symbol) {
  return std::find(vocab.symbols().begin(), vocab.symbols().end(), symbol) != vocab.symbols().end();
}

std::string lineOf(std::string_view text, std::size_t pos) {
  return std::to_string(1 + std::count(text.begin(), text.begin() + std::ptrdiff_t(pos), '\n'));
}

// What is refused before encoding (scoreInputFromText).
void checkText(const frontend::Vocabulary& vocab, std::string_view text, const std::string& source) {
  if (const std::string named = frontend::notTextMessage(source, text); !named.empty()) throw Error(named);
  if (const std::size_t nul = text.find('\0'); nul != std::string_view::npos)
    throw Error(source + ": byte " + std::to_string(nul) +
                ": a NUL byte; expected text, this is a binary file (token ids go with --ids)");
  constexpr std::string_view kBom = "\xEF\xBB\xBF";
  if (text.substr(0, 3) == kBom) {
    bool known = hasSymbol(vocab, kBom);
    if (!known && vocab.kind() == frontend::VocabKind::Word) {
      const std::size_t end = text.find_first_of(" \t\r\n\v\f");
      known = hasSymbol(vocab, text.substr(0, end));
    }
    if (!known)
      throw Error(source +
                  ": byte 0: a UTF-8 byte-order mark (EF BB BF), which the model's vocabulary has no symbol "
                  "for; strip it first (sed -i '1s/^\\xEF\\xBB\\xBF//' FILE)");
  }
  if (vocab.kind() == frontend::VocabKind::Char && !hasSymbol(vocab, "\r"))
    if (const std::size_t cr = text.find('\r'); cr != std::string_view::npos)
      throw Error(source + ": line " + lineOf(text, cr) + " (byte " + std::to_string(cr) +
                  "): a carriage return ('\\r', CRLF line ends), which the model's vocabulary has no symbol for; "
                  "convert the line ends first (dos2unix FILE)");
}
}  // namespace

ScoreInput scoreInputFromText(const Model& m, std::string_view text, const std::string& source) {
  const frontend::Vocabulary& vocab = requireVocabulary(m, "score (or pass --ids for a file of token ids)");
  checkText(vocab, text, source);
  ScoreInput in;
  in.source = source;
  in.ids = vocab.encode(text, source);
  in.unknown = vocab.countUnknown(text);
  if (vocab.kind() == frontend::VocabKind::Char) in.characters = std::int64_t(in.ids.size());
  checkNotEmpty(in);
  return in;
}

namespace {
ScoreInput readScoreInput(const Model& m, const std::string& path, bool ids) {
  if (!ids) return scoreInputFromText(m, readTextFile(path), path);
  ScoreInput in;
  in.source = path;
  in.ids = readTokenIds(path, m.spec.n_token);
  in.fromIds = true;
  checkNotEmpty(in);
  if (m.vocabulary && m.vocabulary->unkId() >= 0)
    in.unknown = std::count(in.ids.begin(), in.ids.end(), m.vocabulary->unkId());
  return in;
}
}  // namespace

ScoreInput scoreInputFromFile(const Model& m, const std::string& path, bool ids) {
  try {
    return readScoreInput(m, path, ids);
  } catch (const std::bad_alloc&) {
    // Under a memory limit the text and its token ids (8 bytes each) are what grew.
    throw Error(path + ": out of memory reading it and its token ids (8 bytes per token)");
  }
}

double unknownFraction(const ScoreInput& in) {
  return in.ids.empty() ? 0.0 : double(in.unknown) / double(in.ids.size());
}

void checkUnknownFraction(const ScoreInput& in, double max) {
  const double f = unknownFraction(in);
  if (f > max) {
    char buf[160];
    std::snprintf(buf, sizeof buf, ": %.2f %% of the tokens are <unk> (%lld of %zu), above --max-unk-fraction %g",
                  100 * f, static_cast<long long>(in.unknown), in.ids.size(), max);
    throw Error(in.source + buf + "; not text of this model's vocabulary (or raise the limit)");
  }
}

nlohmann::json scoreReport(const Model& m, const Setting& s, const ScoreInput& in, const ScoreResult& r,
                           double seconds) {
  const double perToken = r.scored > 0 ? r.nllSum / double(r.scored) : 0.0;
  const double bitsPerToken = perToken / std::log(2.0);
  const double stderrNll = nllStandardError(r.nllSum, r.nllSquares, r.scored);
  nlohmann::json j = {{"file", in.source},
                      {"tokens", r.scored},
                      {"nll_sum", r.nllSum},
                      {"nll_per_token", perToken},
                      {"perplexity", std::exp(perToken)},
                      {"nll_stderr", stderrNll},
                      {"perplexity_stderr", std::exp(perToken) * stderrNll},
                      {"bits_per_token", bitsPerToken},
                      {"unk_tokens", in.unknown},
                      {"unk_fraction", unknownFraction(in)},
                      {"interrupted", r.interrupted},
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

std::string scoreNotes(const ScoreInput& in, const ScoreResult& r, const std::string& file) {
  std::ostringstream out;
  if (r.dropped > 0)
    out << "txlc: note: --batch " << r.batch << " cuts " << in.ids.size() << " tokens into " << r.batch
        << " streams of " << r.streamLength << "; dropped the last " << r.dropped << " tokens\n";
  if (in.unknown > 0) {
    const double unk = unknownFraction(in);
    out << "txlc: " << (unk > 0.01 ? "warning" : "note") << ": " << in.unknown << " tokens of " << file << " ("
        << std::fixed << std::setprecision(2) << 100 * unk << std::defaultfloat
        << " %) are not in the vocabulary (scored as <unk>)"
        << (unk > 0.01 ? "; the perplexity of <unk> is not the text's" : "") << "\n";
  }
  return out.str();
}

}  // namespace txl::driver
