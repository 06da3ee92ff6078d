// tests/bench/thread_variants_test.cpp - the two thread variants of a plan
// (backend/onednn/thread_policy.h: steps lowered for an idle machine, on the
// team, or for a loaded one, on one thread) compute the same bits on the
// benchmark specs' shapes, at every precision: ThreadPolicy::Auto switches
// between them from run to run, which must never change a result.
//
// The plans are built at a reduced mem_len, as in no_ref_test.cpp (the same
// layer widths, so the same oneDNN implementations and partitions).
#include <catch2/catch.hpp>

#include <omp.h>

#include <cstring>
#include <random>

#include "backend/onednn/onednn_executor.h"
#include "driver/compile.h"
#include "tests/bench/spec_case.h"
#include "frontend/model_loader.h"

namespace {

using namespace txl;

using Case = txl::testing::SpecCase;
using txl::testing::randomIds;

// Every output of every segment (segments of qlen until the memory is
// full, then two of qlen 1) under `policy`, bytes appended in order.
std::vector<char> outputs(const driver::Model& dm, const Case& c, driver::Precision precision,
                          backend::ThreadPolicy policy) {
  driver::Setting setting = driver::defaultSetting(dm);
  setting.batch = c.batch;
  setting.memLen = c.memLen;
  setting.precision = precision;
  setting.threadPolicy = policy;
  driver::resolvePipeline(setting);
  backend::Session s(driver::compile(dm, setting));
  std::mt19937_64 rng(3);
  std::vector<char> bytes;
  const auto keep = [&](const ir::Tensor* t) {
    if (t)
      bytes.insert(bytes.end(), static_cast<const char*>(t->raw()), static_cast<const char*>(t->raw()) + t->bytes());
  };
  for (std::int64_t q : {c.qlen, c.qlen, c.qlen, std::int64_t(1), std::int64_t(1)}) {
    const ir::Tensor tokens = randomIds(q, c.batch, dm.spec.n_token, rng),
                     targets = randomIds(q, c.batch, dm.spec.n_token, rng);
    const backend::ForwardResult r = s.forward(tokens, c.nll ? &targets : nullptr, false);
    keep(r.hidden);
    keep(r.nll);
  }
  return bytes;
}

}  // namespace

TEST_CASE("bench specs: both thread variants of a plan give the same bits", "[bench][onednn]") {
  if (omp_get_max_threads() < 2) {
    WARN("one OpenMP thread: both variants are the same plan");
    return;
  }
  const Case cases[] = {
      {"enwik8_base.json", 1, 80, 160, false},
      {"enwik8_base.json", 8, 1, 64, false},
      {"wt103_base.json", 1, 64, 128, true},
      {"small_b8.json", 8, 128, 128, false},
  };
  for (const Case& c : cases) {
    frontend::LoadOptions load;
    load.randomWeights = true;
    frontend::LoadedModel m = frontend::loadModel(std::string(TXL_BENCH_DIR) + "/" + c.spec, std::nullopt, load);
    const driver::Model dm = driver::modelFrom(m.spec, ir::TensorMap(m.weights.begin(), m.weights.end()));
    for (driver::Precision p : {driver::Precision::F32, driver::Precision::BF16, driver::Precision::Int8}) {
      INFO(c.spec << ", batch " << c.batch << ", qlen " << c.qlen << ", " << driver::precisionName(p));
      const std::vector<char> idle = outputs(dm, c, p, backend::ThreadPolicy::Idle);
      const std::vector<char> loaded = outputs(dm, c, p, backend::ThreadPolicy::Loaded);
      REQUIRE(idle.size() == loaded.size());
      CHECK(std::memcmp(idle.data(), loaded.data(), idle.size()) == 0);
    }
  }
}
