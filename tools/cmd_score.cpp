// tools/cmd_score.cpp - `txlc score MODEL_OR_ARTIFACT FILE`: NLL, perplexity, bits per token.
//
// Streams the tokens of FILE through segments with the recurrent memory, as
// the reference's eval.py scores a split (driver/scorer.h), and prints the
// totals; --json gives stable keys (docs/CLI.md).
#include <chrono>
#include <cmath>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "ir/check.h"
#include "tools/cli_checks.h"
#include "tools/exit_codes.h"
#include "tools/model_flags.h"
#include "driver/compile.h"
#include "driver/score_report.h"
#include "driver/scorer.h"

namespace txl::tools {

namespace {

struct Options {
  ModelFlags model;
  std::string file;
  bool ids = false;
  bool json = false;
  bool perToken = false;
};

// "\n" -> "\\n" so that a per-token line stays one line.
std::string printable(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else out += c;
  }
  return out;
}

int run(const Options& o) {
  Model m = o.model.open();
  Setting setting = o.model.setting(m);

  const ScoreInput in = scoreInputFromFile(m, o.file, o.ids);
  const std::vector<std::int64_t>& ids = in.ids;
  checkScoreLength(std::int64_t(ids.size()), setting.batch, o.file);

  auto compiled = compile(m, setting);
  backend::Session session(compiled);
  noteReplanning(m, setting);
  ScoreOptions so;
  so.qlen = setting.qlen;
  so.perToken = o.perToken;
  const bool progress = stderrIsTerminal();
  const auto start = std::chrono::steady_clock::now();
  auto last = start;
  if (progress)
    so.progress = [&](std::int64_t done, std::int64_t total) {
      auto now = std::chrono::steady_clock::now();
      if (done != total && now - last < std::chrono::milliseconds(200)) return;
      last = now;
      double secs = std::chrono::duration<double>(now - start).count();
      std::cerr << "\rtxlc: score: " << done << "/" << total << " tokens, " << std::fixed << std::setprecision(0)
                << (secs > 0 ? double(done) / secs : 0.0) << " tokens/s   " << std::defaultfloat << std::flush;
    };
  ScoreResult r = scoreTokens(session, ids, so, o.file);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (progress) std::cerr << "\r\033[K" << std::flush;
  if (r.dropped > 0)
    std::cerr << "txlc: note: --batch " << r.batch << " cuts " << ids.size() << " tokens into " << r.batch
              << " streams of " << r.streamLength << "; dropped the last " << r.dropped << " tokens" << std::endl;
  if (in.unknown > 0)
    std::cerr << "txlc: note: " << in.unknown << " words of " << o.file
              << " are not in the vocabulary (scored as <unk>)" << std::endl;

  nlohmann::json j = scoreReport(m, setting, in, r, seconds);
  const double perToken = j["nll_per_token"].get<double>(), bitsPerToken = j["bits_per_token"].get<double>();
  const bool characters = j.contains("bits_per_char");
  if (o.json) {
    if (o.perToken) j["per_token_nll"] = r.perToken;
    std::cout << j.dump(2) << std::endl;
    return kExitOk;
  }
  if (o.perToken) {
    // stream, position (of the predicted token in its stream), token, nll
    const frontend::Vocabulary* vocab = m.vocabulary && !o.ids ? &*m.vocabulary : nullptr;
    std::ostringstream out;
    out << std::setprecision(6);
    for (std::int64_t b = 0; b < r.batch; ++b)
      for (std::int64_t t = 1; t < r.streamLength; ++t) {
        std::int64_t id = ids[std::size_t(b * r.streamLength + t)];
        out << b << '\t' << t << '\t' << (vocab ? printable(vocab->symbol(id)) : std::to_string(id)) << '\t'
            << r.perToken[std::size_t(b * (r.streamLength - 1) + t - 1)] << '\n';
      }
    std::cout << out.str();
  }
  std::cout << std::setprecision(10) << "tokens " << r.scored << "\nnll_sum " << r.nllSum << "\nperplexity "
            << std::exp(perToken) << "\nbits_per_token " << bitsPerToken << "\n";
  if (characters) std::cout << "bits_per_char " << bitsPerToken << "\n";
  std::cout << std::flush;
  return kExitOk;
}

}  // namespace

void registerScore(CLI::App& app, Action& action) {
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("score", "score a text file: total NLL, perplexity, bits per token / character");
  o->model.add(*cmd);
  cmd->add_option("file", o->file, "the text to score (or token ids with --ids)")->required();
  cmd->add_flag("--ids", o->ids, "FILE holds token ids (whitespace-separated integers), not text");
  cmd->add_flag("--json", o->json, "machine-readable result on stdout");
  cmd->add_flag("--per-token", o->perToken, "also the NLL of every predicted token");
  cmd->callback([o, &action] { action = [o] { return run(*o); }; });
}

}  // namespace txl::tools
