// tests/driver/scorer_test.cpp - scoreTokens(): stream cutting, segment walk, and the memory's effect.
#include <catch2/catch.hpp>

#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>

#include "frontend/model_spec.h"
#include "frontend/weights.h"
#include "ir/check.h"
#include "driver/compile.h"
#include "driver/scorer.h"
#include "tests/driver/tiny_model.h"

using namespace txl;
using namespace txl::driver;
using txl::testing::sequence;
using txl::testing::tinySpec;

namespace {

ScoreResult score(const frontend::ModelSpec& spec, std::span<const std::int64_t> ids, std::int64_t batch,
                  std::int64_t qlen, std::int64_t memLen, bool perToken = false) {
  const Model m = modelFrom(spec, frontend::randomWeights(spec, 1));
  Setting setting = defaultSetting(m);
  setting.batch = batch;
  setting.memLen = memLen;
  setting.backend = "reference";
  setting.pipeline.passes = std::vector<std::string>{};  // the literal graph: this tests the scorer, not the passes
  resolvePipeline(setting);
  auto model = compile(m, setting);
  backend::Session session(model);
  ScoreOptions so;
  so.qlen = qlen;
  so.perToken = perToken;
  return scoreTokens(session, ids, so);
}

}  // namespace

TEST_CASE("scoring predicts every token after the first, in segments with the last one shorter", "[scorer]") {
  auto spec = tinySpec();
  auto ids = sequence(23, spec.n_token);
  ScoreResult r = score(spec, ids, 1, 5, 5, true);
  CHECK(r.scored == 22);
  CHECK(r.segments == 5);  // 5 + 5 + 5 + 5 + 2
  CHECK(r.dropped == 0);
  REQUIRE(r.perToken.size() == 22);
  CHECK(std::accumulate(r.perToken.begin(), r.perToken.end(), 0.0) == Approx(r.nllSum).epsilon(1e-6));
  CHECK(r.nllSum / 22 > 0);
}

TEST_CASE("with memory holding the whole past, segment length does not change the score", "[scorer]") {
  auto spec = tinySpec();
  auto ids = sequence(25, spec.n_token);
  ScoreResult whole = score(spec, ids, 1, 24, 0);   // one segment
  ScoreResult pieces = score(spec, ids, 1, 4, 24);  // six segments, nothing forgotten
  CHECK(pieces.scored == whole.scored);
  CHECK(pieces.nllSum == Approx(whole.nllSum).epsilon(1e-5));
  ScoreResult forgetful = score(spec, ids, 1, 4, 0);  // no memory: a different (worse-informed) score
  CHECK(forgetful.nllSum != Approx(whole.nllSum).epsilon(1e-5));
}

TEST_CASE("batch cuts contiguous streams and drops the remainder", "[scorer]") {
  auto spec = tinySpec();
  auto ids = sequence(23, spec.n_token);
  ScoreResult r = score(spec, ids, 3, 4, 4, true);
  CHECK(r.streamLength == 7);
  CHECK(r.dropped == 2);
  CHECK(r.scored == 18);
  // Stream 1 alone (tokens 7..13) scores what it scored inside the batch.
  std::vector<std::int64_t> one(ids.begin() + 7, ids.begin() + 14);
  ScoreResult alone = score(spec, one, 1, 4, 4, true);
  for (int t = 0; t < 6; ++t)
    CHECK(alone.perToken[std::size_t(t)] == Approx(r.perToken[std::size_t(6 + t)]).epsilon(1e-5));
}

TEST_CASE("too few tokens to predict anything is an error naming the input", "[scorer]") {
  auto spec = tinySpec();
  std::vector<std::int64_t> ids = {1, 2, 3};
  REQUIRE_THROWS_WITH(score(spec, ids, 2, 4, 4),
                      "input: 3 tokens, expected at least 4 (2 per stream with batch 2) to predict anything");
}
