// tests/passes/rewrite_driver_test.cpp - the passes' work grows with the graph, not with its square.
//
// Every pass visits nodes through the rewrite driver (passes/rewriter.h),
// which counts its visits. The default pipeline, with the oneDNN target and
// with none, on a segment graph of L layers and of 10·L layers: the deeper
// graph has about 10x the nodes and must cost about 10x the visits. A pass
// that looked every site up again by scanning the graph, or swept the whole
// graph per match, would cost about 100x.
#include <catch2/catch.hpp>

#include "backend/onednn/onednn_target_info.h"
#include "frontend/graph_builder.h"
#include "passes/pipeline.h"
#include "passes/rewriter.h"

namespace {

using namespace txl;

frontend::ModelSpec spec(std::int64_t layers, bool untieR) {
  nlohmann::json j = {{"n_token", 29},
                      {"n_layer", layers},
                      {"n_head", 3},
                      {"d_model", 12},
                      {"d_head", 5},
                      {"d_inner", 20},
                      {"d_embed", 12},
                      {"div_val", 1},
                      {"cutoffs", {10}},
                      {"tie_weight", true},
                      {"pre_lnorm", false},
                      {"tgt_len", 3},
                      {"mem_len", 4},
                      {"same_length", true},
                      {"attn_type", 0},
                      {"clamp_len", 2},
                      {"untie_r", untieR},
                      {"ext_len", 0},
                      {"tie_projs", {false, true}}};
  return frontend::parseModelSpec(j, "test-spec");
}

struct Cost {
  std::size_t nodes = 0;
  std::uint64_t visits = 0;
};

Cost pipelineCost(const frontend::ModelSpec& s, std::int64_t qlen, const ir::TargetInfo* target) {
  ir::Graph g = frontend::buildSegmentGraph(s, frontend::defaultSegment(s, 1, qlen, s.mem_len));
  ir::PassContext ctx;
  ctx.target = target;
  const std::uint64_t before = passes::Rewriter::visits();
  passes::runPipeline(g, passes::resolvePipeline({}, passes::Precision::F32), {}, ctx);
  return {g.size(), passes::Rewriter::visits() - before};
}

}  // namespace

TEST_CASE("the rewrite driver's visits grow linearly with the number of layers") {
  backend::OnednnTargetInfo onednn;
  for (const ir::TargetInfo* target : {static_cast<const ir::TargetInfo*>(&onednn), (const ir::TargetInfo*)nullptr})
    for (std::int64_t qlen : {1, 3})
      for (bool untie : {false, true}) {
        const Cost small = pipelineCost(spec(4, untie), qlen, target);
        const Cost large = pipelineCost(spec(40, untie), qlen, target);
        const double ratio = double(large.visits) / double(small.visits);
        INFO((target ? "onednn" : "no target")
             << ", qlen " << qlen << (untie ? ", untie_r" : "") << ": " << small.visits << " visits for 4 layers ("
             << small.nodes << " nodes), " << large.visits << " for 40 (" << large.nodes << " nodes): " << ratio
             << "x");
        CHECK(small.visits > 0);
        CHECK(ratio < 11.0);  // 10x the layers; a quadratic pass would give ~100x
        CHECK(ratio > 5.0);   // the count does measure the passes' work
      }
}
