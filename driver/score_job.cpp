// driver/score_job.cpp - the score job on one rank: its share of a text's
// streams or of a corpus's documents, and on rank 0 the reduction of every
// rank's results in a fixed order.
#include "driver/score_job.h"

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>
#include <iomanip>
#include <span>
#include <sstream>

#include "driver/compile.h"
#include "driver/content_hash.h"
#include "driver/precision.h"
#include "driver/document_sink.h"
#include "driver/finite.h"
#include "driver/rank_messages.h"
#include "driver/text_source.h"
#include "frontend/atomic_file.h"
#include "frontend/input_file.h"
#include "frontend/model_spec.h"
#include "ir/check.h"

namespace txl::driver {

using Clock = std::chrono::steady_clock;

namespace {

// The setting's parts that change a result's numbers (or which documents are scored).
nlohmann::json resultSetting(const Setting& s) {
  return {{"batch", s.batch},
          {"qlen", s.qlen},
          {"mem_len", s.memLen},
          {"clamp_len", s.clampLen},
          {"same_length", s.sameLength},
          {"initial_memory", s.initialMemory == frontend::InitialMemory::Zeros ? "zeros" : "empty"},
          {"threads", s.threads},
          {"backend", s.backend},
          {"precision", precisionName(s.precision)},
          {"passes", s.resolved.passes}};
}

std::uint64_t hashOf(const std::string& text) { return contentHash(text.data(), text.size()); }

}  // namespace

// --- one text, cut into --batch streams ---------------------------------------

TextJobResult scoreTextJob(const Model& m, const Setting& setting, const TextJob& job, Processes& procs,
                           SplitPhase& phase) {
  const int rank = procs.rank(), ranks = procs.size();
  TextJobResult out;
  out.input = scoreInputFromFile(m, job.file, job.ids);
  const ScoreInput& in = out.input;
  checkUnknownFraction(in, job.maxUnkFraction);
  const std::vector<std::int64_t>& ids = in.ids;
  const std::int64_t streams = setting.batch;
  checkScoreLength(std::int64_t(ids.size()), streams, job.file);
  if (streams < ranks)
    throw Error("--batch " + std::to_string(streams) + ": " + std::to_string(ranks) +
                " ranks share the streams of one text, expected --batch >= " + std::to_string(ranks));
  // Rank r's share: the streams [shareStart(r), shareStart(r + 1)), a contiguous run, the first ranks one more.
  const auto shareStart = [&](int r) { return streams * r / ranks; };
  const std::int64_t first = shareStart(rank), count = shareStart(rank + 1) - first;
  Setting share = setting;
  share.batch = count;

  auto compiled = compile(m, share);
  backend::Session session(compiled);
  {
    nlohmann::json options = resultSetting(setting);
    options["ids"] = job.ids;
    options["per_token"] = job.perToken;
    options["max_unk_fraction"] = job.maxUnkFraction;
    phase.endSetup({hashOf(m.modelId), contentHash(ids.data(), ids.size() * sizeof ids[0]), hashOf(options.dump()), 0});
  }
  if (rank == 0) noteReplanning(m, setting);

  ScoreOptions so;
  so.qlen = setting.qlen;
  so.perToken = job.perToken;
  so.streams = streams;
  so.firstStream = first;
  std::optional<Peers> peers;
  if (rank == 0 && ranks > 1) peers.emplace(procs, job.rankTimeout);
  // A single process ends cleanly on SIGINT/SIGTERM, with the totals so far;
  // a split run is ended by its launcher.
  if (ranks == 1 && job.catchInterrupts) {
    frontend::catchInterrupts();
    so.stop = [] { return frontend::interruptSignal() != 0; };
  }
  // Rank 0 collects the other shares' NLLs (per stream, and per token when asked).
  std::vector<double> streamNll(std::size_t(streams), 0.0);
  std::vector<float> perToken;
  const std::int64_t streamLength = std::int64_t(ids.size()) / streams;
  if (job.perToken && rank == 0) perToken.assign(std::size_t(streams * (streamLength - 1)), 0.0f);
  std::vector<double> streamNllSquares(std::size_t(streams), 0.0);
  std::int64_t othersDone = 0;  // tokens the other ranks reported
  double othersNll = 0;         // the sum of their NLLs, for the running estimate
  // Which ranks sent their share's NLLs: each exactly its own share, once, or
  // the totals would mix in zeros or another rank's streams.
  std::vector<bool> shareReceived(std::size_t(ranks), false);
  const auto shareName = [&](int r) {
    std::string name = "[";
    name += std::to_string(shareStart(r)) + ", " + std::to_string(shareStart(r + 1)) + ")";
    return name;
  };
  const auto handle = [&](const Message& msg) {
    TXL_CHECK(msg.tag == kTagStreams, "an unexpected message from rank " + std::to_string(msg.source));
    const StreamShare s = decodeStreamShare(msg.bytes);
    othersDone += s.predicted;
    othersNll += s.predictedNll;
    if (s.nll.empty()) {  // a heartbeat
      TXL_CHECK(s.nllSquares.empty() && s.perToken.empty(),
                "a heartbeat with NLLs from rank " + std::to_string(msg.source));
      return;
    }
    const std::size_t from = std::size_t(msg.source);
    TXL_CHECK(s.first == shareStart(msg.source) && s.first + std::int64_t(s.nll.size()) == shareStart(msg.source + 1) &&
                  s.nllSquares.size() == s.nll.size() && !shareReceived[from],
              "streams [" + std::to_string(s.first) + ", " + std::to_string(s.first + std::int64_t(s.nll.size())) +
                  ") from rank " + std::to_string(msg.source) + ", which are not its share " + shareName(msg.source) +
                  " or came twice");
    shareReceived[from] = true;
    TXL_CHECK(
        s.perToken.empty() || (!perToken.empty() && s.perToken.size() == s.nll.size() * std::size_t(streamLength - 1)),
        "per-token NLLs that do not fit the share from rank " + std::to_string(msg.source));
    std::copy(s.nll.begin(), s.nll.end(), streamNll.begin() + s.first);
    std::copy(s.nllSquares.begin(), s.nllSquares.end(), streamNllSquares.begin() + s.first);
    if (!perToken.empty())
      std::copy(s.perToken.begin(), s.perToken.end(), perToken.begin() + s.first * (streamLength - 1));
  };
  const auto start = Clock::now();
  const auto since = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };
  auto lastSent = Clock::now();
  std::int64_t unsent = 0, doneHere = 0;
  double unsentNll = 0, nllHere = 0;
  so.progress = [&](std::int64_t done, std::int64_t, double nll) {
    unsent += done - doneHere;
    doneHere = done;
    unsentNll += nll - nllHere;
    nllHere = nll;
    if (rank == 0) {
      if (peers) peers->poll(std::chrono::milliseconds(0), handle);
      if (job.progress)
        job.progress({doneHere + othersDone, streams * (streamLength - 1), nllHere + othersNll, ranks,
                      in.characters >= 0, since()});
    } else if (Clock::now() - lastSent > std::chrono::milliseconds(250)) {  // a heartbeat with the progress
      procs.sendToRoot(kTagStreams, encodeStreamShare({first, {}, {}, {}, unsent, unsentNll}));
      unsent = 0;
      unsentNll = 0;
      lastSent = Clock::now();
    }
  };
  ScoreResult r = scoreTokens(session, ids, so, job.file);
  if (rank != 0) {
    procs.sendToRoot(kTagStreams,
                     encodeStreamShare({first, r.streamNll, r.streamNllSquares, r.perToken, unsent, unsentNll}));
    procs.sendToRoot(kTagDone, encodeDone(0));
    out.root = false;
    return out;
  }
  std::copy(r.streamNll.begin(), r.streamNll.end(), streamNll.begin() + first);
  std::copy(r.streamNllSquares.begin(), r.streamNllSquares.end(), streamNllSquares.begin() + first);
  if (!perToken.empty()) std::copy(r.perToken.begin(), r.perToken.end(), perToken.begin());
  else perToken = std::move(r.perToken);
  while (peers && !peers->allDone()) peers->poll(std::chrono::milliseconds(100), handle);
  for (int r = 1; r < ranks; ++r)
    TXL_CHECK(shareReceived[std::size_t(r)],
              "rank " + std::to_string(r) + " finished without sending the NLLs of its streams " + shareName(r));
  double nllSum = 0, nllSquares = 0;  // the streams in order, as scoreTokens sums them
  for (double s : streamNll) nllSum += s;
  for (double s : streamNllSquares) nllSquares += s;
  out.tokensTotal = streams * (streamLength - 1);
  const std::int64_t scored = r.interrupted ? r.scored : out.tokensTotal;
  out.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  out.signal = r.interrupted ? frontend::interruptSignal() : 0;

  // The whole text's figures: every rank's streams, summed in stream order.
  out.total = std::move(r);
  ScoreResult& total = out.total;
  total.batch = streams;
  total.nllSum = nllSum;
  total.nllSquares = nllSquares;
  total.scored = scored;
  total.streamNll = std::move(streamNll);
  total.streamNllSquares = std::move(streamNllSquares);
  out.report = scoreReport(m, setting, in, total, out.seconds);
  out.report["ranks"] = ranks;
  if (total.interrupted) out.report["tokens_total"] = out.tokensTotal;
  // Every segment advances all streams together, so an interrupted run has
  // scored the same first positions of every stream: per token, its NLLs are
  // those positions', stream by stream, as a complete run's are.
  out.scoredPerStream = scored / streams;
  if (job.perToken && total.interrupted) {
    std::vector<float> done;
    done.reserve(std::size_t(scored));
    for (std::int64_t b = 0; b < streams; ++b) {
      const auto from = perToken.begin() + b * (streamLength - 1);
      done.insert(done.end(), from, from + out.scoredPerStream);
    }
    perToken = std::move(done);
  }
  total.perToken = std::move(perToken);
  return out;
}

// --- a corpus, document by document ---------------------------------------------

std::string outcomeLine(const Document& doc, const DocumentOutcome& outcome) {
  return outcome.score ? documentLine(doc.id, *outcome.score, outcome.unknown)
                       : documentErrorLine(doc.id, outcome.error);
}

namespace {

// --resume reads only regular files: a device or FIFO destination holds nothing to continue from.
bool isRegularFile(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

constexpr const char* kRunRecordFormat = "txlc score --documents run";

// Beside FILE: what made its lines (model, corpus, options), which --resume checks.
std::string runRecordPath(const std::string& output) { return output + ".run.json"; }

void writeRunRecord(const std::string& path, const nlohmann::json& record) {
  const std::string text = record.dump(2) + "\n";
  frontend::AtomicFile f(path, 0644);
  f.write(text.data(), text.size());
  f.commit();
}

// Refuses to continue `from` (FILE.partial or FILE) unless the record beside
// it says it was made by this run's model, corpus and options.
void checkRunRecord(const std::string& path, const std::string& from, const nlohmann::json& mine) {
  const std::string advice = " (" + oneLine(from) + " is another run's; remove it or drop --resume)";
  if (!isRegularFile(path))
    throw Error(oneLine(path) + ": expected the record of the run that wrote " + oneLine(from) +
                " (its model, corpus and options), found none" + advice);
  const std::string text = frontend::readInputFile(path, frontend::kMaxSpecBytes, "a run record (JSON)");
  frontend::forgetInputFile(path);  // rewritten by this run
  const nlohmann::json theirs = frontend::parseJsonText(text, path);
  const auto field = [&](const nlohmann::json& j, const std::string& key) {
    return j.is_object() && j.contains(key) ? j[key] : nlohmann::json();
  };
  // A recorded value for a message: a string quoted, anything else as JSON (cut when long).
  const auto shown = [](const nlohmann::json& j) {
    const std::string d = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    return j.is_string() ? quote(j.get<std::string>()) : d.size() <= kMaxQuoted ? d : quote(d);
  };
  if (field(theirs, "format") != kRunRecordFormat)
    throw Error(oneLine(path) + ": /format: expected \"" + kRunRecordFormat + "\", found " +
                shown(field(theirs, "format")) + advice);
  for (const char* key : {"model", "corpus"})
    if (field(theirs, key) != mine[key])
      throw Error(oneLine(path) + ": /" + key + ": expected this run's " +
                  (std::string(key) == "model" ? "model " : "corpus fingerprint ") + mine[key].get<std::string>() +
                  ", found " + shown(field(theirs, key)) + advice);
  const nlohmann::json theirOptions = field(theirs, "options");
  for (const auto& [key, value] : mine["options"].items())
    if (field(theirOptions, key) != value)
      throw Error(oneLine(path) + ": /options/" + key + ": expected this run's " + value.dump() + ", found " +
                  shown(field(theirOptions, key)) + advice);
}

// The outcomes of the lines an earlier run completed (completedPrefix() checked them).
std::vector<DocumentOutcome> keptOutcomes(std::string_view kept) {
  std::vector<DocumentOutcome> v;
  for (std::size_t pos = 0; pos < kept.size();) {
    const std::size_t end = std::min(kept.find('\n', pos), kept.size());
    const nlohmann::json j = nlohmann::json::parse(kept.substr(pos, end - pos));
    pos = end + 1;
    DocumentOutcome o;
    o.resumed = true;
    if (j.contains("error")) o.error = j.at("error").get<std::string>();
    else if (!j.at("nll_sum").is_null()) {
      o.score = DocumentScore{j.at("tokens").get<std::int64_t>(), j.at("nll_sum").get<double>()};
      o.unknown = j.value("unk_tokens", std::int64_t(0));
    }
    v.push_back(std::move(o));
  }
  return v;
}

}  // namespace

void checkDocumentStreams(const Model& m, const Setting& setting) {
  const backend::ModelInfo info = modelInfo(m.spec, setting);
  if (setting.batch > 1 && info.memLen > 0 && !info.padWarmup &&
      setting.initialMemory != frontend::InitialMemory::Zeros)
    throw Error("--documents with --batch " + std::to_string(setting.batch) +
                ": this model's streams cannot start afresh one by one (attn_type " + std::to_string(m.spec.attn_type) +
                " has no padded plans); use --batch 1");
}

DocumentJobResult scoreDocumentJob(const Model& m, const Setting& setting, const DocumentJob& job, Processes& procs,
                                   SplitPhase& phase) {
  const int rank = procs.rank(), ranks = procs.size();
  const std::vector<Document>& docs = job.docs;
  const frontend::Vocabulary& vocab = requireVocabulary(m, "score --documents");
  std::vector<EncodedDocument> encoded;
  encoded.reserve(docs.size());
  for (const Document& d : docs) {
    encoded.push_back(encodeDocument(d, vocab, job.limits));
    if (job.strict && !encoded.back().error.empty())
      throw Error(job.source + ": document " + d.id.dump() + " (line " + std::to_string(d.line) +
                  "): " + encoded.back().error + " (--strict)");
  }
  // Rank 0 claims FILE before reading anything of it: another run writing it is refused.
  std::optional<DocumentSink> sink;
  if (rank == 0) sink.emplace(job.output, job.stream);
  // What identifies this run's results: its model, corpus and options (recorded beside FILE for --resume).
  nlohmann::json options = resultSetting(setting);
  options["max_tokens"] = job.limits.maxTokens;
  options["strict"] = job.strict;
  const nlohmann::json record = {{"format", kRunRecordFormat},
                                 {"model", m.modelId},
                                 {"corpus", hex64(corpusFingerprint(docs))},
                                 {"options", options}};
  // What an earlier run completed: FILE.partial of an interrupted run, else a complete FILE.
  std::size_t resumed = 0;
  std::string kept;
  if (job.resume) {
    const std::string partial = job.output + ".partial";
    std::string content, from;
    if (sink && !sink->partialPath().empty()) content = sink->earlier();  // through the descriptor rank 0 holds
    else if (isRegularFile(partial)) content = readTextFile(partial);
    frontend::forgetInputFile(partial);
    if (!content.empty()) from = partial;
    else if (isRegularFile(job.output)) {
      content = readTextFile(job.output);
      frontend::forgetInputFile(job.output);  // this run's own output, continued and replaced
      from = job.output;
    }
    if (!from.empty()) {
      std::size_t bytes = 0;
      resumed = completedPrefix(content, docs, from, &bytes);
      kept = content.substr(0, bytes);
      if (!kept.empty()) checkRunRecord(runRecordPath(job.output), from, record);
    }
  }
  checkDocumentStreams(m, setting);
  // The documents still to score, and this rank's share: every ranks-th.
  std::vector<std::size_t> todo, mine;
  for (std::size_t i = resumed; i < docs.size(); ++i)
    if (encoded[i].error.empty()) todo.push_back(i);
  for (std::size_t k = std::size_t(rank); k < todo.size(); k += std::size_t(ranks)) mine.push_back(todo[k]);
  std::vector<std::span<const std::int64_t>> tokens;
  for (std::size_t i : mine) tokens.push_back(encoded[i].ids);
  // The rank each document still to score belongs to (-1: none), to check what the others send.
  std::vector<int> share;
  if (rank == 0) {
    share.assign(docs.size(), -1);
    for (std::size_t k = 0; k < todo.size(); ++k) share[todo[k]] = int(k % std::size_t(ranks));
  }

  std::shared_ptr<const backend::CompiledModel> compiled = job.compiled;
  if (!mine.empty() && !compiled) compiled = compile(m, setting);
  // Every rank has read the earlier output before rank 0 rewrites it, and every rank was given the same run.
  phase.endSetup({hashOf(m.modelId), corpusFingerprint(docs), hashOf(options.dump()), hashOf(kept)});
  if (rank == 0) {
    sink->start(kept);
    if (!sink->partialPath().empty()) writeRunRecord(runRecordPath(job.output), record);
    if (!mine.empty()) noteReplanning(m, setting);
  }

  PackOptions po;
  po.qlen = setting.qlen;
  // SIGINT/SIGTERM (mpirun turns a Ctrl-C into SIGTERM to every rank) end
  // the scoring before the next segment: the workers send what they finished
  // and say so, rank 0 writes the lines that are complete in order and the
  // summary marked interrupted.
  if (job.catchInterrupts) frontend::catchInterrupts();
  const auto ownSignal = [&] { return job.catchInterrupts ? frontend::interruptSignal() : 0; };
  const auto start = Clock::now();
  DocumentJobResult out;
  if (rank != 0) {  // a worker: results to rank 0 after every segment, a heartbeat at least every 250 ms
    DocumentBatch batch;
    auto lastSent = Clock::now();
    const auto send = [&](bool force) {
      if (!force && batch.scores.empty() && Clock::now() - lastSent < std::chrono::milliseconds(250)) return;
      procs.sendToRoot(kTagDocuments, encodeDocumentBatch(batch));
      batch = {};
      lastSent = Clock::now();
    };
    po.afterSegment = [&](std::int64_t n) {
      batch.predicted += n;
      send(false);
    };
    po.stop = [&] { return ownSignal() != 0; };
    bool complete = true;
    if (!mine.empty()) {
      backend::Session session(compiled);
      complete = scoreDocuments(session, tokens, po,
                                [&](std::size_t k, const DocumentScore& s) { batch.scores.emplace_back(mine[k], s); });
    }
    send(true);
    const int signal = ownSignal();
    procs.sendToRoot(kTagDone, encodeDone(complete ? 0 : signal));
    out.root = false;
    out.signal = complete ? 0 : signal;
    return out;
  }

  // Rank 0: its own share, the others' results as they come, the lines in input order.
  std::vector<std::optional<DocumentScore>> scores(docs.size());
  std::vector<DocumentOutcome>& outcomes = out.documents;
  outcomes = keptOutcomes(kept);
  std::int64_t predictedAll = 0;  // tokens predicted in this run, all ranks
  std::size_t scoredAll = 0;      // documents scored in this run, all ranks
  std::optional<Peers> peers;
  if (ranks > 1) peers.emplace(procs, job.rankTimeout);
  const auto writeReady = [&] {
    bool any = false;
    while (outcomes.size() < docs.size()) {
      const std::size_t i = outcomes.size();
      DocumentOutcome o;
      if (!encoded[i].error.empty()) o.error = encoded[i].error;
      else if (scores[i]) {
        if (!std::isfinite(scores[i]->nllSum)) {
          if (job.strict)
            throw Error(job.source + ": document " + docs[i].id.dump() + " (line " + std::to_string(docs[i].line) +
                        "): its NLL is " + nonFiniteReason(float(scores[i]->nllSum)) + " (--strict)");
          o.error = "its NLL is " + nonFiniteReason(float(scores[i]->nllSum));
        } else {
          o.score = scores[i];
          o.unknown = encoded[i].unknown;
        }
      } else break;
      sink->line(outcomeLine(docs[i], o));
      outcomes.push_back(std::move(o));
      any = true;
    }
    if (any) sink->flush();
  };
  const auto handle = [&](const Message& msg) {
    TXL_CHECK(msg.tag == kTagDocuments, "an unexpected message from rank " + std::to_string(msg.source));
    const DocumentBatch b = decodeDocumentBatch(msg.bytes);
    predictedAll += b.predicted;
    for (const auto& [index, s] : b.scores) {
      TXL_CHECK(index < docs.size() && share[index] == msg.source && !scores[index],
                "document " + std::to_string(index) + " from rank " + std::to_string(msg.source) +
                    ", which is not one of its share still to score");
      scores[index] = s;
      ++scoredAll;
    }
  };
  const auto showProgress = [&] {
    if (job.progress)
      job.progress(
          {scoredAll, todo.size(), predictedAll, ranks, std::chrono::duration<double>(Clock::now() - start).count()});
  };
  writeReady();  // error lines before the first scored document
  po.afterSegment = [&](std::int64_t n) {
    predictedAll += n;
    if (peers) peers->poll(std::chrono::milliseconds(0), handle);
    writeReady();
    showProgress();
  };
  // The signal that ends this run early: this rank's own, or one another rank stopped on.
  const auto interruptedBy = [&] {
    const int own = ownSignal();
    return own != 0 ? own : peers ? peers->interruptedBy() : 0;
  };
  po.stop = [&] { return interruptedBy() != 0; };
  if (!mine.empty()) {
    backend::Session session(compiled);
    scoreDocuments(session, tokens, po, [&](std::size_t k, const DocumentScore& s) {
      scores[mine[k]] = s;
      ++scoredAll;
    });
  }
  // The other ranks, until each has stopped; once interrupted, for at most
  // 2 s more (mpirun kills its ranks soon after it forwards a signal).
  std::optional<Clock::time_point> giveUp;
  while (peers && !peers->allDone()) {
    if (!giveUp && interruptedBy() != 0) giveUp = Clock::now() + std::chrono::seconds(2);
    if (giveUp && Clock::now() > *giveUp) break;
    peers->poll(std::chrono::milliseconds(50), handle);
    writeReady();
    showProgress();
  }
  writeReady();
  const std::size_t written = outcomes.size();
  out.signal = interruptedBy();
  const bool interrupted = written < docs.size();
  TXL_CHECK(!interrupted || out.signal != 0,
            "documents without a result after every rank finished, the first: document " + std::to_string(written) +
                " of rank " + std::to_string(share[written]) + "'s share");
  if (!interrupted) out.signal = 0;
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  if (interrupted) sink->stop();
  else sink->commit();
  out.partialPath = interrupted ? sink->partialPath() : "";
  out.ranksUnfinished = interrupted && peers && !peers->allDone();

  // The totals, over every document of the output in input order.
  std::int64_t tokensAll = 0, failed = 0;
  std::size_t scoredHere = 0;  // documents of the output this run scored
  double nllSum = 0;
  for (const DocumentOutcome& o : outcomes) {
    if (!o.score) {
      ++failed;
      continue;
    }
    if (!o.resumed) ++scoredHere;
    tokensAll += o.score->tokens;
    nllSum += o.score->nllSum;
  }
  out.summary = documentSummary({.file = job.source,
                                 .documents = docs.size(),
                                 .scored = scoredHere,
                                 .resumed = resumed,
                                 .failed = failed,
                                 .tokens = tokensAll,
                                 .nllSum = nllSum,
                                 .seconds = seconds,
                                 .scoredAll = scoredAll,
                                 .predicted = predictedAll,
                                 .ranks = ranks,
                                 .threads = job.threads,
                                 // the documents whose lines are out, in input order (resumed ones included)
                                 .written = interrupted ? std::optional<std::size_t>(written) : std::nullopt},
                                setting);
  return out;
}

nlohmann::json documentSummary(const DocumentTotals& t, const Setting& setting) {
  const double perToken = t.tokens > 0 ? t.nllSum / double(t.tokens) : 0.0;
  nlohmann::json j = {{"file", t.file},
                      {"documents", t.documents},
                      {"scored", t.scored},
                      {"resumed", t.resumed},
                      {"failed", t.failed},
                      {"tokens", t.tokens},
                      {"nll_sum", t.nllSum},
                      {"nll_per_token", perToken},
                      {"perplexity", std::exp(perToken)},
                      {"bits_per_token", perToken / std::log(2.0)},
                      {"seconds", t.seconds},
                      {"documents_per_second", t.seconds > 0 ? double(t.scoredAll) / t.seconds : 0.0},
                      {"tokens_per_second", t.seconds > 0 ? double(t.predicted) / t.seconds : 0.0},
                      {"ranks", t.ranks},
                      {"threads", t.threads},
                      {"batch", setting.batch},
                      {"qlen", setting.qlen},
                      {"mem_len", setting.memLen}};
  if (t.written) {
    j["interrupted"] = true;
    j["written"] = *t.written;
  }
  return j;
}

std::string documentSummaryLine(const nlohmann::json& j) {
  const bool interrupted = j.contains("interrupted");
  const auto ranks = j["ranks"].get<int>();
  std::ostringstream line;
  line << "txlc: score: " << (interrupted ? std::to_string(j["written"].get<std::size_t>()) + " of " : "")
       << j["documents"].get<std::size_t>() << " documents (" << j["failed"].get<std::int64_t>() << " with errors, "
       << j["resumed"].get<std::size_t>() << " resumed), " << j["tokens"].get<std::int64_t>() << " tokens, nll_sum "
       << std::setprecision(10) << j["nll_sum"].get<double>() << ", " << std::setprecision(4)
       << j["bits_per_token"].get<double>() << " bits/token; " << std::fixed << std::setprecision(1)
       << j["documents_per_second"].get<double>() << " documents/s, " << std::setprecision(0)
       << j["tokens_per_second"].get<double>() << " tokens/s on " << ranks << (ranks == 1 ? " rank" : " ranks");
  return line.str();
}

}  // namespace txl::driver
