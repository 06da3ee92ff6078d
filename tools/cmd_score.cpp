// tools/cmd_score.cpp - `txlc score MODEL_OR_ARTIFACT FILE` and `txlc score MODEL --documents FILE`.
//
// The flags, the progress lines and the printing of the score job
// (driver/score_job.h: a text's totals, or one JSON line per document, in
// one process or split under mpirun, docs/SCALE.md; `--documents -`: the
// documents as they arrive on stdin, driver/document_stream.h); docs/CLI.md.
#include <cmath>
#include <csignal>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "driver/document_stream.h"
#include "driver/score_job.h"
#include "frontend/atomic_file.h"
#include "ir/check.h"
#include "tools/cli_checks.h"
#include "tools/error_exit.h"
#include "tools/exit_codes.h"
#include "tools/model_flags.h"
#include "tools/progress.h"

namespace txl::tools {

namespace {

struct Options {
  ModelFlags model;
  std::string file;
  bool ids = false, json = false, perToken = false, resume = false, strict = false;
  std::string documents, output, summary, documentsFormat = "auto";
  std::int64_t maxTokens = std::int64_t(1) << 20;
  double rankTimeout = 120, maxUnkFraction = 0.10;
  bool progress = false, noProgress = false;  // neither: a running estimate when stderr is a terminal
  bool showProgress() const { return tools::showProgress(progress, noProgress); }
};

// "\n" -> "\\n" so that a per-token line stays one line.
std::string printable(const std::string& s) {
  std::string out;
  for (char c : s) out += c == '\n' ? "\\n" : c == '\t' ? "\\t" : std::string(1, c);
  return out;
}

const char* signalName(int signal) { return signal == SIGINT ? "SIGINT" : "SIGTERM"; }

int runText(const Options& o, driver::Processes& procs, driver::SplitPhase& phase) {
  driver::Model m = o.model.open();
  const driver::Setting setting = o.model.setting(m);
  driver::TextJob job{o.file, o.ids, o.perToken, o.maxUnkFraction, o.rankTimeout, true, {}};
  // The running estimate (tools/progress.h): a bar on a terminal, else a plain line every few seconds.
  const bool show = procs.rank() == 0 && o.showProgress();
  ProgressDisplay bar("score", "tokens", stderrIsTerminal());
  job.progress = [&](const driver::TextProgress& p) {
    if (!show || p.done <= 0) return;
    const double rate = p.seconds > 0 ? double(p.done) / p.seconds : 0.0, perToken = p.nllSum / double(p.done);
    std::ostringstream detail;
    detail << std::fixed << (p.ranks > 1 ? "on " + std::to_string(p.ranks) + " ranks, " : "") << "perplexity "
           << std::setprecision(3) << std::exp(perToken);
    if (p.characters) detail << ", bpc " << std::setprecision(4) << perToken / std::log(2.0);
    detail << ", " << std::setprecision(0) << rate << " tokens/s";
    bar.update(p.done, p.total, p.seconds, detail.str());
  };
  const driver::TextJobResult r = driver::scoreTextJob(m, setting, job, procs, phase);
  if (!r.root) return kExitOk;
  const driver::ScoreInput& in = r.input;
  const driver::ScoreResult& t = r.total;
  bar.finish();
  std::cerr << driver::scoreNotes(in, t, o.file);
  if (t.interrupted)
    std::cerr << "txlc: score: interrupted by " << signalName(r.signal) << " after " << t.scored << " of "
              << r.tokensTotal << " tokens; the totals are partial" << std::endl;
  nlohmann::json j = r.report;
  const int code = t.interrupted ? 128 + r.signal : kExitOk;
  if (o.json) {
    if (o.perToken) j["per_token_nll"] = t.perToken;
    std::cout << j.dump(2) << std::endl;
    return code;
  }
  if (o.perToken) {  // stream, position (of the predicted token in its stream), token, nll
    const frontend::Vocabulary* vocab = m.vocabulary && !o.ids ? &*m.vocabulary : nullptr;
    std::ostringstream out;
    out << std::setprecision(6);
    for (std::int64_t b = 0; b < t.batch; ++b)
      for (std::int64_t p = 1; p <= r.scoredPerStream; ++p) {
        std::int64_t id = in.ids[std::size_t(b * t.streamLength + p)];
        out << b << '\t' << p << '\t' << (vocab ? printable(vocab->symbol(id)) : std::to_string(id)) << '\t'
            << t.perToken[std::size_t(b * r.scoredPerStream + p - 1)] << '\n';
      }
    std::cout << out.str();
  }
  const double ppl = std::exp(j["nll_per_token"].get<double>()), bits = j["bits_per_token"].get<double>();
  if (t.interrupted) std::cout << "partial " << t.scored << " of " << r.tokensTotal << " tokens\n";
  std::cout << std::setprecision(10) << "tokens " << t.scored << "\nnll_sum " << t.nllSum << "\nnll_stderr "
            << j["nll_stderr"].get<double>() << "\nperplexity " << ppl << "\nbits_per_token " << bits << "\n";
  if (j.contains("bits_per_char")) std::cout << "bits_per_char " << bits << "\n";
  std::cout << "unk_tokens " << in.unknown << "\nunk_fraction " << std::setprecision(6) << driver::unknownFraction(in)
            << "\n";
  // The estimate as llama-perplexity gives it: perplexity ± its standard error (delta method).
  const int digits = ppl >= 100 ? 2 : ppl >= 10 ? 3 : 4;
  std::cout << std::fixed << std::setprecision(digits) << "estimate" << (t.interrupted ? " (partial)" : "")
            << ": perplexity " << ppl << " \u00b1 " << j["perplexity_stderr"].get<double>() << std::defaultfloat << "\n"
            << std::flush;
  return code;
}

// The documents' progress: documents scored (of how many, when known), tokens and tokens/s.
void showDocumentProgress(ProgressDisplay& bar, const driver::DocumentProgress& p) {
  std::ostringstream detail;
  detail << (p.ranks > 1 ? "on " + std::to_string(p.ranks) + " ranks, " : "") << p.predicted << " tokens, "
         << std::fixed << std::setprecision(0) << (p.seconds > 0 ? double(p.predicted) / p.seconds : 0.0)
         << " tokens/s";
  bar.update(std::int64_t(p.scored), std::int64_t(p.todo), p.seconds, detail.str());
}

// The summary: to --summary FILE, else as a line on stderr.
void writeSummary(const Options& o, const nlohmann::json& j) {
  if (!o.summary.empty()) {
    const std::string text = j.dump(2) + "\n";
    frontend::AtomicFile f(o.summary, 0644);
    f.write(text.data(), text.size());
    f.commit();
  } else std::cerr << driver::documentSummaryLine(j) << std::endl;
}

// `--documents -`: each document's line as soon as it is scored, while stdin stays open (driver/document_stream.h).
int runDocumentStream(const Options& o) {
  driver::Model m = o.model.open();
  const driver::Setting setting = o.model.setting(m);
  const bool show = o.showProgress();
  ProgressDisplay bar("score", "documents", stderrIsTerminal());
  const driver::DocumentStreamJob job{.fd = 0,
                                      .source = "-",
                                      .format = driver::documentFormat(o.documentsFormat),
                                      .limits = {o.maxTokens},
                                      .strict = o.strict,
                                      .output = o.output,
                                      .stream = &std::cout,
                                      .threads = o.model.threads,
                                      .catchInterrupts = true,
                                      .compiled = nullptr,
                                      .progress = [&](const driver::DocumentProgress& p) {
                                        if (show) showDocumentProgress(bar, p);
                                      }};
  const driver::DocumentStreamResult r = driver::scoreDocumentStream(m, setting, job);
  bar.finish();
  if (r.signal != 0)
    std::cerr << "txlc: score: interrupted by " << signalName(r.signal) << " after " << r.written << " of " << r.read
              << " documents read; the totals are partial"
              << (r.partialPath.empty() ? "" : "; " + r.partialPath + " holds their lines") << std::endl;
  writeSummary(o, r.summary);
  return r.signal != 0 ? 128 + r.signal : kExitOk;
}

int runDocuments(const Options& o, driver::Processes& procs, driver::SplitPhase& phase) {
  if (o.documents == "-") return runDocumentStream(o);
  driver::Model m = o.model.open();
  const driver::Setting setting = o.model.setting(m);
  const bool show = o.showProgress();
  ProgressDisplay bar("score", "documents", stderrIsTerminal());
  const driver::DocumentJob job{.source = o.documents,
                                .docs = driver::readDocuments(o.documents, driver::documentFormat(o.documentsFormat)),
                                .limits = {o.maxTokens},
                                .strict = o.strict,
                                .output = o.output,
                                .stream = &std::cout,
                                .resume = o.resume,
                                .threads = o.model.threads,
                                .rankTimeout = o.rankTimeout,
                                .catchInterrupts = true,
                                .compiled = nullptr,
                                .progress = [&](const driver::DocumentProgress& p) {
                                  if (show) showDocumentProgress(bar, p);
                                }};
  const driver::DocumentJobResult r = driver::scoreDocumentJob(m, setting, job, procs, phase);
  if (!r.root) return r.signal != 0 ? 128 + r.signal : kExitOk;
  bar.finish();
  const nlohmann::json& j = r.summary;
  const bool interrupted = r.signal != 0;
  if (interrupted)
    std::cerr << "txlc: score: interrupted by " << signalName(r.signal) << " after " << r.documents.size() << " of "
              << job.docs.size() << " documents; the totals are partial"
              << (r.partialPath.empty() ? "" : "; " + r.partialPath + " holds their lines (--resume continues)")
              << std::endl;
  writeSummary(o, j);
  if (!interrupted) return kExitOk;
  if (r.ranksUnfinished) procs.abort(128 + r.signal);  // a rank that missed the signal would wait for rank 0 forever
  return 128 + r.signal;
}

int run(const Options& o) {
  std::unique_ptr<driver::Processes> procs = driver::joinProcesses();
  const auto work = [&](driver::SplitPhase& phase) {
    if ((o.documents.empty() ? o.file : o.documents) == "-" && procs->size() > 1)
      throw Error("-: under mpirun stdin reaches rank 0 only, and every rank reads the input: give a file");
    return o.documents.empty() ? runText(o, *procs, phase) : runDocuments(o, *procs, phase);
  };
  return driver::runSplit(*procs, work, describeCurrentException, {kExitRankFailed, kExitInternal});
}

}  // namespace

void registerScore(CLI::App& app, Action& action) {
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "score", "score a text file (total NLL, perplexity, bits per token / character) or a corpus of documents");
  o->model.add(*cmd);
  CLI::Option* file = cmd->add_option("file,-f,--file", o->file, "the text to score (or token ids with --ids)");
  CLI::Option* ids = cmd->add_flag("--ids", o->ids, "FILE holds token ids (whitespace-separated integers), not text");
  CLI::Option* json = cmd->add_flag("--json", o->json, "machine-readable result on stdout");
  CLI::Option* perToken = cmd->add_flag("--per-token", o->perToken, "also the NLL of every predicted token");
  CLI::Option* documents = cmd->add_option(
      "--documents", o->documents,
      "score each document of FILE on its own (one per line, or JSON Lines with \"text\" and \"id\"): one JSON line "
      "per document, in order");
  const std::vector<CLI::Option*> docOnly = {
      cmd->add_option("-o,--output", o->output,
                      "--documents: write the lines to FILE (atomically; FILE.partial while running)")
          ->check(nonEmptyPath()),
      cmd->add_option("--summary", o->summary, "--documents: the summary as JSON to FILE instead of a line on stderr")
          ->check(nonEmptyPath()),
      cmd->add_flag("--resume", o->resume, "--documents: keep the documents an interrupted run (-o FILE) completed"),
      cmd->add_flag("--strict", o->strict,
                    "--documents: a document that cannot be scored is an error, not an error line"),
      cmd->add_option("--documents-format", o->documentsFormat, "--documents: auto (default), lines or jsonl"),
      cmd->add_option("--max-tokens", o->maxTokens, "--documents: longer documents are error lines (default 1048576)")
          ->check(positiveInt())};
  CLI::Option* progressOn =
      cmd->add_flag("--progress", o->progress,
                    "a running estimate on stderr (tokens, perplexity, tokens/s, ETA); default on a terminal");
  cmd->add_flag("--no-progress", o->noProgress, "no running estimate, even on a terminal")->excludes(progressOn);
  cmd->add_option("--max-unk-fraction", o->maxUnkFraction,
                  "refuse a text whose share of <unk> tokens is above F (default 0.1)")
      ->check(realIn(0, 1, false, "a fraction in [0, 1]"));
  cmd->add_option("--rank-timeout", o->rankTimeout,
                  "under mpirun: rank 0 gives up on a rank silent for this many seconds (default 120)")
      ->check(realIn(0, 1e9, true, "a number of seconds above 0"));
  cmd->callback([o, &action, file, ids, json, perToken, documents, docOnly] {
    if (documents->count() && file->count()) throw CLI::ValidationError("--documents", "excludes FILE");
    if (!documents->count() && !file->count()) throw CLI::RequiredError("file");
    for (CLI::Option* opt : {ids, json, perToken})
      if (documents->count() && opt->count())
        throw CLI::ValidationError(opt->get_name(), "excludes --documents (its output is one JSON line per document)");
    for (CLI::Option* opt : docOnly)
      if (!documents->count() && opt->count()) throw CLI::ValidationError(opt->get_name(), "needs --documents");
    if (o->resume && (o->output.empty() || o->output == "-")) throw CLI::ValidationError("--resume", "needs -o FILE");
    if (o->resume && o->documents == "-")
      throw CLI::ValidationError("--resume",
                                 "needs a file of documents: - (stdin) is read once, as it arrives, so "
                                 "what an earlier run completed cannot be checked against it");
    if (o->output == "-") o->output.clear();  // the lines to stdout, as without -o
    if (!o->summary.empty() && !o->output.empty()) {
      namespace fs = std::filesystem;
      std::error_code ec;
      const auto a = fs::weakly_canonical(o->summary, ec);
      if (a == fs::weakly_canonical(o->output, ec) || a == fs::weakly_canonical(o->output + ".partial", ec))
        throw CLI::ValidationError("--summary", "is the file of the lines (-o); give another file");
    }
    if (o->documentsFormat != "auto" && o->documentsFormat != "lines" && o->documentsFormat != "jsonl")
      throw CLI::ValidationError("--documents-format",
                                 "expected auto, lines or jsonl, got '" + o->documentsFormat + "'");
    action = [o] { return run(*o); };
  });
}

}  // namespace txl::tools
