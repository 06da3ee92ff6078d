// tests/session/session_test.cpp - sessions: memory forms, in-place recurrence, state save/restore.
#include <catch2/catch.hpp>
#include <cstring>
#include <random>

#include "backend/session.h"
#include "frontend/model_spec.h"
#include "frontend/weights.h"
#include "ir/check.h"
#include "driver/compile.h"

using namespace txl;

namespace {

frontend::ModelSpec tinySpec(std::int64_t memLen, bool preNorm = false) {
  nlohmann::json j = {{"n_token", 37},        {"n_layer", 2},    {"n_head", 3},   {"d_model", 16},
                      {"d_head", 5},          {"d_inner", 24},   {"tgt_len", 4},  {"mem_len", memLen},
                      {"pre_lnorm", preNorm}, {"untie_r", true}, {"clamp_len", 6}};
  return frontend::parseModelSpec(j, "tiny.json");
}

std::shared_ptr<backend::CompiledModel> compile(const frontend::ModelSpec& spec, const std::string& backend,
                                                const std::string& memory, bool literal = false) {
  const driver::Model model = driver::modelFrom(spec, frontend::randomWeights(spec, 7));
  driver::Setting setting = driver::defaultSetting(model);
  setting.backend = backend;
  if (literal) setting.pipeline.passes = std::vector<std::string>{};
  if (memory == "hidden") setting.pipeline.memory = ir::MemoryForm::Hidden;
  driver::resolvePipeline(setting);
  setting.batch = 2;
  return driver::compile(model, setting);
}

ir::Tensor randomIds(std::mt19937& rng, std::int64_t qlen, std::int64_t batch, std::int64_t n) {
  ir::Tensor t = ir::Tensor::zeros({ir::DType::I64, {qlen, batch}});
  for (auto& v : t.span<std::int64_t>()) v = std::int64_t(rng() % std::uint32_t(n));
  return t;
}

// Runs `segments` segments of varying length; returns every hidden state and NLL, concatenated.
std::vector<float> stream(backend::Session& s, int segments, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<float> out;
  for (int k = 0; k < segments; ++k) {
    std::int64_t qlen = 1 + k % 4;
    ir::Tensor tokens = randomIds(rng, qlen, 2, 37), targets = randomIds(rng, qlen, 2, 37);
    auto r = s.forward(tokens, &targets, false);
    out.insert(out.end(), r.hidden->span<float>().begin(), r.hidden->span<float>().end());
    out.insert(out.end(), r.nll->span<float>().begin(), r.nll->span<float>().end());
  }
  return out;
}

double maxRelDiff(const std::vector<float>& a, const std::vector<float>& b) {
  REQUIRE(a.size() == b.size());
  double worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    worst = std::max(worst, std::abs(double(a[i]) - b[i]) / (1e-3 + std::abs(double(b[i]))));
  return worst;
}

}  // namespace

TEST_CASE("the kv memory form computes what the hidden form and the literal graph compute") {
  for (bool preNorm : {false, true}) {
    INFO("pre_lnorm " << preNorm);
    auto spec = tinySpec(5, preNorm);
    backend::Session literal(compile(spec, "reference", "hidden", true));
    backend::Session hidden(compile(spec, "reference", "hidden"));
    backend::Session kv(compile(spec, "onednn", "kv"));
    auto want = stream(literal, 9, 1);
    CHECK(maxRelDiff(stream(hidden, 9, 1), want) < 1e-4);
    CHECK(maxRelDiff(stream(kv, 9, 1), want) < 1e-4);
    // The kv form remembers keys and values (2·H·D wide) and drops the never-read last slot.
    REQUIRE(kv.layout().size() == 2);
    CHECK(kv.layout()[0].rowShape == ir::Shape{2, 30});
    CHECK(hidden.layout().size() == 3);
    CHECK(hidden.layout()[0].rowShape == ir::Shape{2, 16});
    CHECK(hidden.layout()[0].windowed);
    CHECK_FALSE(literal.layout()[0].windowed);
  }
}

TEST_CASE("the per-segment memory update does not grow with mem_len") {
  // Rows moved by the session per segment and slot, amortized: the window
  // design moves mem_len rows once every mem_len / qlen segments.
  auto rowsPerSegment = [](std::int64_t memLen) {
    auto spec = tinySpec(memLen);
    backend::Session s(compile(spec, "onednn", "kv"));
    std::mt19937 rng(3);
    const int segments = 600;
    for (int k = 0; k < segments; ++k) {
      ir::Tensor tokens = randomIds(rng, 4, 2, 37);
      s.forward(tokens, nullptr, false);
    }
    return double(s.stateRowsMoved()) / segments / double(s.layout().size());
  };
  double small = rowsPerSegment(8), large = rowsPerSegment(256);
  INFO("rows moved per segment and slot: mem_len 8 " << small << ", mem_len 256 " << large);
  CHECK(small <= 4.0 * 1.5);
  CHECK(large <= 4.0 * 1.5);
  // The literal form copies the whole memory every segment: mem_len rows.
  auto spec = tinySpec(256);
  backend::Session literal(compile(spec, "onednn", "hidden", true));
  std::mt19937 rng(3);
  for (int k = 0; k < 100; ++k) literal.forward(randomIds(rng, 4, 2, 37), nullptr, false);
  CHECK(double(literal.stateRowsMoved()) / 100 / double(literal.layout().size()) > 100);
}

TEST_CASE("a saved and restored session continues bit for bit") {
  for (std::string memory : {"kv", "hidden"}) {
    INFO("memory " << memory);
    auto spec = tinySpec(6);
    auto model = compile(spec, "onednn", memory);
    backend::Session a(model), b(model);
    stream(a, 5, 11);
    stream(b, 5, 11);
    auto state = a.saveState();
    auto fromA = stream(a, 6, 12);
    backend::Session c(model);
    c.loadState(state);
    auto fromC = stream(c, 6, 12);
    REQUIRE(fromA.size() == fromC.size());
    CHECK(std::memcmp(fromA.data(), fromC.data(), fromA.size() * sizeof(float)) == 0);
    // reset() starts a fresh stream: the same as a new session.
    b.reset();
    backend::Session fresh(model);
    auto x = stream(b, 3, 13), y = stream(fresh, 3, 13);
    CHECK(std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) == 0);
  }
}

TEST_CASE("a state for another model is refused with the tensor named") {
  auto model = compile(tinySpec(6), "reference", "kv");
  auto other = compile(tinySpec(6), "reference", "hidden");
  backend::Session a(model), b(other);
  stream(a, 2, 1);
  CHECK_THROWS_WITH(b.loadState(a.saveState()), Catch::Contains("state: tensor 'mem.0': expected f32[mlen <= 6,2,16]"));
}

namespace {

// The same model with warm-up padding switched off: one plan per (qlen, mlen).
std::shared_ptr<backend::CompiledModel> unpadded(const std::shared_ptr<backend::CompiledModel>& model) {
  backend::ModelInfo info = model->info();
  info.padWarmup = false;
  std::shared_ptr<backend::Executor> executor(std::shared_ptr<backend::Executor>{}, &model->executor());
  return std::make_shared<backend::CompiledModel>(
      info, model->weights(), executor,
      [model](const ir::Segment& k, ir::ConstantEvaluator* c) { return model->buildGraph(k, c); });
}

}  // namespace

TEST_CASE("session: warm-up runs one padded plan per qlen and matches one plan per mlen", "[session]") {
  for (const bool sameLength : {false, true})
    for (const std::string form : {"kv", "hidden", "literal"})
      for (const std::string backend : {"reference", "onednn"}) {
        INFO(backend << ", " << form << ", same_length " << sameLength);
        frontend::ModelSpec spec = tinySpec(8);
        spec.same_length = sameLength;
        auto model = compile(spec, backend, form == "literal" ? "hidden" : form, form == "literal");
        REQUIRE(model->info().padWarmup);
        backend::Session padded(model), plain(unpadded(model));
        std::mt19937 rng(5);
        // A segment long enough for the fused attention (rel_attention, on a
        // padded plan with every remembered row padding), one-token steps
        // through the whole warm-up, then longer segments and a restart:
        // mlen takes every value 0..8.
        std::vector<std::int64_t> lengths{6};
        lengths.insert(lengths.end(), 10, 1);
        lengths.insert(lengths.end(), {3, 2, 5});
        for (int round = 0; round < 2; ++round) {
          for (std::int64_t q : lengths) {
            ir::Tensor tokens = randomIds(rng, q, 2, 37), targets = randomIds(rng, q, 2, 37);
            auto a = padded.forward(tokens, &targets, true);
            auto b = plain.forward(tokens, &targets, true);
            std::vector<float> x(a.nll->span<float>().begin(), a.nll->span<float>().end()),
                y(b.nll->span<float>().begin(), b.nll->span<float>().end());
            x.insert(x.end(), a.hidden->span<float>().begin(), a.hidden->span<float>().end());
            y.insert(y.end(), b.hidden->span<float>().begin(), b.hidden->span<float>().end());
            REQUIRE(maxRelDiff(x, y) < 1e-5);
            REQUIRE(padded.mlen() == plain.mlen());
          }
          for (const auto& slot : padded.layout()) {
            const auto m1 = padded.memory(slot.slot), m2 = plain.memory(slot.slot);
            REQUIRE(m1.type() == m2.type());
            REQUIRE(std::memcmp(m1.raw(), m2.raw(), m1.bytes()) == 0);  // copies of the same rows
          }
          padded.reset();
          plain.reset();
        }
        // qlen 6, 1, 3, 2, 5: a padded plan and a full-memory plan each at most.
        CHECK(padded.planCount() <= 10);
        CHECK(plain.planCount() > padded.planCount());
      }
}

TEST_CASE("session: a state restored mid warm-up continues like the original", "[session]") {
  auto model = compile(tinySpec(8), "onednn", "kv");
  backend::Session a(model), b(model);
  std::mt19937 rng(9);
  std::vector<ir::Tensor> tokens;
  for (int i = 0; i < 8; ++i) tokens.push_back(randomIds(rng, 1 + i % 3, 2, 37));
  for (int i = 0; i < 3; ++i) a.forward(tokens[i]);
  REQUIRE(a.mlen() < 8);
  b.loadState(a.saveState());
  for (int i = 3; i < 8; ++i) {
    auto x = a.forward(tokens[i]);
    std::vector<float> hx(x.hidden->span<float>().begin(), x.hidden->span<float>().end());
    auto y = b.forward(tokens[i]);
    std::vector<float> hy(y.hidden->span<float>().begin(), y.hidden->span<float>().end());
    REQUIRE(hx == hy);
  }
}

// The session's memory slots come from the spec and the setting
// (driver::memorySlots), not from a graph: they must be the slots every
// optimized graph of the setting reads and writes, in every memory form and
// pass order, or the ABI check refuses the graph before it runs.
TEST_CASE("driver: the declared memory slots are the optimized graphs' slots", "[session][driver]") {
  using Passes = std::optional<std::vector<std::string>>;
  const std::vector<std::pair<Passes, std::string>> pipelines = {
      {std::nullopt, ""},                                                         // default: kv, windowed
      {std::nullopt, "cache-projected-memory"},                                   // hidden, windowed
      {std::vector<std::string>{}, ""},                                           // literal: hidden
      {std::vector<std::string>{"cache-projected-memory"}, ""},                   // kv, not windowed
      {std::vector<std::string>{"window-memory", "cache-projected-memory"}, ""},  // window first: hidden
  };
  for (const bool preNorm : {false, true})
    for (const auto& [passes, disabled] : pipelines) {
      const frontend::ModelSpec spec = tinySpec(6, preNorm);
      driver::Setting s = driver::defaultSetting(driver::modelFrom(spec, {}));
      s.batch = 2;
      s.backend = "reference";
      s.pipeline.passes = passes;
      if (!disabled.empty()) s.pipeline.disabled.insert(disabled);
      driver::resolvePipeline(s);
      const std::vector<ir::MemorySlot> declared = driver::memorySlots(spec, s);
      INFO("pre_lnorm " << preNorm << ", " << (passes ? std::to_string(passes->size()) + " passes" : "default")
                        << ", form " << driver::memoryForm(s));
      REQUIRE(!declared.empty());
      for (const std::int64_t mlen : {std::int64_t(3), std::int64_t(6)})
        CHECK(ir::memorySlots(driver::buildOptimizedGraph(spec, s, driver::segmentOf(s, 2, mlen))) == declared);
    }
}

namespace {

// NLL and hidden state of stream `b` of one segment's result.
std::vector<float> streamValues(const backend::ForwardResult& r, std::int64_t b, std::int64_t batch) {
  std::vector<float> out;
  const std::int64_t q = r.nll->shape()[0], d = r.hidden->shape()[2];
  for (std::int64_t t = 0; t < q; ++t) {
    out.push_back(r.nll->data<float>()[t * batch + b]);
    const float* h = r.hidden->data<float>() + (t * batch + b) * d;
    out.insert(out.end(), h, h + d);
  }
  return out;
}

// tinySpec(8) compiled for `backend`, memory form `form`, initial memory `initial`, `batch` streams, `qlen`.
std::shared_ptr<backend::CompiledModel> tinyModel(const std::string& backend, const std::string& form,
                                                  const std::string& initial, std::int64_t batch, std::int64_t qlen) {
  const frontend::ModelSpec spec = tinySpec(8);
  const driver::Model model = driver::modelFrom(spec, frontend::randomWeights(spec, 7));
  driver::Setting setting = driver::defaultSetting(model);
  setting.backend = backend;
  if (form == "hidden") setting.pipeline.memory = ir::MemoryForm::Hidden;
  driver::resolvePipeline(setting);
  if (initial == "zeros") setting.initialMemory = frontend::InitialMemory::Zeros;
  setting.batch = batch;
  setting.qlen = qlen;
  return driver::compile(model, setting);
}

}  // namespace

TEST_CASE("session: a stream reset alone computes what a fresh stream computes, beside any neighbour", "[session]") {
  for (const std::string initial : {"empty", "zeros"})
    for (const std::string form : {"kv", "hidden"})
      for (const std::string backend : {"reference", "onednn"}) {
        INFO(backend << ", " << form << ", initial memory " << initial);
        auto compiled = tinyModel(backend, form, initial, 2, 6);
        // a: stream 0 runs X throughout; stream 1 runs Y for 3 segments, then
        // is reset alone and runs Z. b: Z on stream 0 from the start, W beside it.
        backend::Session a(compiled), b(compiled);
        a.padAlways(true);
        b.padAlways(true);
        std::mt19937 rng(11);
        std::vector<ir::Tensor> z;
        for (int k = 0; k < 4; ++k) z.push_back(randomIds(rng, 7, 1, 37));
        const auto feed = [](backend::Session& s, const ir::Tensor& mine, std::int64_t stream, std::mt19937& r) {
          ir::Tensor ids = randomIds(r, 7, 2, 37);
          for (std::int64_t t = 0; t < 7; ++t) ids.data<std::int64_t>()[t * 2 + stream] = mine.data<std::int64_t>()[t];
          ir::Tensor tokens = ir::Tensor::zeros({ir::DType::I64, {6, 2}}), targets = tokens.clone();
          std::memcpy(tokens.raw(), ids.raw(), tokens.bytes());
          std::memcpy(targets.raw(), ids.data<std::int64_t>() + 2, targets.bytes());
          return s.forward(tokens, &targets, false);
        };
        for (int k = 0; k < 3; ++k) feed(a, randomIds(rng, 7, 1, 37), 1, rng);
        a.resetStream(1);
        CHECK(a.streamMlen(1) == (initial == "zeros" ? 8 : 0));
        CHECK(a.streamMlen(0) == 8);
        for (int k = 0; k < 4; ++k) {
          const std::vector<float> x = streamValues(feed(a, z[std::size_t(k)], 1, rng), 1, 2);
          const std::vector<float> y = streamValues(feed(b, z[std::size_t(k)], 0, rng), 0, 2);
          REQUIRE(x.size() == y.size());
          REQUIRE(std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) == 0);
        }
        CHECK(a.planCount() == 1);
      }
}

TEST_CASE("session: a stream moved between sessions of batch 1 and 2 goes on as if it had stayed", "[session]") {
  for (const std::string initial : {"empty", "zeros"})
    for (const std::string form : {"kv", "hidden"})
      for (const std::string backend : {"reference", "onednn"}) {
        INFO(backend << ", " << form << ", initial memory " << initial);
        auto one = tinyModel(backend, form, initial, 1, 3), two = tinyModel(backend, form, initial, 2, 3);
        std::mt19937 rng(5);
        // Segment of `len` tokens with targets for a session of `batch`, stream `lane` taking `mine`.
        const auto run = [&](backend::Session& s, std::int64_t batch, std::int64_t lane, const ir::Tensor& mine) {
          const std::int64_t len = mine.shape()[0] - 1;
          ir::Tensor tokens = randomIds(rng, len, batch, 37), targets = randomIds(rng, len, batch, 37);
          for (std::int64_t t = 0; t < len; ++t) {
            tokens.data<std::int64_t>()[t * batch + lane] = mine.data<std::int64_t>()[t];
            targets.data<std::int64_t>()[t * batch + lane] = mine.data<std::int64_t>()[t + 1];
          }
          return streamValues(s.forward(tokens, &targets, false), lane, batch);
        };
        // The stream runs 2 segments alone (5 of 8 positions remembered), its
        // neighbour-to-be 4 (full); then it moves into lane 0 beside it, then back.
        backend::Session alone(one), pair(two), back(one);
        for (std::int64_t len : {2, 3}) run(alone, 1, 0, randomIds(rng, len + 1, 1, 37));
        for (int k = 0; k < 4; ++k) run(pair, 2, 1, randomIds(rng, 4, 1, 37));
        const ir::TensorMap state = alone.saveState();
        pair.loadStream(0, state);
        CHECK(pair.streamMlen(0) == alone.mlen());
        CHECK(pair.streamMlen(1) == 8);
        const ir::TensorMap again = pair.saveStream(0);  // exact both ways
        for (const auto& [name, t] : state) {
          REQUIRE(again.at(name).type() == t.type());
          CHECK(std::memcmp(again.at(name).raw(), t.raw(), t.bytes()) == 0);
        }
        for (int k = 0; k < 4; ++k) {
          const ir::Tensor mine = randomIds(rng, 3 + k % 2, 1, 37);
          CHECK(maxRelDiff(run(pair, 2, 0, mine), run(alone, 1, 0, mine)) < 1e-4);
        }
        back.loadState(pair.saveStream(0));
        CHECK(back.mlen() == alone.mlen());
        for (int k = 0; k < 3; ++k) {
          const ir::Tensor mine = randomIds(rng, 4, 1, 37);
          CHECK(maxRelDiff(run(back, 1, 0, mine), run(alone, 1, 0, mine)) < 1e-4);
        }
        CHECK_THROWS_AS(pair.loadStream(2, state), txl::Error);
        CHECK_THROWS_AS(pair.loadStream(0, pair.saveState()), txl::Error);  // a batch-2 state is not one stream's
      }
}

TEST_CASE("session: copyStream moves the rows loadStream(saveStream()) would, at every precision", "[session]") {
  for (const std::string precision : {"f32", "bf16"})
    for (const std::string form : {"kv", "hidden"}) {
      INFO(precision << ", " << form);
      const frontend::ModelSpec spec = tinySpec(8);
      const driver::Model model = driver::modelFrom(spec, frontend::randomWeights(spec, 7));
      const auto compiled = [&](std::int64_t batch) {
        driver::Setting s = driver::defaultSetting(model);
        s.precision = driver::parsePrecision(precision, "precision");
        if (form == "hidden") s.pipeline.memory = ir::MemoryForm::Hidden;
        driver::resolvePipeline(s);
        s.batch = batch;
        s.qlen = 3;
        return driver::compile(model, s);
      };
      auto one = compiled(1), two = compiled(2);
      std::mt19937 rng(9);
      backend::Session alone(one), viaState(two), viaCopy(two);
      for (std::int64_t len : {2, 3}) {
        const ir::Tensor tokens = randomIds(rng, len, 1, 37);
        alone.forward(tokens, nullptr, false);
      }
      const ir::Tensor pairTokens = randomIds(rng, 3, 2, 37);
      for (backend::Session* s : {&viaState, &viaCopy})
        for (int k = 0; k < 4; ++k) s->forward(pairTokens, nullptr, false);
      viaState.loadStream(1, alone.saveState());
      viaCopy.copyStream(1, alone, 0);
      CHECK(viaCopy.streamMlen(1) == alone.mlen());
      for (std::int64_t b : {0, 1}) {
        const ir::TensorMap x = viaState.saveStream(b), y = viaCopy.saveStream(b);
        for (const auto& [name, t] : x) CHECK(std::memcmp(y.at(name).raw(), t.raw(), t.bytes()) == 0);
      }
      backend::Session back(one);  // and out of the pool again
      back.copyStream(0, viaCopy, 1);
      const ir::TensorMap x = back.saveState(), y = alone.saveState();
      for (const auto& [name, t] : y) CHECK(std::memcmp(x.at(name).raw(), t.raw(), t.bytes()) == 0);
      CHECK_THROWS_AS(viaCopy.copyStream(2, alone, 0), txl::Error);
    }
  // Sessions whose slots differ (another memory form) are refused.
  auto kv = tinyModel("onednn", "kv", "empty", 1, 3), hidden = tinyModel("onednn", "hidden", "empty", 2, 3);
  backend::Session a(kv), b(hidden);
  CHECK_THROWS_AS(b.copyStream(0, a, 0), txl::Error);
}
