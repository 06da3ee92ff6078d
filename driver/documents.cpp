// driver/documents.cpp - documents: reading, validation, packing, output lines.
#include "driver/documents.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <deque>

#include "driver/content_hash.h"
#include "driver/finite.h"
#include "driver/text_source.h"
#include "frontend/input_file.h"
#include "ir/check.h"

namespace txl::driver {

DocumentFormat documentFormat(const std::string& name) {
  if (name == "auto") return DocumentFormat::Auto;
  if (name == "lines") return DocumentFormat::Lines;
  if (name == "jsonl") return DocumentFormat::JsonLines;
  throw Error("--documents-format: expected auto, lines or jsonl, got '" + name + "'");
}

namespace {

bool endsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The lines of `content`: a trailing line break ends the last line, it does not start another.
std::vector<std::string_view> splitLines(std::string_view content) {
  std::vector<std::string_view> lines;
  for (std::size_t pos = 0; pos < content.size();) {
    std::size_t end = content.find('\n', pos);
    if (end == std::string_view::npos) end = content.size();
    std::string_view line = content.substr(pos, end - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    lines.push_back(line);
    pos = end + 1;
  }
  return lines;
}

// Builds one JSON line from nlohmann's SAX events within the bounds of
// documents.h: nesting and values are counted as they come, so a deep or
// wide line is refused before it is built whole. (nlohmann's own parser
// callback cannot serve: its builder rescans an array at every element's
// end, quadratic in a wide line.)
class BoundedLine final : public nlohmann::json_sax<nlohmann::json> {
 public:
  explicit BoundedLine(const std::string& where) : where_(where) {}
  nlohmann::json root;
  bool null() override { return put(nullptr); }
  bool boolean(bool v) override { return put(v); }
  bool number_integer(number_integer_t v) override { return put(v); }
  bool number_unsigned(number_unsigned_t v) override { return put(v); }
  bool number_float(number_float_t v, const string_t&) override { return put(v); }
  bool string(string_t& v) override { return put(std::move(v)); }
  bool binary(binary_t& v) override { return put(nlohmann::json::binary(std::move(v))); }
  bool start_object(std::size_t) override { return open(nlohmann::json::object()); }
  bool start_array(std::size_t) override { return open(nlohmann::json::array()); }
  bool end_object() override { return close(); }
  bool end_array() override { return close(); }
  bool key(string_t& k) override {
    key_ = std::move(k);
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override { return false; }

 private:
  nlohmann::json* place(nlohmann::json&& v) {
    if (++values_ > kMaxJsonLineValues)
      throw Error(where_ + "more than " + std::to_string(kMaxJsonLineValues) + " JSON values, expected at most " +
                  std::to_string(kMaxJsonLineValues) + " in a line");
    if (stack_.empty()) {
      root = std::move(v);
      return &root;
    }
    nlohmann::json* parent = stack_.back();
    if (parent->is_array()) {
      parent->push_back(std::move(v));
      return &parent->back();  // the parent grows no more until this child closes
    }
    return &((*parent)[key_] = std::move(v));
  }
  bool put(nlohmann::json&& v) {
    place(std::move(v));
    return true;
  }
  bool open(nlohmann::json&& v) {
    if (stack_.size() >= std::size_t(kMaxJsonLineDepth))
      throw Error(where_ + "JSON nested deeper than " + std::to_string(kMaxJsonLineDepth) +
                  " levels, expected at most " + std::to_string(kMaxJsonLineDepth));
    stack_.push_back(place(std::move(v)));
    return true;
  }
  bool close() {
    stack_.pop_back();
    return true;
  }

  const std::string& where_;
  std::vector<nlohmann::json*> stack_;
  std::string key_;
  std::size_t values_ = 0;
};

// Line `lineNo` of `source` as JSON (discarded when it is not JSON), within
// the bounds of documents.h: its length before parsing, its nesting and
// values as it is built (BoundedLine), its "id" after.
nlohmann::json parseBoundedLine(std::string_view line, std::size_t lineNo, const std::string& source) {
  const std::string where = oneLine(source) + ": line " + std::to_string(lineNo) + ": ";
  if (line.size() > kMaxJsonLineBytes)
    throw Error(where + "a JSON line of " + std::to_string(line.size()) + " bytes, expected at most " +
                std::to_string(kMaxJsonLineBytes));
  BoundedLine builder(where);
  if (!nlohmann::json::sax_parse(line, &builder)) return nlohmann::json(nlohmann::json::value_t::discarded);
  nlohmann::json j = std::move(builder.root);
  if (j.is_object())
    if (const auto id = j.find("id"); id != j.end()) {
      const std::size_t bytes = id->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).size();
      if (bytes > kMaxIdBytes)
        throw Error(where + "an \"id\" of " + std::to_string(bytes) + " bytes as JSON, expected at most " +
                    std::to_string(kMaxIdBytes));
    }
  return j;
}

bool looksLikeJsonLines(const std::vector<std::string_view>& lines, const std::string& source) {
  for (std::size_t n = 0; n < lines.size(); ++n)
    if (const std::optional<DocumentFormat> f = formatFromLine(lines[n], std::int64_t(n) + 1, source))
      return *f == DocumentFormat::JsonLines;
  return false;
}

// Where `s` stops being UTF-8 (npos when it is): overlong forms, surrogates
// and code points above U+10FFFF are refused as well.
std::size_t invalidUtf8(std::string_view s) {
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    int n = c < 0x80 ? 0 : (c >> 5) == 0x6 ? 1 : (c >> 4) == 0xE ? 2 : (c >> 3) == 0x1E ? 3 : -1;
    if (n < 0 || (n > 0 && i + std::size_t(n) >= s.size())) return i;
    std::uint32_t cp = n == 0 ? c : n == 1 ? (c & 0x1F) : n == 2 ? (c & 0x0F) : (c & 0x07);
    for (int k = 1; k <= n; ++k) {
      const auto d = static_cast<unsigned char>(s[i + std::size_t(k)]);
      if ((d >> 6) != 0x2) return i;
      cp = (cp << 6) | (d & 0x3F);
    }
    if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) || cp > 0x10FFFF ||
        (cp >= 0xD800 && cp <= 0xDFFF))
      return i;
    i += std::size_t(n) + 1;
  }
  return std::string_view::npos;
}

}  // namespace

std::optional<DocumentFormat> formatFromLine(std::string_view line, std::int64_t lineNo, const std::string& source) {
  const std::size_t first = line.find_first_not_of(" \t");
  if (first == std::string_view::npos) return std::nullopt;
  if (line[first] != '{') return DocumentFormat::Lines;
  const nlohmann::json j = parseBoundedLine(line, std::size_t(lineNo), source);
  return j.is_object() && j.contains("text") ? DocumentFormat::JsonLines : DocumentFormat::Lines;
}

Document parseDocumentLine(std::string_view line, std::int64_t lineNo, const std::string& source,
                           DocumentFormat format) {
  TXL_CHECK(format != DocumentFormat::Auto, "a document line parsed before its format was chosen");
  Document d;
  d.line = lineNo;
  d.id = d.line;
  if (format == DocumentFormat::Lines) {
    d.text = std::string(line);
    return d;
  }
  const nlohmann::json j = parseBoundedLine(line, std::size_t(lineNo), source);
  if (j.is_discarded() || !j.is_object()) {
    d.error = "line " + std::to_string(d.line) + ": expected a JSON object with a \"text\" string, got " +
              (j.is_discarded() ? "text that is not JSON" : std::string("a JSON ") + j.type_name());
  } else {
    if (j.contains("id")) d.id = j["id"];
    if (!j.contains("text") || !j["text"].is_string())
      d.error = "line " + std::to_string(d.line) + ": expected a \"text\" string, got " +
                (j.contains("text") ? std::string("a JSON ") + j["text"].type_name() : std::string("none"));
    else d.text = j["text"].get<std::string>();
  }
  return d;
}

std::vector<Document> parseDocuments(std::string_view content, const std::string& source, DocumentFormat format) {
  const std::vector<std::string_view> lines = splitLines(content);
  if (format == DocumentFormat::Auto)
    format = endsWith(source, ".jsonl") || endsWith(source, ".ndjson") || looksLikeJsonLines(lines, source)
                 ? DocumentFormat::JsonLines
                 : DocumentFormat::Lines;
  std::vector<Document> docs;
  docs.reserve(lines.size());
  for (std::size_t n = 0; n < lines.size(); ++n)
    docs.push_back(parseDocumentLine(lines[n], std::int64_t(n) + 1, source, format));
  return docs;
}

std::vector<Document> readDocuments(const std::string& path, DocumentFormat format) {
  const std::string text = readTextFile(path);
  return frontend::parsingFile(path, "documents", [&] { return parseDocuments(text, path, format); });
}

EncodedDocument encodeDocument(const Document& doc, const frontend::Vocabulary& vocab, const EncodeLimits& limits) {
  EncodedDocument e;
  if (!doc.error.empty()) {
    e.error = doc.error;
    return e;
  }
  const std::string& t = doc.text;
  if (t.empty()) {
    e.error = "empty document";
    return e;
  }
  if (const std::size_t nul = t.find('\0'); nul != std::string::npos) {
    e.error = "binary: a NUL byte at byte " + std::to_string(nul);
    return e;
  }
  if (const std::size_t bad = invalidUtf8(t); bad != std::string_view::npos) {
    char hex[8];
    std::snprintf(hex, sizeof hex, "0x%02X", static_cast<unsigned char>(t[bad]));
    e.error = "not UTF-8 text: byte " + std::string(hex) + " at byte " + std::to_string(bad);
    return e;
  }
  // A limit on the text first, so that a huge document is refused before it is encoded.
  if (std::int64_t(t.size()) > 8 * limits.maxTokens) {
    e.error = std::to_string(t.size()) + " bytes, over the limit of " + std::to_string(limits.maxTokens) + " tokens";
    return e;
  }
  try {
    e.ids = vocab.encode(t, "text");
  } catch (const Error& err) {
    e.error = err.what();
    if (e.error.rfind("text: ", 0) == 0) e.error.erase(0, 6);  // "line 1 column 4: character ..."
    e.ids.clear();
    return e;
  }
  if (std::int64_t(e.ids.size()) > limits.maxTokens) {
    e.error = std::to_string(e.ids.size()) + " tokens, over the limit of " + std::to_string(limits.maxTokens);
    e.ids.clear();
    return e;
  }
  if (e.ids.size() < 2) {
    e.error = std::to_string(e.ids.size()) + " token, expected at least 2 to predict anything";
    e.ids.clear();
    return e;
  }
  if (vocab.kind() == frontend::VocabKind::Word) e.unknown = vocab.countUnknown(t);
  return e;
}

bool scoreDocuments(backend::Session& session, std::span<const std::span<const std::int64_t>> docs,
                    const PackOptions& options, const std::function<void(std::size_t, const DocumentScore&)>& done) {
  for (const auto& d : docs) TXL_CHECK(d.size() >= 2, "a document of fewer than 2 tokens reached the scheduler");
  std::size_t taken = 0;
  const DocumentFeed inOrder = [&](bool) -> std::optional<FedDocument> {
    if (taken == docs.size()) return std::nullopt;
    const std::size_t i = taken++;
    return FedDocument{i, docs[i]};
  };
  return scoreFedDocuments(session, inOrder, options, done);
}

bool scoreFedDocuments(backend::Session& session, const DocumentFeed& feed, const PackOptions& options,
                       const std::function<void(std::size_t, const DocumentScore&)>& done) {
  const std::int64_t batch = session.model().info().batch, qlen = options.qlen;
  TXL_CHECK(qlen >= 1, "qlen must be positive");
  session.reset();
  session.padAlways(true);
  struct Stream {
    bool active = false;
    FedDocument doc;
    std::int64_t next = 0;  // the next input position of the document
    DocumentScore score;
  };
  std::vector<Stream> streams(static_cast<std::size_t>(batch));
  const auto anyActive = [&] {
    return std::any_of(streams.begin(), streams.end(), [](const Stream& s) { return s.active; });
  };
  // Stream b takes the feed's next document, if it has one (waiting for it only when `wait`).
  const auto take = [&](std::int64_t b, bool wait) {
    Stream& s = streams[std::size_t(b)];
    std::optional<FedDocument> d = feed(wait);
    if (!d) return false;
    TXL_CHECK(d->ids.size() >= 2, "a document of fewer than 2 tokens reached the scheduler");
    s = Stream{.active = true, .doc = *d, .next = 0, .score = {}};
    session.resetStream(b);
    return true;
  };
  ir::Tensor tokens = ir::Tensor::zeros({ir::DType::I64, {qlen, batch}});
  ir::Tensor targets = ir::Tensor::zeros({ir::DType::I64, {qlen, batch}});
  std::vector<std::int64_t> lengths(static_cast<std::size_t>(batch));
  for (;;) {
    if (options.stop && options.stop()) return false;
    // Idle streams take what is ready; with every stream idle, the first waits for the next document.
    bool more = true;
    for (std::int64_t b = 0; b < batch && more; ++b)
      if (!streams[std::size_t(b)].active) more = take(b, false);
    if (!anyActive()) {
      if (!take(0, true)) return true;  // the feed has ended
      for (std::int64_t b = 1; b < batch && take(b, false); ++b) {
      }
    }
    auto* tok = tokens.data<std::int64_t>();
    auto* tgt = targets.data<std::int64_t>();
    std::fill(tok, tok + qlen * batch, 0);  // token 0 behind a document's end and on idle streams
    std::fill(tgt, tgt + qlen * batch, 0);
    for (std::int64_t b = 0; b < batch; ++b) {
      const Stream& s = streams[std::size_t(b)];
      std::int64_t& len = lengths[std::size_t(b)];
      len = 0;
      if (!s.active) continue;
      const std::span<const std::int64_t> ids = s.doc.ids;
      len = std::min(qlen, std::int64_t(ids.size()) - 1 - s.next);
      for (std::int64_t t = 0; t < len; ++t) {
        tok[t * batch + b] = ids[std::size_t(s.next + t)];
        tgt[t * batch + b] = ids[std::size_t(s.next + t + 1)];
      }
    }
    const backend::ForwardResult out = session.forward(tokens, &targets, /*logprob=*/false);
    const float* nll = out.nll->data<float>();
    std::int64_t predicted = 0;
    for (std::int64_t b = 0; b < batch; ++b) {
      Stream& s = streams[std::size_t(b)];
      if (!s.active) continue;
      const std::int64_t len = lengths[std::size_t(b)];
      for (std::int64_t t = 0; t < len; ++t) s.score.nllSum += double(nll[t * batch + b]);
      s.score.tokens += len;
      s.next += len;
      predicted += len;
      if (s.next == std::int64_t(s.doc.ids.size()) - 1) {
        s.active = false;
        done(s.doc.index, s.score);
      }
    }
    if (options.afterSegment) options.afterSegment(predicted);
  }
}

namespace {

std::string number(double v) {
  if (!std::isfinite(v)) return "null";  // JSON has no NaN or infinity
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

}  // namespace

std::string documentLine(const nlohmann::json& id, const DocumentScore& score, std::int64_t unknown) {
  if (!std::isfinite(score.nllSum)) return documentErrorLine(id, "its NLL is " + nonFiniteReason(float(score.nllSum)));
  const double perToken = score.nllSum / double(score.tokens);
  return "{\"id\":" + id.dump() + ",\"tokens\":" + std::to_string(score.tokens) +
         ",\"nll_sum\":" + number(score.nllSum) + ",\"perplexity\":" + number(std::exp(perToken)) +
         ",\"bits_per_token\":" + number(perToken / std::log(2.0)) + ",\"unk_tokens\":" + std::to_string(unknown) + "}";
}

std::string documentErrorLine(const nlohmann::json& id, const std::string& error) {
  return "{\"id\":" + id.dump() +
         ",\"error\":" + nlohmann::json(error).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "}";
}

std::uint64_t corpusFingerprint(const std::vector<Document>& docs) {
  ContentHash h;
  const std::uint64_t count = docs.size();
  h.update(&count, sizeof count);
  for (const Document& d : docs) {
    // Each part with its length, so that no two corpora run together alike.
    for (const std::string& part :
         {d.id.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), d.text, d.error}) {
      const std::uint64_t n = part.size();
      h.update(&n, sizeof n);
      h.update(part);
    }
  }
  return h.digest();
}

namespace {

// A document id as its JSON text, cut and escaped by quote() when long (an id is the input's, of any size).
std::string idText(const nlohmann::json& id) {
  std::string text = id.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return text.size() <= kMaxQuoted ? text : quote(text);
}

}  // namespace

std::size_t completedPrefix(std::string_view lines, const std::vector<Document>& docs, const std::string& source,
                            std::size_t* bytes) {
  std::size_t n = 0, pos = 0;
  while (pos < lines.size() && n < docs.size()) {
    const std::size_t end = lines.find('\n', pos);
    if (end == std::string_view::npos) break;  // a torn last line
    const nlohmann::json j = parseBoundedLine(lines.substr(pos, end - pos), n + 1, source);
    if (j.is_discarded() || !j.is_object() || !j.contains("id") || !(j.contains("tokens") || j.contains("error")))
      break;
    if (j["id"] != docs[n].id)
      throw Error(source + ": line " + std::to_string(n + 1) + " is document " + idText(j["id"]) +
                  ", expected document " + idText(docs[n].id) +
                  " of this corpus (an output of another corpus? remove it or drop --resume)");
    // Its figures are summed into the totals: they must be what a run writes.
    if (j.contains("tokens")) {
      const nlohmann::json& t = j["tokens"];
      const bool tokensOk =
          t.is_number_unsigned() && t.get<std::uint64_t>() >= 1 && t.get<std::uint64_t>() <= (std::uint64_t(1) << 40);
      // documentLine writes null for an NLL that is not finite; the totals count that line as failed.
      const auto nll = j.find("nll_sum");
      const bool nllOk =
          nll != j.end() &&
          (nll->is_null() || (nll->is_number() && std::isfinite(nll->get<double>()) && nll->get<double>() >= 0));
      if (!tokensOk || !nllOk)
        throw Error(source + ": line " + std::to_string(n + 1) + ": expected \"tokens\" a positive integer and " +
                    "\"nll_sum\" a non-negative number, got " + quote(lines.substr(pos, end - pos)) +
                    " (not a line txlc wrote; remove it or drop --resume)");
    }
    ++n;
    pos = end + 1;
  }
  if (bytes) *bytes = pos;
  return n;
}

}  // namespace txl::driver
