// driver/document_stream.h - a corpus scored as its documents arrive:
// `txlc score --documents -` on a pipe that stays open.
//
// The documents come one per line from a descriptor (stdin), read as they
// arrive (driver/line_reader.h); each is scored as soon as a batch stream is
// free (driver/documents.h, scoreFedDocuments), and its output line is
// written and flushed as soon as it and every document before it are done,
// so a process feeding the pipe can wait for each answer before it sends
// the next. The lines and their bits are what scoreDocumentJob writes for
// the same documents; the summary is its summary once the input ends.
//
// Memory stays proportional to the documents in flight (at most the batch
// plus those that finished behind a longer one), never to the run: nothing
// is kept of a written document but the totals. Every line is bounded by
// kMaxJsonLineBytes (a longer one is a txl::Error), whatever its format.
// What cannot work on input read once: --resume (the corpus cannot be read
// again to check what an earlier run completed) and a split run (the other
// ranks cannot read it); the command refuses both.
//
//   DocumentStreamJob job{.fd = 0, .stream = &std::cout};
//   DocumentStreamResult r = scoreDocumentStream(model, setting, job);
//   std::cerr << documentSummaryLine(r.summary) << "\n";
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>

#include "driver/documents.h"
#include "driver/model.h"
#include "driver/score_job.h"
#include "driver/setting.h"

namespace txl::driver {

struct DocumentStreamJob {
  int fd = 0;                                    // where the documents come from; read, never closed
  std::string source = "-";                      // names it in messages and the summary's "file"
  DocumentFormat format = DocumentFormat::Auto;  // Auto: chosen at the first non-blank line
  EncodeLimits limits;
  bool strict = false;  // a document that cannot be scored is a txl::Error, not an error line
  std::string output;   // FILE for the lines (driver/document_sink.h); empty: `stream`
  std::ostream* stream = nullptr;
  std::int64_t threads = 1;  // the summary's "threads"
  // frontend::catchInterrupts() first: SIGINT/SIGTERM end the run at the
  // next segment or while it waits for input, the complete lines out.
  bool catchInterrupts = false;
  std::shared_ptr<const backend::CompiledModel> compiled;  // the setting's, when the caller has it
  std::function<void(const DocumentProgress&)> progress;   // after every segment (todo: 0, unknown)
};

struct DocumentStreamResult {
  nlohmann::json summary;   // scoreDocumentJob's keys ("resumed" 0, "ranks" 1)
  std::size_t read = 0;     // documents read
  std::size_t written = 0;  // documents whose lines are out
  int signal = 0;           // the signal that interrupted it (then summary["interrupted"])
  std::string partialPath;  // FILE.partial holding the lines of an interrupted run ("" for none)
};

DocumentStreamResult scoreDocumentStream(const Model& m, const Setting& setting, const DocumentStreamJob& job);

}  // namespace txl::driver
