// tests/bench/no_ref_test.cpp - no step of the benchmark specs' plans runs a
// `ref` oneDNN implementation (hundreds of times slower; a bug to lower so).
//
// The plans are built at a reduced mem_len (the same shape classes: qlen and
// batch as benchmarked, a memory longer than the segment, qlen 1 against a
// full memory, the NLL through the adaptive softmax) to keep the test fast.
#include <catch2/catch.hpp>

#include <random>

#include "backend/platform.h"
#include "backend/onednn/onednn_executor.h"
#include "frontend/model_loader.h"
#include "driver/compile.h"
#include "tests/bench/spec_case.h"

namespace {

using namespace txl;

using Case = txl::testing::SpecCase;
using txl::testing::randomIds;

// Runs segments until the memory is full, then one at qlen 1; returns every
// `ref` step of the plans met, and at bf16 every linear layer's matmul whose
// implementation is not a bf16 one.
std::vector<std::string> refSteps(const Case& c, driver::Precision precision = driver::Precision::F32) {
  frontend::LoadOptions load;
  load.randomWeights = true;
  frontend::LoadedModel m = frontend::loadModel(std::string(TXL_BENCH_DIR) + "/" + c.spec, std::nullopt, load);
  const driver::Model dm = driver::modelFrom(m.spec, ir::TensorMap(m.weights.begin(), m.weights.end()));
  driver::Setting setting = driver::defaultSetting(dm);
  setting.batch = c.batch;
  setting.memLen = c.memLen;
  setting.precision = precision;
  driver::resolvePipeline(setting);
  auto model = driver::compile(dm, setting);
  backend::Session s(model);
  std::mt19937_64 rng(1);
  std::vector<std::string> found;
  auto check = [&] {
    auto* plan = dynamic_cast<backend::OnednnCompiledGraph*>(s.lastPlan());
    REQUIRE(plan != nullptr);
    REQUIRE(!plan->steps().empty());
    for (const auto& step : plan->steps()) {
      const bool linear = step.op == "linear" || step.op == "fused_linear";
      if (step.impl.rfind("ref", 0) == 0 ||
          (precision == driver::Precision::BF16 && linear && step.impl.find("bf16") == std::string::npos))
        found.push_back(std::string(c.spec) + ": " + step.op + " (node " + std::to_string(step.node) + ") " +
                        step.primitive + " " + step.impl);
    }
  };
  for (std::int64_t q : {c.qlen, c.qlen, c.qlen, std::int64_t(1)}) {
    ir::Tensor tokens = randomIds(q, c.batch, m.spec.n_token, rng),
               targets = randomIds(q, c.batch, m.spec.n_token, rng);
    s.forward(tokens, c.nll ? &targets : nullptr, false);
    check();
  }
  REQUIRE(s.mlen() == c.memLen);
  return found;
}

}  // namespace

TEST_CASE("bench specs: no ref implementation in any plan step", "[bench][onednn]") {
  const Case cases[] = {
      {"enwik8_base.json", 1, 80, 160, false},
      {"wt103_base.json", 1, 64, 128, true},
      {"small_b8.json", 8, 128, 128, false},
  };
  for (const Case& c : cases) {
    INFO(c.spec);
    auto found = refSteps(c);
    for (const auto& f : found) UNSCOPED_INFO(f);
    CHECK(found.empty());
  }
}

TEST_CASE("bench specs at bf16: no ref step, every linear layer on a bf16 matmul", "[bench][onednn][bf16]") {
  const Case cases[] = {
      {"enwik8_base.json", 1, 80, 160, false},
      {"wt103_base.json", 1, 64, 128, true},
      {"small_b8.json", 8, 128, 128, false},
  };
  for (const Case& c : cases) {
    INFO(c.spec);
    auto found = refSteps(c, driver::Precision::BF16);
    for (const auto& f : found) UNSCOPED_INFO(f);
    CHECK(found.empty());
  }
}

// Sessions build their graphs for the executor's target (driver::targetInfo):
// the oneDNN target declines rel_attention at 2 to 4 query rows at f32 (they
// run faster unfused) and takes it at one (a generated token, the row-wise
// kernel) where the CPU has AVX-512, so a graph of a few rows keeps the
// unfused attention while a segment's is fused; the reference backend is
// asked nothing.
TEST_CASE("session graphs ask the executor's target which fusions run fast", "[bench][onednn]") {
  frontend::LoadOptions load;
  load.randomWeights = true;
  frontend::LoadedModel m = frontend::loadModel(std::string(TXL_BENCH_DIR) + "/enwik8_base.json", std::nullopt, load);
  const driver::Model dm = driver::modelFrom(m.spec, ir::TensorMap(m.weights.begin(), m.weights.end()));
  driver::Setting setting = driver::defaultSetting(dm);
  setting.memLen = 160;
  const auto fused = [&](const char* backendName, std::int64_t qlen) {
    setting.backend = backendName;
    auto model = driver::compile(dm, setting);
    const ir::Graph g = model->buildGraph(model->info().segment(qlen, 160, true, false));
    int n = 0;
    for (ir::Node node : g.nodes()) n += g.kind(node) == ir::OpKind::RelAttention;
    return n;
  };
  CHECK(fused("onednn", 80) == m.spec.n_layer);
  CHECK(fused("onednn", 4) == 0);
  CHECK(fused("onednn", 1) == (backend::platform().avx512 ? m.spec.n_layer : 0));
  CHECK(fused("reference", 1) == m.spec.n_layer);
}
