// driver/document_stream.cpp - a corpus scored as its documents arrive.
#include "driver/document_stream.h"

#include <chrono>
#include <cmath>
#include <deque>
#include <limits>
#include <optional>

#include "driver/compile.h"
#include "driver/document_sink.h"
#include "driver/finite.h"
#include "driver/line_reader.h"
#include "frontend/atomic_file.h"
#include "ir/check.h"

namespace txl::driver {

namespace {

using Clock = std::chrono::steady_clock;

// How long one wait for input lasts before the interrupt flag is looked at again.
constexpr int kWaitMs = 100;

// A document read and not yet written.
struct InFlight {
  Document doc;
  EncodedDocument encoded;
  std::optional<DocumentScore> score;
};

}  // namespace

DocumentStreamResult scoreDocumentStream(const Model& m, const Setting& setting, const DocumentStreamJob& job) {
  const frontend::Vocabulary& vocab = requireVocabulary(m, "score --documents");
  checkDocumentStreams(m, setting);
  // No bound on the output's size: nothing reads it back (no --resume on input read once).
  DocumentSink sink(job.output, job.stream, std::numeric_limits<std::uint64_t>::max());
  std::shared_ptr<const backend::CompiledModel> compiled = job.compiled ? job.compiled : compile(m, setting);
  sink.start("");
  noteReplanning(m, setting);
  if (job.catchInterrupts) frontend::catchInterrupts();
  const auto signal = [&] { return job.catchInterrupts ? frontend::interruptSignal() : 0; };

  LineReader reader(job.fd, job.source, kMaxJsonLineBytes);
  std::optional<DocumentFormat> format;
  if (job.format != DocumentFormat::Auto) format = job.format;
  std::size_t blankHeld = 0;      // blank lines before the first non-blank one, while Auto has not chosen
  std::deque<InFlight> inFlight;  // documents base.. in input order
  std::size_t base = 0;           // the index of inFlight.front(): the documents written so far
  std::int64_t tokensAll = 0, failed = 0, predicted = 0;
  std::size_t scored = 0, scoredWritten = 0;  // documents scored; of those, written
  double nllSum = 0;
  const auto start = Clock::now();

  const auto add = [&](Document&& d) {
    EncodedDocument e = encodeDocument(d, vocab, job.limits);
    if (job.strict && !e.error.empty())
      throw Error(job.source + ": document " + d.id.dump() + " (line " + std::to_string(d.line) + "): " + e.error +
                  " (--strict)");
    inFlight.push_back({std::move(d), std::move(e), std::nullopt});
  };
  // The lines of the leading documents that are done, in order, flushed.
  const auto writeReady = [&] {
    bool any = false;
    while (!inFlight.empty()) {
      const InFlight& f = inFlight.front();
      DocumentOutcome o;
      if (!f.encoded.error.empty()) o.error = f.encoded.error;
      else if (f.score) {
        if (!std::isfinite(f.score->nllSum)) {
          if (job.strict)
            throw Error(job.source + ": document " + f.doc.id.dump() + " (line " + std::to_string(f.doc.line) +
                        "): its NLL is " + nonFiniteReason(float(f.score->nllSum)) + " (--strict)");
          o.error = "its NLL is " + nonFiniteReason(float(f.score->nllSum));
        } else {
          o.score = f.score;
          o.unknown = f.encoded.unknown;
        }
      } else break;
      sink.line(outcomeLine(f.doc, o));
      if (o.score) {
        ++scoredWritten;
        tokensAll += o.score->tokens;
        nllSum += o.score->nllSum;
      } else ++failed;
      inFlight.pop_front();
      ++base;
      any = true;
    }
    if (any) sink.flush();
  };
  // The next document to score: lines are read (waiting only when `wait`)
  // until one can be scored; those that cannot are written as error lines.
  const DocumentFeed feed = [&](bool wait) -> std::optional<FedDocument> {
    std::string line;
    for (;;) {
      const LineReader::Status status = reader.next(line, wait ? kWaitMs : 0);
      if (status == LineReader::Status::Pending) {
        if (!wait || signal() != 0) return std::nullopt;
        continue;
      }
      if (status == LineReader::Status::End) {
        for (; blankHeld > 0; --blankHeld)  // only blank lines: one document per line, as parseDocuments decides
          add(parseDocumentLine("", reader.lineNumber() - std::int64_t(blankHeld) + 1, job.source,
                                DocumentFormat::Lines));
        writeReady();
        return std::nullopt;
      }
      const std::int64_t lineNo = reader.lineNumber();
      if (!format) {
        format = formatFromLine(line, lineNo, job.source);
        if (!format) {
          ++blankHeld;
          continue;
        }
        for (std::int64_t n = lineNo - std::int64_t(blankHeld); n < lineNo; ++n)
          add(parseDocumentLine("", n, job.source, *format));
        blankHeld = 0;
      }
      add(parseDocumentLine(line, lineNo, job.source, *format));
      if (inFlight.back().encoded.error.empty())
        return FedDocument{base + inFlight.size() - 1, inFlight.back().encoded.ids};
      writeReady();
    }
  };
  const auto seconds = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };
  PackOptions po;
  po.qlen = setting.qlen;
  po.stop = [&] { return signal() != 0; };
  po.afterSegment = [&](std::int64_t n) {
    predicted += n;
    writeReady();
    if (job.progress) job.progress({scored, 0, predicted, 1, seconds()});
  };
  {
    backend::Session session(compiled);
    scoreFedDocuments(session, feed, po, [&](std::size_t i, const DocumentScore& s) {
      TXL_CHECK(i >= base && i - base < inFlight.size(), "a scored document that is not in flight");
      inFlight[i - base].score = s;
      ++scored;
    });
  }
  writeReady();
  DocumentStreamResult out;
  out.written = base;
  out.read = base + inFlight.size();
  out.signal = signal();
  const bool interrupted = !inFlight.empty() || (out.signal != 0 && !reader.ended());
  if (!interrupted) out.signal = 0;
  if (interrupted) sink.stop();
  else sink.commit();
  out.partialPath = interrupted ? sink.partialPath() : "";
  out.summary = documentSummary({.file = job.source,
                                 .documents = out.read,
                                 .scored = scoredWritten,
                                 .failed = failed,
                                 .tokens = tokensAll,
                                 .nllSum = nllSum,
                                 .seconds = seconds(),
                                 .scoredAll = scored,
                                 .predicted = predicted,
                                 .threads = job.threads,
                                 .written = interrupted ? std::optional<std::size_t>(out.written) : std::nullopt},
                                setting);
  return out;
}

}  // namespace txl::driver
