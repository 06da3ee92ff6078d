// tests/driver/documents_test.cpp - documents mode (reading, validation, the packing scheduler, resume
// prefixes) and the single-process side of driver/distributed.h.
#include <catch2/catch.hpp>
#include <stdlib.h>

#include <cmath>
#include <fstream>
#include <map>

#include "driver/compile.h"
#include "driver/distributed.h"
#include "driver/documents.h"
#include "driver/score_job.h"
#include "driver/scorer.h"
#include "frontend/model_spec.h"
#include "frontend/weights.h"
#include "ir/check.h"
#include "tests/driver/tiny_model.h"

using namespace txl;
using namespace txl::driver;
using txl::testing::sequence;
using txl::testing::tinySpec;

namespace {

std::shared_ptr<backend::CompiledModel> compiled(const frontend::ModelSpec& spec, std::int64_t batch,
                                                 const std::string& backend, std::int64_t qlen) {
  const Model m = modelFrom(spec, frontend::randomWeights(spec, 3));
  Setting s = defaultSetting(m);
  s.batch = batch;
  s.qlen = qlen;
  s.backend = backend;
  return compile(m, s);
}

// The documents scored, by index; `stopAfter` segments (-1: never) end the run early.
std::map<std::size_t, DocumentScore> scoreAll(const std::shared_ptr<backend::CompiledModel>& model,
                                              const std::vector<std::vector<std::int64_t>>& docs, std::int64_t qlen,
                                              int stopAfter = -1, bool* complete = nullptr) {
  std::vector<std::span<const std::int64_t>> spans(docs.begin(), docs.end());
  backend::Session session(model);
  std::map<std::size_t, DocumentScore> out;
  PackOptions po;
  po.qlen = qlen;
  int segments = 0;
  po.afterSegment = [&](std::int64_t) { ++segments; };
  if (stopAfter >= 0) po.stop = [&] { return segments >= stopAfter; };
  const bool all = scoreDocuments(session, spans, po, [&](std::size_t i, const DocumentScore& s) {
    REQUIRE(out.count(i) == 0);
    out[i] = s;
  });
  if (complete) *complete = all;
  return out;
}

}  // namespace

TEST_CASE("documents: lines or JSON Lines, ids, and the problems of a line", "[documents]") {
  auto lines = parseDocuments("first\n\n{\"text\": \"x\"}\nlast", "corpus.txt", DocumentFormat::Auto);
  REQUIRE(lines.size() == 4);
  CHECK(lines[0].id == 1);
  CHECK(lines[2].text == "{\"text\": \"x\"}");  // the first line is not JSON: every line is a document
  CHECK(lines[3].text == "last");
  CHECK(parseDocuments("a\nb\n", "c.txt", DocumentFormat::Lines).size() == 2);  // a trailing break ends the last

  auto jl = parseDocuments("{\"id\": \"d1\", \"text\": \"ab\"}\n{\"text\": \"cd\"}\n[1]\n{\"id\": 7}\nnope\n",
                           "corpus.txt", DocumentFormat::Auto);
  REQUIRE(jl.size() == 5);
  CHECK(jl[0].id == "d1");
  CHECK(jl[0].text == "ab");
  CHECK(jl[1].id == 2);  // no id: the line number
  CHECK(jl[2].error.find("expected a JSON object") != std::string::npos);
  CHECK(jl[3].id == 7);
  CHECK(jl[3].error.find("expected a \"text\" string, got none") != std::string::npos);
  CHECK(jl[4].error.find("text that is not JSON") != std::string::npos);
  CHECK(parseDocuments("plain\n", "c.jsonl", DocumentFormat::Auto)[0].error != "");  // .jsonl: JSON Lines
  CHECK_THROWS_AS(documentFormat("xml"), Error);
}

TEST_CASE("documents: what cannot be scored is an error, with the reason", "[documents]") {
  const auto vocab = frontend::Vocabulary::fromSymbols(frontend::VocabKind::Char, {"a", "b", "c", " "}, "v.json");
  const auto err = [&](const std::string& text, std::int64_t limit = 100) {
    Document d;
    d.text = text;
    return encodeDocument(d, vocab, {limit}).error;
  };
  CHECK(err("") == "empty document");
  CHECK(err("a") == "1 token, expected at least 2 to predict anything");
  CHECK(err(std::string("ab\0c", 4)).find("binary: a NUL byte at byte 2") == 0);
  CHECK(err("ab\xC3").find("not UTF-8 text: byte 0xC3 at byte 2") == 0);
  CHECK(err("ab\xC0\x80").find("not UTF-8") == 0);  // overlong
  CHECK(err("abd").find("line 1 column 3: character 'd'") == 0);
  CHECK(err("abcabc", 5) == "6 tokens, over the limit of 5");
  CHECK(err("ab c") == "");
}

TEST_CASE("documents: a document's bits do not depend on its stream, its neighbours or the batch", "[documents]") {
  const auto spec = tinySpec();
  REQUIRE(spec.mem_len > 0);
  std::vector<std::vector<std::int64_t>> docs;
  for (std::int64_t k = 0; k < 11; ++k) docs.push_back(sequence(2 + (k * 7) % 23, spec.n_token, k));
  for (const std::string backend : {"reference", "onednn"}) {
    INFO(backend);
    const std::int64_t qlen = 5;
    const auto one = scoreAll(compiled(spec, 1, backend, qlen), docs, qlen);
    const auto packed = scoreAll(compiled(spec, 3, backend, qlen), docs, qlen);
    // The same documents in another order: other neighbours, other streams.
    std::vector<std::vector<std::int64_t>> reversed(docs.rbegin(), docs.rend());
    const auto other = scoreAll(compiled(spec, 3, backend, qlen), reversed, qlen);
    REQUIRE(one.size() == docs.size());
    for (std::size_t i = 0; i < docs.size(); ++i) {
      INFO("document " << i);
      CHECK(one.at(i).tokens == std::int64_t(docs[i].size()) - 1);
      CHECK(other.at(docs.size() - 1 - i).nllSum == packed.at(i).nllSum);  // bit for bit
      CHECK(one.at(i).nllSum == packed.at(i).nllSum);
      // As if it were its own file: scoreTokens on the document alone (its own plans), to rounding.
      backend::Session alone(compiled(spec, 1, backend, qlen));
      ScoreOptions so;
      so.qlen = qlen;
      const ScoreResult r = scoreTokens(alone, docs[i], so);
      CHECK(r.nllSum == Approx(one.at(i).nllSum).epsilon(1e-5));
    }
  }
}

TEST_CASE("documents: a stop before a segment ends the run with the documents done so far", "[documents]") {
  const auto spec = tinySpec();
  std::vector<std::vector<std::int64_t>> docs;
  for (std::int64_t k = 0; k < 9; ++k) docs.push_back(sequence(3 + (k * 5) % 17, spec.n_token, k));
  const std::int64_t qlen = 4;
  bool complete = false;
  const auto all = scoreAll(compiled(spec, 2, "onednn", qlen), docs, qlen, -1, &complete);
  CHECK(complete);
  REQUIRE(all.size() == docs.size());
  const auto none = scoreAll(compiled(spec, 2, "onednn", qlen), docs, qlen, 0, &complete);
  CHECK(!complete);
  CHECK(none.empty());
  const auto some = scoreAll(compiled(spec, 2, "onednn", qlen), docs, qlen, 3, &complete);
  CHECK(!complete);
  CHECK(!some.empty());
  CHECK(some.size() < docs.size());
  for (const auto& [i, s] : some) {  // what was done is what a complete run gives
    CHECK(s.tokens == all.at(i).tokens);
    CHECK(s.nllSum == all.at(i).nllSum);
  }
}

TEST_CASE("documents: the prefix an earlier output holds", "[documents]") {
  auto docs = parseDocuments("a\nb\nc\n", "c.txt", DocumentFormat::Lines);
  std::string out = documentLine(1, {3, 1.5}, 0) + "\n" + documentErrorLine(2, "empty document") + "\n{\"id\":3,\"tok";
  std::size_t bytes = 0;
  CHECK(completedPrefix(out, docs, "o.jsonl", &bytes) == 2);  // the torn third line is not counted
  CHECK(out.substr(0, bytes).back() == '\n');
  CHECK(completedPrefix("", docs, "o.jsonl") == 0);
  CHECK_THROWS_WITH(completedPrefix(documentLine(9, {3, 1.5}, 0) + "\n", docs, "o.jsonl"),
                    Catch::Contains("o.jsonl: line 1 is document 9, expected document 1"));
  // Figures no run writes are refused, not summed.
  for (const char* bad : {"{\"id\":1,\"tokens\":99999999999999999999,\"nll_sum\":3}\n",
                          "{\"id\":1,\"tokens\":-5,\"nll_sum\":3}\n", "{\"id\":1,\"tokens\":5,\"nll_sum\":-3}\n",
                          "{\"id\":1,\"tokens\":\"5\",\"nll_sum\":3}\n", "{\"id\":1,\"tokens\":5}\n"})
    CHECK_THROWS_WITH(completedPrefix(bad, docs, "o.jsonl"),
                      Catch::StartsWith("o.jsonl: line 1: expected \"tokens\" a positive integer"));
  const nlohmann::json j = nlohmann::json::parse(documentLine("x", {4, 0.1 + 0.2}, 2));
  CHECK(j["nll_sum"].get<double>() == 0.1 + 0.2);  // 17 digits: the bits survive the text
  CHECK(j["tokens"] == 4);
  CHECK(j["unk_tokens"] == 2);
  CHECK(j["bits_per_token"].get<double>() == Approx((0.1 + 0.2) / 4 / std::log(2.0)));
}

TEST_CASE("documents: the summary of a run, complete or interrupted", "[documents]") {
  Setting setting;
  setting.batch = 4;
  setting.qlen = 16;
  setting.memLen = 32;
  DocumentTotals t{.file = "c.txt",
                   .documents = 5,
                   .scored = 3,
                   .resumed = 1,
                   .failed = 1,
                   .tokens = 8,
                   .nllSum = 4.0,
                   .seconds = 2.0,
                   .scoredAll = 3,
                   .predicted = 10,
                   .ranks = 2,
                   .threads = 6,
                   .written = std::nullopt};
  nlohmann::json j = documentSummary(t, setting);
  const std::vector<std::string> keys = {"file",
                                         "documents",
                                         "scored",
                                         "resumed",
                                         "failed",
                                         "tokens",
                                         "nll_sum",
                                         "nll_per_token",
                                         "perplexity",
                                         "bits_per_token",
                                         "seconds",
                                         "documents_per_second",
                                         "tokens_per_second",
                                         "ranks",
                                         "threads",
                                         "batch",
                                         "qlen",
                                         "mem_len"};
  CHECK(j.size() == keys.size());
  for (const std::string& k : keys) CHECK(j.contains(k));
  CHECK(j["file"] == "c.txt");
  CHECK(j["documents"] == 5);
  CHECK(j["scored"] == 3);
  CHECK(j["resumed"] == 1);
  CHECK(j["failed"] == 1);
  CHECK(j["tokens"] == 8);
  CHECK(j["nll_per_token"].get<double>() == 0.5);
  CHECK(j["perplexity"].get<double>() == Approx(std::exp(0.5)));
  CHECK(j["bits_per_token"].get<double>() == Approx(0.5 / std::log(2.0)));
  CHECK(j["documents_per_second"].get<double>() == 1.5);
  CHECK(j["tokens_per_second"].get<double>() == 5.0);
  CHECK(j["ranks"] == 2);
  CHECK(j["threads"] == 6);
  CHECK(j["batch"] == 4);
  CHECK(j["qlen"] == 16);
  CHECK(j["mem_len"] == 32);
  CHECK(documentSummaryLine(j) ==
        "txlc: score: 5 documents (1 with errors, 1 resumed), 8 tokens, nll_sum 4, 0.7213 bits/token; "
        "1.5 documents/s, 5 tokens/s on 2 ranks");
  // Nothing scored in no time: zeros, not NaN.
  DocumentTotals none;
  none.file = "-";
  j = documentSummary(none, setting);
  CHECK(j["nll_per_token"].get<double>() == 0.0);
  CHECK(j["documents_per_second"].get<double>() == 0.0);
  CHECK(j["tokens_per_second"].get<double>() == 0.0);
  CHECK(!j.contains("interrupted"));
  // Interrupted: the lines out so far.
  t.written = 2;
  j = documentSummary(t, setting);
  CHECK(j["interrupted"] == true);
  CHECK(j["written"] == 2);
  CHECK(documentSummaryLine(j).starts_with("txlc: score: 2 of 5 documents"));
}

TEST_CASE("documents: a JSON line past the bounds is refused as it is parsed, naming the line", "[documents]") {
  const std::string deep = "{\"id\": " + std::string(100000, '[') + std::string(100000, ']') + ", \"text\": \"ab\"}\n";
  CHECK_THROWS_WITH(parseDocuments("{\"text\": \"ab\"}\n" + deep, "d.jsonl", DocumentFormat::Auto),
                    "d.jsonl: line 2: JSON nested deeper than 64 levels, expected at most 64");
  std::string wide = "{\"id\": [0";
  for (std::size_t k = 0; k < kMaxJsonLineValues; ++k) wide += ",0";
  CHECK_THROWS_WITH(parseDocuments(wide + "], \"text\": \"ab\"}", "d.jsonl", DocumentFormat::JsonLines),
                    Catch::StartsWith("d.jsonl: line 1: more than 1048576 JSON values"));
  const std::string big = "{\"id\": \"" + std::string(kMaxIdBytes, 'a') + "\", \"text\": \"ab\"}";
  CHECK_THROWS_WITH(parseDocuments(big, "d.jsonl", DocumentFormat::JsonLines),
                    "d.jsonl: line 1: an \"id\" of 4098 bytes as JSON, expected at most 4096");
  const std::string longLine = "{\"text\": \"" + std::string(kMaxJsonLineBytes, 'a') + "\"}";
  CHECK_THROWS_WITH(
      parseDocuments(longLine, "d.jsonl", DocumentFormat::JsonLines),
      "d.jsonl: line 1: a JSON line of " + std::to_string(longLine.size()) + " bytes, expected at most 67108864");
  // 64 levels and an id of 4096 bytes are within the bounds; plain lines are never parsed as JSON.
  const std::string ok = "{\"id\": " + std::string(63, '[') + std::string(63, ']') + ", \"text\": \"ab\"}";
  CHECK(parseDocuments(ok, "d.jsonl", DocumentFormat::JsonLines)[0].error.empty());
  CHECK(parseDocuments(deep, "d.txt", DocumentFormat::Lines).size() == 1);
  // An earlier output is held to the same bounds.
  const auto docs = parseDocuments("a\n", "c.txt", DocumentFormat::Lines);
  CHECK_THROWS_WITH(completedPrefix(deep, docs, "o.jsonl"), Catch::StartsWith("o.jsonl: line 1: JSON nested deeper"));
  // The fingerprint tells corpora apart, the same corpus read twice alike.
  CHECK(corpusFingerprint(docs) == corpusFingerprint(parseDocuments("a\n", "c.txt", DocumentFormat::Lines)));
  CHECK(corpusFingerprint(docs) != corpusFingerprint(parseDocuments("b\n", "c.txt", DocumentFormat::Lines)));
  CHECK(corpusFingerprint(parseDocuments("ab\n", "c.txt", DocumentFormat::Lines)) !=
        corpusFingerprint(parseDocuments("a\nb\n", "c.txt", DocumentFormat::Lines)));
}

TEST_CASE("distributed: a launcher is seen in the environment; alone, one process", "[distributed]") {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMIX_SIZE", "PMI_SIZE", "PMIX_RANK", "PMI_RANK"}) ::unsetenv(name);
  CHECK(launcherSize() == 0);
  const auto alone = joinProcesses();
  CHECK(alone->rank() == 0);
  CHECK(alone->size() == 1);
  CHECK(alone->firstFailure(0).rank == -1);
  CHECK(alone->firstFailure(3).code == 3);
  ::setenv("PMI_SIZE", "4", 1);
  CHECK(launcherSize() == 4);
  ::setenv("OMPI_COMM_WORLD_SIZE", "3", 1);
  CHECK(launcherSize() == 3);  // Open MPI's first
  if (!builtWithMpi()) CHECK_THROWS_WITH(joinProcesses(), Catch::Contains("this txlc was built without MPI"));
  ::unsetenv("OMPI_COMM_WORLD_SIZE");
  ::unsetenv("PMI_SIZE");
}
