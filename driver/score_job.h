// driver/score_job.h - the score job: one text, or a corpus document by
// document, in one process or split across processes.
//
// A text (scoreTextJob) is cut into Setting::batch streams (driver/scorer.h);
// a split run gives each rank a contiguous share of the streams. A corpus
// (scoreDocumentJob) is scored document by document (driver/documents.h);
// a split run gives each rank every ranks-th document still to score. Every
// rank reads the model and the input; the others send rank 0 their results
// and progress (driver/rank_messages.h), and rank 0 reduces them in a fixed
// order, so that the figures are one process's bit for bit (docs/SCALE.md).
// The failure policy around a job is driver/split_run.h; a document job's
// lines go through driver/document_sink.h. The results are structured: the
// caller prints them (tools/cmd_score.cpp) or converts them (python/).
//
//   SplitPhase phase{*procs};
//   TextJobResult r = scoreTextJob(model, setting, {.file = "valid.txt"}, *procs, phase);
//   if (r.root) print(r.report);
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "driver/documents.h"
#include "driver/model.h"
#include "driver/score_report.h"
#include "driver/scorer.h"
#include "driver/setting.h"
#include "driver/split_run.h"

namespace txl::driver {

// --- one text ---------------------------------------------------------------

struct TextProgress {
  std::int64_t done = 0, total = 0;  // tokens predicted so far (all ranks), and by a complete run
  double nllSum = 0;                 // the sum of their NLLs
  int ranks = 1;
  bool characters = false;  // a character vocabulary's text (bits per character)
  double seconds = 0;       // since the scoring started
};

struct TextJob {
  std::string file;  // "-": stdin
  bool ids = false;  // the file holds token ids
  bool perToken = false;
  double maxUnkFraction = 0.10;
  double rankTimeout = 120;  // rank 0 gives up on a rank silent this long (seconds)
  // A single process: frontend::catchInterrupts() before the scoring, which
  // then ends cleanly at the next segment on SIGINT/SIGTERM with the totals so far.
  bool catchInterrupts = false;
  std::function<void(const TextProgress&)> progress;  // rank 0, after every segment
};

struct TextJobResult {
  bool root = true;  // false on the other ranks of a split run: rank 0 holds the results
  ScoreInput input;
  // The whole text: batch is the streams of the cut, the sums over every
  // rank's streams in stream order; perToken holds the scored positions of
  // every stream, stream by stream (scoredPerStream each).
  ScoreResult total;
  std::int64_t tokensTotal = 0;  // tokens a complete run predicts
  std::int64_t scoredPerStream = 0;
  int signal = 0;  // the signal that interrupted it (total.interrupted)
  double seconds = 0;
  nlohmann::json report;  // scoreReport() and "ranks" (and "tokens_total" when interrupted)
};

TextJobResult scoreTextJob(const Model& m, const Setting& setting, const TextJob& job, Processes& procs,
                           SplitPhase& phase);

// --- a corpus of documents ------------------------------------------------------

struct DocumentProgress {
  std::size_t scored = 0, todo = 0;  // documents scored in this run (all ranks), and to score
  std::int64_t predicted = 0;        // tokens predicted in this run, all ranks
  int ranks = 1;
  double seconds = 0;  // since the scoring started
};

struct DocumentJob {
  std::string source;          // names the corpus: messages, the summary's "file"
  std::vector<Document> docs;  // readDocuments() or parseDocuments()
  EncodeLimits limits;
  bool strict = false;  // a document that cannot be scored is a txl::Error, not an error line
  std::string output;   // FILE for the lines (driver/document_sink.h); empty: `stream`
  std::ostream* stream = nullptr;
  bool resume = false;       // keep the documents an earlier run's FILE.partial or FILE completed
  std::int64_t threads = 1;  // the summary's "threads"
  double rankTimeout = 120;
  // frontend::catchInterrupts() before the scoring: SIGINT/SIGTERM end it at
  // the next segment, with the complete lines out and the summary partial.
  bool catchInterrupts = false;
  std::shared_ptr<const backend::CompiledModel> compiled;  // the setting's, when the caller has it
  std::function<void(const DocumentProgress&)> progress;   // rank 0, after every segment
};

// One document of the output, as its line says.
struct DocumentOutcome {
  std::optional<DocumentScore> score;  // none: an error line
  std::int64_t unknown = 0;
  std::string error;     // why it has no score (documentErrorLine); empty with a finite score
  bool resumed = false;  // kept from an earlier run's output
};
// The output line of `outcome` for `doc` (documentLine or documentErrorLine).
std::string outcomeLine(const Document& doc, const DocumentOutcome& outcome);

struct DocumentJobResult {
  bool root = true;                        // false on the other ranks
  std::vector<DocumentOutcome> documents;  // the lines out, in input order (all unless interrupted)
  nlohmann::json summary;                  // file, documents, scored, resumed, failed, tokens, nll_sum, ..., mem_len
  int signal = 0;                          // the signal that interrupted it (then summary["interrupted"])
  std::string partialPath;                 // FILE.partial holding the lines of an interrupted run ("" for none)
  bool ranksUnfinished = false;            // interrupted with ranks still at work: the caller ends the run
};

// txl::Error when the setting's batch streams cannot take documents one by
// one (a model without padded plans at --batch above 1).
void checkDocumentStreams(const Model& m, const Setting& setting);

// A document run's totals, the figures of its summary.
struct DocumentTotals {
  std::string file;            // the corpus's name (DocumentJob::source)
  std::size_t documents = 0;   // documents of the input (read, for a stream)
  std::size_t scored = 0;      // documents of the output this run scored
  std::size_t resumed = 0;     // documents kept from an earlier run's output
  std::int64_t failed = 0;     // error lines
  std::int64_t tokens = 0;     // tokens of the scored documents of the output
  double nllSum = 0;           // their NLL
  double seconds = 0;          // since the scoring started
  std::size_t scoredAll = 0;   // documents scored in this run, all ranks (documents_per_second)
  std::int64_t predicted = 0;  // tokens predicted in this run, all ranks (tokens_per_second)
  int ranks = 1;
  std::int64_t threads = 1;
  std::optional<std::size_t> written;  // an interrupted run: the documents whose lines are out
};

// The summary object of a document run (DocumentJobResult::summary): file,
// documents, scored, resumed, failed, tokens, nll_sum, nll_per_token,
// perplexity, bits_per_token, seconds, documents_per_second,
// tokens_per_second, ranks, threads, batch, qlen, mem_len, and for an
// interrupted run "interrupted": true and "written".
nlohmann::json documentSummary(const DocumentTotals& totals, const Setting& setting);

// The summary as one line for stderr: "txlc: score: N documents (F with
// errors, R resumed), T tokens, nll_sum ..., B bits/token; ... on K ranks".
std::string documentSummaryLine(const nlohmann::json& summary);

DocumentJobResult scoreDocumentJob(const Model& m, const Setting& setting, const DocumentJob& job, Processes& procs,
                                   SplitPhase& phase);

}  // namespace txl::driver
