// tests/session/initial_memory_test.cpp - Hugging Face's zero initial memory as
// a session state, and fully masked rows under each semantics.
#include <catch2/catch.hpp>
#include <cmath>
#include <random>

#include "backend/session.h"
#include "frontend/model_spec.h"
#include "frontend/weights.h"
#include "driver/compile.h"

using namespace txl;

namespace {

constexpr std::int64_t kBatch = 2, kVocab = 37;

frontend::ModelSpec spec(std::int64_t memLen, bool preNorm, const char* semantics, bool sameLength = false) {
  nlohmann::json j = {{"n_token", kVocab},
                      {"n_layer", 2},
                      {"n_head", 3},
                      {"d_model", 16},
                      {"d_head", 5},
                      {"d_inner", 24},
                      {"tgt_len", 4},
                      {"mem_len", memLen},
                      {"pre_lnorm", preNorm},
                      {"untie_r", true},
                      {"same_length", sameLength},
                      {"semantics", semantics}};
  return frontend::parseModelSpec(j, "tiny.json");
}

std::shared_ptr<backend::CompiledModel> compile(const frontend::ModelSpec& s, const frontend::WeightMap& w,
                                                const std::string& backend, const std::string& memory,
                                                std::optional<frontend::InitialMemory> initial = std::nullopt) {
  const driver::Model model = driver::modelFrom(s, w);
  driver::Setting setting = driver::defaultSetting(model);
  setting.backend = backend;
  if (memory == "literal") setting.pipeline.passes = std::vector<std::string>{};
  if (memory == "hidden") setting.pipeline.memory = ir::MemoryForm::Hidden;
  driver::resolvePipeline(setting);
  setting.batch = kBatch;
  if (initial) setting.initialMemory = *initial;
  return driver::compile(model, setting);
}

ir::Tensor ids(std::mt19937& rng, std::int64_t qlen) {
  ir::Tensor t = ir::Tensor::zeros({ir::DType::I64, {qlen, kBatch}});
  for (auto& v : t.span<std::int64_t>()) v = std::int64_t(rng() % std::uint32_t(kVocab));
  return t;
}

// Hidden states and NLLs of `segments` segments of qlen 4 (seeded tokens).
std::vector<float> run(backend::Session& s, int segments, unsigned seed = 1) {
  std::mt19937 rng(seed);
  std::vector<float> out;
  for (int k = 0; k < segments; ++k) {
    ir::Tensor tokens = ids(rng, 4), targets = ids(rng, 4);
    auto r = s.forward(tokens, &targets, false);
    out.insert(out.end(), r.hidden->span<float>().begin(), r.hidden->span<float>().end());
    out.insert(out.end(), r.nll->span<float>().begin(), r.nll->span<float>().end());
  }
  return out;
}

// Random weights with non-zero layer norm biases (randomWeights() starts them
// at 0, as PyTorch does): pre-norm, LayerNorm(0) is that bias.
frontend::WeightMap weights(const frontend::ModelSpec& s) {
  frontend::WeightMap w = frontend::randomWeights(s, 7);
  std::mt19937 rng(11);
  for (auto& [name, t] : w)
    if (name.ends_with("layer_norm.bias")) {
      ir::Tensor changed = t.clone();
      for (float& x : changed.span<float>()) x = float(rng() % 1000) / 1000.0f - 0.5f;
      t = changed;
    }
  return w;
}

double maxRelDiff(const std::vector<float>& a, const std::vector<float>& b) {
  REQUIRE(a.size() == b.size());
  double worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    worst = std::max(worst, std::abs(double(a[i]) - b[i]) / (1e-3 + std::abs(double(b[i]))));
  return worst;
}

}  // namespace

TEST_CASE("zero initial memory: mem_len zero layer inputs, in every memory form and executor", "[session]") {
  for (bool preNorm : {false, true}) {
    const auto s = spec(6, preNorm, "huggingface");
    const auto w = weights(s);
    // The literal graph on the reference interpreter is the definition; the
    // hidden form remembers zeros, the kv form the keys and values of a zero
    // input (not zero pre-norm: LayerNorm(0) is the layer norm's bias).
    backend::Session literal(compile(s, w, "reference", "literal"));
    REQUIRE(literal.mlen() == 6);
    const auto want = run(literal, 5);
    for (const char* backend : {"reference", "onednn"})
      for (const char* memory : {"kv", "hidden", "literal"}) {
        INFO(backend << " " << memory << " pre_lnorm " << preNorm);
        backend::Session session(compile(s, w, backend, memory));
        CHECK(session.mlen() == 6);
        CHECK(maxRelDiff(run(session, 5), want) < 1e-4);
      }
    // The zero rows matter: starting empty gives other numbers.
    backend::Session empty(compile(s, w, "reference", "literal", frontend::InitialMemory::Empty));
    CHECK(empty.mlen() == 0);
    CHECK(maxRelDiff(run(empty, 5), want) > 1e-2);
  }
}

TEST_CASE("zero initial memory adds no work after the first segment", "[session]") {
  const auto s = spec(6, true, "huggingface");
  const auto w = weights(s);
  for (const char* memory : {"kv", "hidden"}) {
    INFO(memory);
    backend::Session zeros(compile(s, w, "onednn", memory));
    backend::Session empty(compile(s, w, "onednn", memory, frontend::InitialMemory::Empty));
    run(empty, 2);  // warm: its memory is full from here on
    std::mt19937 rng(3);
    const backend::CompiledGraph* first = nullptr;
    const std::uint64_t compaction = zeros.layout().size() * 6;  // every slot's mem_len rows moved once
    const auto startZeros = zeros.stateRowsMoved(), startEmpty = empty.stateRowsMoved();
    for (int k = 0; k < 24; ++k) {
      ir::Tensor tokens = ids(rng, 4), targets = ids(rng, 4);
      const auto moved = zeros.stateRowsMoved();
      zeros.forward(tokens, &targets, false);
      empty.forward(tokens, &targets, false);
      if (!first) first = zeros.lastPlan();
      // One plan for every segment, the first included: the one a full memory runs.
      CHECK(zeros.lastPlan() == first);
      CHECK(zeros.planCount() == 1);
      CHECK(zeros.mlen() == 6);
      // Per segment nothing is copied but, now and then, the window's compaction.
      const auto step = zeros.stateRowsMoved() - moved;
      CHECK((step == 0 || step == compaction));
    }
    // As many rows moved as by a warm stream of the empty-start model (up to
    // where in its window period each stream is).
    const auto totalZeros = zeros.stateRowsMoved() - startZeros, totalEmpty = empty.stateRowsMoved() - startEmpty;
    CHECK(totalZeros <= totalEmpty + compaction);
    CHECK(totalEmpty <= totalZeros + compaction);
    CHECK(empty.planCount() > 1);  // its warm-up needed plans of its own
  }
}

TEST_CASE("zero initial memory: reset() and a saved state start the stream again", "[session]") {
  const auto s = spec(6, true, "huggingface");
  const auto w = weights(s);
  for (const char* memory : {"kv", "hidden"}) {
    INFO(memory);
    auto model = compile(s, w, "onednn", memory);
    backend::Session a(model);
    const auto fresh = a.saveState();
    const auto first = run(a, 3);
    a.reset();
    CHECK(a.mlen() == 6);
    CHECK(run(a, 3) == first);
    backend::Session b(model);
    run(b, 2, 9);
    b.loadState(fresh);
    CHECK(run(b, 3) == first);
  }
}

TEST_CASE("fully masked rows: refused with the authors' semantics, uniform with Hugging Face's", "[session]") {
  // same_length with no memory: no query sees any key.
  nlohmann::json j = {{"n_token", kVocab}, {"n_layer", 2}, {"n_head", 3},  {"d_model", 16},      {"d_head", 5},
                      {"d_inner", 24},     {"tgt_len", 4}, {"mem_len", 0}, {"same_length", true}};
  CHECK_THROWS_WITH(frontend::parseModelSpec(j, "spec.json"), Catch::Contains("/same_length"));
  {
    // A run setting that makes every row fully masked is refused before anything runs.
    const auto authors = spec(6, false, "authors");
    const driver::Model model = driver::modelFrom(authors, frontend::randomWeights(authors, 7));
    driver::Setting setting = driver::defaultSetting(model);
    setting.memLen = 0;
    setting.sameLength = true;
    CHECK_THROWS_WITH(driver::compile(model, setting), Catch::Contains("--same-length: needs a mem_len above 0"));
  }
  const auto s = spec(0, false, "huggingface", true);
  auto w = weights(s);
  backend::Session ref(compile(s, w, "reference", "literal"));
  const auto want = run(ref, 3);
  for (float v : want) REQUIRE(std::isfinite(v));
  for (const char* backend : {"reference", "onednn"}) {
    INFO(backend);
    backend::Session session(compile(s, w, backend, "kv"));
    CHECK(maxRelDiff(run(session, 3), want) < 1e-4);
  }
  // Every query averages every value uniformly: the scores, and so the u and
  // v biases, do not matter.
  for (auto& [name, t] : w)
    if (name.find("r_w_bias") != std::string::npos || name.find("r_r_bias") != std::string::npos) {
      ir::Tensor changed = t.clone();
      for (float& x : changed.span<float>()) x += 3.0f;
      t = changed;
    }
  backend::Session biased(compile(s, w, "reference", "literal"));
  CHECK(maxRelDiff(run(biased, 3), want) < 1e-5);
}
