// tests/bench/flop_count_test.cpp - the useful FLOPs of docs/PERFORMANCE.md
// do not depend on how the graph keeps its memory: the kv form (projected
// keys and values remembered), the hidden form (layer inputs remembered and
// re-projected, with or without the in-place window) and the literal graph
// all count the projection of the new rows only (none for embedding rows a
// projected table gives); what each graph does beyond that shows in `graph`.
#include <catch2/catch.hpp>

#include "frontend/model_spec.h"
#include "driver/flop_count.h"
#include "driver/compile.h"

namespace {

using namespace txl;

driver::FlopCount flopsWith(const frontend::ModelSpec& spec, const std::optional<std::vector<std::string>>& passes,
                            std::set<std::string> disabled = {}, std::int64_t qlen = 80,
                            const char* target = "reference") {
  driver::Setting setting = driver::defaultSetting(driver::modelFrom(spec, {}));
  setting.pipeline.passes = passes;
  setting.pipeline.disabled = std::move(disabled);
  driver::resolvePipeline(setting);
  setting.backend = target;
  ir::Segment segment = driver::segmentOf(setting, qlen, 160);
  segment.logprob = segment.nll = false;
  const ir::Graph g = driver::buildOptimizedGraph(spec, setting, segment);
  return driver::countFlops(g);
}

}  // namespace

TEST_CASE("useful FLOPs: the same for every memory form", "[bench][flops]") {
  const frontend::ModelSpec spec = frontend::loadModelSpec(std::string(TXL_BENCH_DIR) + "/enwik8_base.json");
  const driver::FlopCount kv = flopsWith(spec, std::nullopt);
  const driver::FlopCount hidden = flopsWith(spec, std::nullopt, {"cache-projected-memory"});
  const driver::FlopCount literal = flopsWith(spec, std::vector<std::string>{});
  const driver::FlopCount unwindowed = flopsWith(spec, std::nullopt, {"cache-projected-memory", "window-memory"});
  // kv: only new rows are projected, so the graph does exactly the useful work.
  CHECK(kv.graph == Approx(kv.useful).epsilon(1e-12));
  // hidden: the qkv projection runs over [memory; new] (through a mem_window,
  // or a concat after a mem_read): more work done, the same useful work.
  CHECK(hidden.useful == Approx(kv.useful).epsilon(1e-12));
  CHECK(unwindowed.useful == Approx(kv.useful).epsilon(1e-12));
  // The extra work: keys and values projected again for the 160 remembered
  // rows, and the first layer's q, k and v of the 80 new rows, which the kv
  // form looks up in projected tables (fold-embedding-projections: enwik8's
  // 204 symbols against 512 inputs).
  const double hd = double(spec.n_head * spec.d_head), d = double(spec.d_model);
  CHECK(hidden.graph - hidden.useful ==
        Approx(double(spec.n_layer) * 2.0 * 160 * d * 2.0 * hd + 2.0 * 80 * d * 3.0 * hd).epsilon(1e-9));
  // Without the lookups the kv form projects those rows, as work it need not do.
  const driver::FlopCount projected = flopsWith(spec, std::nullopt, {"fold-embedding-projections"});
  CHECK(projected.useful == Approx(kv.useful).epsilon(1e-12));
  CHECK(projected.graph - kv.graph == Approx(2.0 * 80 * d * 3.0 * hd).epsilon(1e-9));
  // The literal graph projects q once, and so does fold-bias-terms (one
  // linear, then + u and + v): the same useful work.
  CHECK(literal.useful == Approx(kv.useful).epsilon(1e-12));
}

// One generated token: the oneDNN target keeps the attention unfused (score
// matmuls), the reference target fuses it into rel_attention; the same work.
TEST_CASE("useful FLOPs: the same for the fused and the unfused attention", "[bench][flops]") {
  const frontend::ModelSpec spec = frontend::loadModelSpec(std::string(TXL_BENCH_DIR) + "/enwik8_base.json");
  for (std::int64_t qlen : {1, 80}) {
    INFO("qlen " << qlen);
    const driver::FlopCount fused = flopsWith(spec, std::nullopt, {}, qlen, "reference");
    const driver::FlopCount unfused = flopsWith(spec, std::nullopt, {"fuse-attention"}, qlen, "onednn");
    CHECK(fused.useful == Approx(unfused.useful).epsilon(1e-12));
    CHECK(fused.graph == Approx(unfused.graph).epsilon(1e-12));
  }
}
