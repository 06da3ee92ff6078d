// tests/passes/pipeline_numeric_test.cpp - whole Transformer-XL segment graphs:
// the literal graph (--passes none) against the default pipeline, on the
// reference interpreter and on the oneDNN executor, over small random specs
// with odd sizes (3 heads of 5, qlen 1, mlen 0, clamp_len shorter than klen,
// untie_r, pre_lnorm, adaptive embedding and softmax, attn_type 2).
#include <catch2/catch.hpp>
#include <cstring>
#include <random>

#include "backend/platform.h"
#include "backend/onednn/onednn_executor.h"
#include "backend/onednn/onednn_target_info.h"
#include "backend/reference/reference_interpreter.h"
#include "frontend/graph_builder.h"
#include "ir/printer.h"
#include "passes/pipeline.h"
#include "passes/registry.h"
#include "passes/rewrite_utils.h"
#include "tests/passes/numeric_support.h"

namespace {

using namespace txl;
using ir::OpKind;

frontend::ModelSpec spec(nlohmann::json overrides) {
  nlohmann::json j = {{"n_token", 29},      {"n_layer", 2},        {"n_head", 3},
                      {"d_model", 12},      {"d_head", 5},         {"d_inner", 20},
                      {"d_embed", 12},      {"div_val", 1},        {"cutoffs", nlohmann::json::array()},
                      {"tie_weight", true}, {"pre_lnorm", false},  {"tgt_len", 3},
                      {"mem_len", 4},       {"same_length", true}, {"attn_type", 0},
                      {"clamp_len", 2},     {"untie_r", false},    {"ext_len", 0}};
  for (auto& [k, v] : overrides.items()) j[k] = v;
  return frontend::parseModelSpec(j, "test-spec");
}

struct Case {
  std::string name;
  frontend::ModelSpec spec;
  std::vector<std::pair<std::int64_t, std::int64_t>> shapes;  // (qlen, mlen)
};

std::vector<Case> cases() {
  return {
      {"3 heads of 5, clamp_len 2, same_length", spec({}), {{3, 4}, {1, 4}, {3, 0}, {2, 2}, {5, 4}, {6, 0}}},
      {"untie_r, pre_lnorm",
       spec({{"untie_r", true}, {"pre_lnorm", true}, {"same_length", false}}),
       {{3, 4}, {1, 0}, {5, 3}}},
      {"adaptive embedding and softmax",
       spec({{"n_token", 30}, {"cutoffs", {10, 20}}, {"div_val", 2}, {"tie_projs", {false, true, true}}}),
       {{3, 4}, {1, 3}}},
      {"adaptive softmax, div_val 1, d_embed != d_model",
       spec({{"n_token", 30}, {"cutoffs", {10}}, {"d_embed", 8}, {"tie_projs", {false, true}}}),
       {{2, 4}}},
      {"attn_type 2, pre_lnorm",
       spec({{"attn_type", 2}, {"mem_len", 0}, {"same_length", false}, {"pre_lnorm", true}, {"clamp_len", -1}}),
       {{3, 0}, {1, 0}}},
  };
}

ir::TensorMap inputsFor(const ir::Graph& g, const frontend::ModelSpec& s, std::uint64_t seed) {
  ir::TensorMap in = testing::randomInputs(g, seed);
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<std::int64_t> id(0, s.n_token - 1);
  for (const char* name : {"tokens", "targets"})
    if (in.count(name))
      for (auto& v : in[name].span<std::int64_t>()) v = id(rng);
  return in;
}

// The memory-form passes change what a slot holds (projected keys and values,
// a window), so the graphs' memory outputs are no longer comparable; they have
// their own tests. Everything else in the default pipeline runs.
passes::PipelineOptions withoutMemoryForm() {
  passes::PipelineOptions options;
  for (const auto& p : passes::registeredPasses())
    if (p.name == "cache-projected-memory" || p.name == "window-memory") options.disabled.insert(p.name);
  return options;
}

std::size_t count(const ir::Graph& g, OpKind kind) { return g.nodesOfKind(kind).size(); }

// The optimized graph on both executors against the literal graph on the
// reference interpreter, same weights and inputs.
void checkBothExecutors(backend::Executor& reference, backend::Executor& onednn, const ir::Graph& literal,
                        const ir::Graph& optimized, const ir::TensorMap& weights, const ir::TensorMap& inputs,
                        std::uint64_t seed) {
  auto expected = testing::runGraph(reference, literal, weights, inputs);
  auto viaRef = testing::runGraph(reference, optimized, weights, inputs);
  auto diff = testing::compareOutputs(expected, viaRef, 1e-5);
  if (diff) FAIL("reference interpreter, seed " << seed << ": " << *diff);
  auto viaOnednn = testing::runGraph(onednn, optimized, weights, inputs);
  diff = testing::compareOutputs(expected, viaOnednn, 1e-4, 1e-5);
  if (diff) FAIL("oneDNN executor, seed " << seed << ": " << *diff);
}

}  // namespace

TEST_CASE("the default pipeline keeps whole segment graphs equal on both executors") {
  auto reference = backend::makeReferenceExecutor();
  auto onednn = backend::makeOnednnExecutor();
  backend::OnednnTargetInfo target;
  for (const Case& c : cases()) {
    for (auto [qlen, mlen] : c.shapes) {
      DYNAMIC_SECTION(c.name << ", qlen " << qlen << ", mlen " << mlen) {
        ir::Segment shape = frontend::defaultSegment(c.spec, 2, qlen, mlen);
        ir::Graph literal = frontend::buildSegmentGraph(c.spec, shape);
        ir::Graph optimized = literal;
        ir::PassContext ctx;
        ctx.target = &target;
        ctx.maxKlen = shape.memLen + c.spec.tgt_len + 2;  // longer than any klen here: suffix tables
        passes::runPipeline(optimized, passes::resolvePipeline(withoutMemoryForm(), passes::Precision::F32), {}, ctx);
        INFO(ir::print(optimized));

        // What the passes promise, structurally.
        CHECK(count(optimized, OpKind::Pad) == 0);
        CHECK(count(optimized, OpKind::Relu) == 0);
        if (c.spec.attn_type == 0) {
          // More query rows than onednn::kMaxRowsForStridedMatMulOperand, or
          // one row on a CPU that runs the row-wise kernel (AVX-512): the
          // whole attention as rel_attention (rel_scores inside); otherwise
          // the target keeps the unfused attention (onednn_target_info.cpp).
          const bool rowwise = qlen == 1 && backend::platform().avx512;
          const std::size_t fused = qlen > 4 || rowwise ? std::size_t(c.spec.n_layer) : 0;
          CHECK(count(optimized, OpKind::RelAttention) == fused);
          CHECK(count(optimized, OpKind::RelScores) == std::size_t(c.spec.n_layer) - fused);
          CHECK(count(optimized, OpKind::RelShift) == 0);
          CHECK(count(optimized, OpKind::MaskedFill) == 0);
          for (ir::Node n : optimized.nodesOfKind(OpKind::Add))
            for (ir::Node o : optimized.operands(n))
              CHECK_FALSE(
                  (optimized.kind(o) == OpKind::Weight && optimized.op(o).attrs.getString("name").find("r_") == 0));
        }
        // The score scales went into weights: only run-time scales count.
        auto runtimeScales = [](const ir::Graph& g) {
          std::size_t n = 0;
          for (ir::Node s : g.nodesOfKind(OpKind::Scale)) n += !passes::rw::isConstant(g, s);
          return n;
        };
        CHECK(runtimeScales(optimized) == runtimeScales(literal) - std::size_t(c.spec.n_layer));

        // Every primitive of the fused ops stays on a fast oneDNN kernel.
        {
          auto weights = testing::randomWeights(literal, 3);
          auto plan = onednn->compile(optimized, weights);
          const auto& steps = dynamic_cast<backend::OnednnCompiledGraph&>(*plan).steps();
          std::size_t fusedSteps = 0;
          for (const auto& step : steps) {
            INFO(step.op << " " << step.primitive << " " << step.impl);
            if (step.op == "fused_linear" || step.op == "rel_scores") {
              ++fusedSteps;
              CHECK(step.impl.rfind("ref", 0) != 0);
            }
          }
          CHECK(fusedSteps >= std::size_t(2 * c.spec.n_layer));
        }

        for (std::uint64_t seed : {3u, 4u}) {
          auto weights = testing::randomWeights(literal, seed);
          auto inputs = inputsFor(literal, c.spec, seed);
          checkBothExecutors(*reference, *onednn, literal, optimized, weights, inputs, seed);
        }
      }
    }
  }
}

TEST_CASE("every pass can be disabled on its own without changing the outputs") {
  auto reference = backend::makeReferenceExecutor();
  const Case c = cases()[0];
  ir::Segment shape = frontend::defaultSegment(c.spec, 1, 3, 4);
  ir::Graph literal = frontend::buildSegmentGraph(c.spec, shape);
  auto weights = testing::randomWeights(literal, 5);
  auto inputs = inputsFor(literal, c.spec, 5);
  auto expected = testing::runGraph(*reference, literal, weights, inputs);
  for (const auto& name : passes::defaultPipeline()) {
    DYNAMIC_SECTION("without " << name) {
      ir::Graph g = literal;
      passes::PipelineOptions options = withoutMemoryForm();
      if (options.disabled.count(name)) continue;
      options.disabled.insert(name);
      ir::PassContext ctx;
      ctx.maxKlen = 9;
      passes::runPipeline(g, passes::resolvePipeline(options, passes::Precision::F32), {}, ctx);
      auto diff = testing::compareOutputs(expected, testing::runGraph(*reference, g, weights, inputs), 1e-5);
      if (diff) FAIL(*diff);
    }
  }
}

TEST_CASE("fuse-nll: the NLL without log-probabilities, targets at every cluster's edges") {
  auto reference = backend::makeReferenceExecutor();
  auto onednn = backend::makeOnednnExecutor();
  const std::vector<Case> nllCases = {
      {"no clusters", spec({}), {}},
      {"div_val 1, cutoffs 10 and 20 (slices of one table, as WT103)",
       spec({{"n_token", 30}, {"cutoffs", {10, 20}}, {"tie_projs", {false, false, false}}}),
       {}},
      {"div_val 2, cutoffs 10 and 20",
       spec({{"n_token", 30}, {"cutoffs", {10, 20}}, {"div_val", 2}, {"tie_projs", {false, true, true}}}),
       {}},
      {"div_val 1, d_embed != d_model",
       spec({{"n_token", 30}, {"cutoffs", {10}}, {"d_embed", 8}, {"tie_projs", {false, true}}}),
       {}},
  };
  for (const Case& c : nllCases) {
    DYNAMIC_SECTION(c.name) {
      ir::Segment shape = frontend::defaultSegment(c.spec, 4, 3, 4);
      shape.logprob = false;
      ir::Graph literal = frontend::buildSegmentGraph(c.spec, shape);
      ir::Graph optimized = literal;
      ir::PassContext ctx;
      ctx.maxKlen = shape.memLen + c.spec.tgt_len;
      passes::runPipeline(optimized, passes::resolvePipeline(withoutMemoryForm(), passes::Precision::F32), {}, ctx);
      INFO(ir::print(optimized));
      // The head's logprob_pick; each tail cluster's gathered (gather-tail-clusters).
      CHECK(count(optimized, OpKind::LogprobPick) == 1);
      CHECK(count(optimized, OpKind::LogprobPickGathered) == std::size_t(c.spec.clusterCount() - 1));
      CHECK(count(optimized, OpKind::LogSoftmax) == 0);
      CHECK(count(optimized, OpKind::Pick) == 0);

      // The first and last id of every cluster, and the ids either side of each cutoff.
      std::vector<std::int64_t> edges;
      const auto bounds = c.spec.clusterBounds();
      for (std::size_t i = 0; i + 1 < bounds.size(); ++i) {
        edges.push_back(bounds[i]);
        edges.push_back(bounds[i + 1] - 1);
      }
      for (std::uint64_t seed : {3u, 4u}) {
        auto weights = testing::randomWeights(literal, seed);
        auto inputs = inputsFor(literal, c.spec, seed);
        auto& targets = inputs.at("targets");
        REQUIRE(std::size_t(targets.numel()) >= edges.size());
        for (std::size_t i = 0; i < edges.size(); ++i)
          targets.data<std::int64_t>()[(i + seed) % std::size_t(targets.numel())] = edges[i];
        checkBothExecutors(*reference, *onednn, literal, optimized, weights, inputs, seed);
      }
    }
  }
}

TEST_CASE("gather-tail-clusters: the NLL bit for bit with and without the pass, at every precision") {
  auto onednn = backend::makeOnednnExecutor();
  const std::vector<Case> nllCases = {
      {"div_val 1, cutoffs 10 and 20 (slices of one table, as WT103)",
       spec({{"n_token", 30}, {"cutoffs", {10, 20}}, {"tie_projs", {false, false, false}}}),
       {}},
      {"div_val 2, cutoffs 10 and 20 (a projection per cluster)",
       spec({{"n_token", 30}, {"cutoffs", {10, 20}}, {"div_val", 2}, {"tie_projs", {false, true, true}}}),
       {}},
  };
  // (qlen, batch): one row (the projection on txl:gemv), and enough rows for several buckets.
  const std::vector<std::pair<std::int64_t, std::int64_t>> shapes = {{1, 1}, {3, 4}, {13, 3}};
  for (const Case& c : nllCases)
    for (auto precision : {passes::Precision::F32, passes::Precision::BF16, passes::Precision::Int8})
      for (auto [qlen, batch] : shapes) {
        DYNAMIC_SECTION(c.name << ", precision " << int(precision) << ", qlen " << qlen << ", batch " << batch) {
          ir::Segment shape = frontend::defaultSegment(c.spec, batch, qlen, 4);
          shape.logprob = false;
          ir::Graph literal = frontend::buildSegmentGraph(c.spec, shape);
          auto build = [&](bool gather) {
            ir::Graph g = literal;
            passes::PipelineOptions options = withoutMemoryForm();
            if (!gather) options.disabled.insert("gather-tail-clusters");
            ir::PassContext ctx;
            ctx.maxKlen = shape.memLen + qlen;
            passes::runPipeline(g, passes::resolvePipeline(options, precision), {}, ctx);
            return g;
          };
          const ir::Graph with = build(true), without = build(false);
          CHECK(count(with, OpKind::LogprobPickGathered) == 2);
          CHECK(count(without, OpKind::LogprobPickGathered) == 0);
          for (std::uint64_t seed : {3u, 4u, 5u}) {
            auto weights = testing::randomWeights(literal, seed);
            auto inputs = inputsFor(literal, c.spec, seed);
            auto targets = inputs.at("targets").span<std::int64_t>();
            if (seed == 5)  // every target in the head: no tail row at all
              for (auto& t : targets) t %= 10;
            const auto a = testing::runGraph(*onednn, with, weights, inputs).at("nll");
            const auto b = testing::runGraph(*onednn, without, weights, inputs).at("nll");
            REQUIRE(a.type() == b.type());
            CHECK(std::memcmp(a.raw(), b.raw(), a.type().bytes()) == 0);
          }
        }
      }
}

TEST_CASE("fuse-nll does not fire when the graph also outputs the log-probabilities") {
  const Case c{"div_val 1, cutoffs 10 and 20",
               spec({{"n_token", 30}, {"cutoffs", {10, 20}}, {"tie_projs", {false, false, false}}}),
               {}};
  ir::Segment shape = frontend::defaultSegment(c.spec, 1, 3, 4);
  ir::Graph g = frontend::buildSegmentGraph(c.spec, shape);  // logprob and nll
  ir::PassContext ctx;
  ctx.maxKlen = shape.memLen + c.spec.tgt_len;
  passes::runPipeline(g, passes::resolvePipeline(withoutMemoryForm(), passes::Precision::F32), {}, ctx);
  CHECK(count(g, OpKind::LogprobPick) == 0);
  CHECK(count(g, OpKind::Pick) == 1);
  bool remarked = false;
  for (const auto& r : ctx.remarks)
    remarked |= r.pass == "fuse-nll" && !r.applied && r.message.find("output \"logprob\"") != std::string::npos;
  CHECK(remarked);
}
