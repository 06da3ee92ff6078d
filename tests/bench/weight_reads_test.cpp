// tests/bench/weight_reads_test.cpp - the weights a step reads only as rows
// of projected tables (driver/weight_reads.h), which the memory floor of
// docs/PERFORMANCE.md leaves out: the first layer's q, k and v of a
// character model, at every precision, and none of a word model's layers.
#include <catch2/catch.hpp>

#include "driver/compile.h"
#include "driver/weight_reads.h"
#include "frontend/model_spec.h"

namespace {

using namespace txl;

std::set<std::string> rowReadOf(const char* file, driver::Precision precision, std::int64_t qlen,
                                std::set<std::string> disabled = {}) {
  const frontend::ModelSpec spec = frontend::loadModelSpec(std::string(TXL_BENCH_DIR) + "/" + file);
  driver::Setting setting = driver::defaultSetting(driver::modelFrom(spec, {}));
  setting.precision = precision;
  setting.pipeline.disabled = std::move(disabled);
  driver::resolvePipeline(setting);
  ir::Segment segment = driver::segmentOf(setting, qlen, spec.mem_len);
  segment.logprob = segment.nll = false;
  return driver::rowReadWeights(driver::buildOptimizedGraph(spec, setting, segment));
}

bool anyLayerWeight(const std::set<std::string>& names, const std::string& except = "") {
  for (const std::string& n : names)
    if (n.rfind("layers.", 0) == 0 && n != except) return true;
  return false;
}

}  // namespace

TEST_CASE("weight reads: a character model's first projections are read as table rows", "[bench][floor]") {
  const std::string qkv0 = "layers.0.dec_attn.qkv_net.weight";
  for (const auto precision : {driver::Precision::F32, driver::Precision::BF16, driver::Precision::Int8})
    for (const std::int64_t qlen : {1, 80}) {
      INFO("precision " << driver::precisionName(precision) << ", qlen " << qlen);
      const std::set<std::string> rowRead = rowReadOf("enwik8_base.json", precision, qlen);
      CHECK(rowRead.count(qkv0) == 1);
      CHECK(!anyLayerWeight(rowRead, qkv0));  // every other layer weight is read whole
      // Without the lookups the first layer projects its rows: the matrix is read whole.
      CHECK(rowReadOf("enwik8_base.json", precision, qlen, {"fold-embedding-projections"}).count(qkv0) == 0);
    }
  // A word model's embedding (267,735 rows against 1,024 inputs) is not folded.
  for (const auto precision : {driver::Precision::F32, driver::Precision::BF16})
    CHECK(!anyLayerWeight(rowReadOf("wt103_base.json", precision, 1)));
}
