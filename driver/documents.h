// driver/documents.h - scoring a corpus document by document: reading,
// validation, the packing scheduler, and the output lines.
//
// A corpus is one document per line, or JSON Lines with a "text" string and
// an optional "id". Each document is scored on its own, as if it were its
// own file: fresh memory, segments of qlen (the last one shorter), every
// token after its first predicted. Documents are packed side by side as the
// batch's independent streams; a stream whose document ends takes the next
// one (Session::resetStream), so no document waits for a longer neighbour.
//
// What a document's numbers depend on: its own tokens and the setting
// (batch, qlen, mem_len, threads, backend, pipeline), never on the stream it
// ran on or its neighbours. Every segment runs the same plan (qlen tokens
// against the padded memory of mem_len, Session::padAlways), a finished
// document's last segment filled up with token 0 behind its end (causally
// unseen), and streams never mix in any op. So any split of the documents
// between processes gives the same bits as one process (docs/SCALE.md).
//
// A document that cannot be scored (empty, binary, not valid UTF-8, a
// character outside the vocabulary, bad JSON, too long) is reported in its
// output line with an "error" field instead of its numbers. A JSON line past
// the bounds below (its length, nesting, values, or an "id" too large to
// repeat in an output line) is a hostile file, not a document: txl::Error.
//
//   std::vector<Document> docs = readDocuments("corpus.jsonl", DocumentFormat::Auto);
//   std::vector<EncodedDocument> enc = encodeDocuments(docs, vocab, {});
//   scoreDocuments(session, tokensOf(enc, order), {.qlen = 64}, [&](std::size_t i, const DocumentScore& s) {...});
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "backend/session.h"
#include "frontend/vocabulary.h"

namespace txl::driver {

// Bounds on one JSON line (of a corpus, or of an earlier output --resume
// reads), checked as it is parsed so that memory stays proportional to them:
// the line's bytes before parsing, the nesting and the count of values while
// parsing (nlohmann's parser callback stops it), then the "id"'s JSON text.
inline constexpr std::size_t kMaxJsonLineBytes = std::size_t(64) << 20;
inline constexpr int kMaxJsonLineDepth = 64;
inline constexpr std::size_t kMaxJsonLineValues = std::size_t(1) << 20;
inline constexpr std::size_t kMaxIdBytes = 4096;

enum class DocumentFormat { Auto, Lines, JsonLines };
// "auto", "lines", "jsonl"; txl::Error for another name.
DocumentFormat documentFormat(const std::string& name);

struct Document {
  nlohmann::json id;      // the JSON line's "id" (any JSON value), else the 1-based line number
  std::int64_t line = 0;  // 1-based line of the file
  std::string text;
  std::string error;  // a problem found while reading (bad JSON, no "text"); empty when none
};

// The documents of `path` ("-": stdin). Auto: JSON Lines when the file name
// ends in .jsonl or .ndjson, or its first non-blank line is a JSON object
// with a "text" field; otherwise one document per line. A last line without
// a line break is a document; a trailing line break ends the last one. A
// line's own problems go to Document::error; txl::Error for the file, and
// for a JSON line past the bounds above ("docs.jsonl: line 3: ...").
std::vector<Document> readDocuments(const std::string& path, DocumentFormat format);
std::vector<Document> parseDocuments(std::string_view content, const std::string& source, DocumentFormat format);
// One line of a corpus (no line break) as the document of line `lineNo`, in
// `format` (Lines or JsonLines, not Auto): what parseDocuments makes of it.
Document parseDocumentLine(std::string_view line, std::int64_t lineNo, const std::string& source,
                           DocumentFormat format);
// Auto's choice, made at a corpus's first non-blank line: JsonLines for a
// JSON object with a "text" field, else Lines; none for a blank line.
std::optional<DocumentFormat> formatFromLine(std::string_view line, std::int64_t lineNo, const std::string& source);

struct EncodeLimits {
  std::int64_t maxTokens = std::int64_t(1) << 20;  // a longer document is an error line
};

struct EncodedDocument {
  std::vector<std::int64_t> ids;
  std::int64_t unknown = 0;  // words scored as <unk> (word vocabularies)
  std::string error;         // why it cannot be scored; ids empty then
};

// The tokens of one document, or why it cannot be scored: empty, binary (a
// NUL byte), not valid UTF-8, outside the vocabulary, fewer than 2 tokens,
// more than limits.maxTokens. Word vocabularies add <eos> at its end.
EncodedDocument encodeDocument(const Document& doc, const frontend::Vocabulary& vocab, const EncodeLimits& limits);

struct DocumentScore {
  std::int64_t tokens = 0;  // tokens predicted: the document's tokens less its first
  double nllSum = 0;        // nats, summed in double in token order
};

struct PackOptions {
  std::int64_t qlen = 64;
  // Called after every segment with the tokens predicted by it (all streams).
  std::function<void(std::int64_t)> afterSegment;
  // Asked before every segment: true ends the scoring there (an interrupt);
  // the documents in flight are left unscored.
  std::function<bool()> stop;
};

// Scores every document of `docs` (each at least 2 tokens) through the
// batch streams of `session`, taking them in the order given; `done(i, s)`
// as document i finishes (not in order). Resets the session first. False
// when `options.stop` ended it before every document was done.
bool scoreDocuments(backend::Session& session, std::span<const std::span<const std::int64_t>> docs,
                    const PackOptions& options, const std::function<void(std::size_t, const DocumentScore&)>& done);

// The next document for an idle stream: its index (what `done` is called
// with) and its tokens (at least 2, valid until it is done), or none. `wait`
// false: only a document ready at once (other streams are at work); true:
// every stream is idle, so it may wait for one; none then ends the scoring.
struct FedDocument {
  std::size_t index = 0;
  std::span<const std::int64_t> ids;
};
using DocumentFeed = std::function<std::optional<FedDocument>(bool wait)>;

// scoreDocuments over documents taken from `feed` as streams fall idle
// (documents that arrive while the scoring runs: driver/document_stream.h);
// a stream with nothing to take runs idle (token 0) until one comes.
bool scoreFedDocuments(backend::Session& session, const DocumentFeed& feed, const PackOptions& options,
                       const std::function<void(std::size_t, const DocumentScore&)>& done);

// The output line of a document (no line break): {"id", "tokens",
// "nll_sum", "perplexity", "bits_per_token", "unk_tokens"}, or {"id",
// "error"}. Doubles print with 17 significant digits: the text is the bits.
std::string documentLine(const nlohmann::json& id, const DocumentScore& score, std::int64_t unknown);
std::string documentErrorLine(const nlohmann::json& id, const std::string& error);

// A fingerprint of a corpus as read: every document's id, text and reading
// error, in order (what --resume and a split run's ranks must agree on).
std::uint64_t corpusFingerprint(const std::vector<Document>& docs);

// How many leading documents `lines` (an earlier run's output) already
// holds: each line a complete JSON object whose "id" is that document's id,
// in order; the first line that is not (a torn last line) ends the prefix.
// txl::Error naming `source` when a complete line belongs to another corpus
// or is past the bounds above.
std::size_t completedPrefix(std::string_view lines, const std::vector<Document>& docs, const std::string& source,
                            std::size_t* bytes = nullptr);

}  // namespace txl::driver
