// tools/cmd_compile.cpp - `txlc compile MODEL -o OUT`: a compiled artifact or a standalone executable.
//
// Builds and optimizes the segment graphs of the setting's shape buckets
// (docs/ARTIFACT.md), compiles the main one on the executor to check it and
// to record its memory plan, and writes the artifact (tools/artifact.h) or a
// standalone executable (tools/standalone.h). A summary goes to stderr;
// --json prints it on stdout.
#include <chrono>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "backend/onednn_executor.h"
#include "ir/check.h"
#include "ir/json_io.h"
#include "passes/pipeline.h"
#include "tools/cli_checks.h"
#include "tools/content_hash.h"
#include "tools/exit_codes.h"
#include "tools/model_flags.h"
#include "tools/standalone.h"

namespace txl::tools {

namespace {

struct Options {
  ModelFlags model;
  bool randomWeights = false;
  std::uint64_t seed = 0;
  std::string output, emit = "artifact";
  bool json = false;
};

std::string cpuName() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("model name", 0) == 0) {
      auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(colon + 2);
    }
  return "unknown";
}

int run(const Options& o) {
  const auto start = std::chrono::steady_clock::now();
  applyThreads(o.model.threads);
  SourceOptions so = o.model.sourceOptions();
  so.randomWeights = o.randomWeights;
  so.seed = o.seed;
  ModelSource m = openModelSource(o.model.model, so);
  ModelOptions options = o.model.pipeline.resolve();
  if (m.artifact && o.model.pipeline.passes.empty()) options.pipeline.passes = m.artifact->passes;
  ResolvedSetting setting = o.model.setting(m);
  const std::int64_t Q = setting.qlen, M = setting.memLen, B = setting.settings.batch;
  checkMemoryFits(m.spec, B, Q, M, m.path);  // before anything is planned
  // After the setting is checked: a bad setting is the one error line.
  if (m.artifact) std::cerr << "txlc: note: recompiling " << m.path << " from its stored spec and weights" << std::endl;

  Artifact a;
  a.txlcVersion = kTxlcVersion;
  a.modelId = m.modelId;
  a.spec = m.spec;
  a.setting = {B, Q, M, setting.settings.clampLen.value_or(m.spec.clamp_len),
               setting.settings.sameLength.value_or(m.spec.same_length), "hidden"};
  a.setting.initialMemory = setting.settings.initialMemory.value_or(m.spec.defaultInitialMemory());
  a.passes = passes::selectedPasses(options.pipeline);
  for (const auto& p : a.passes)
    if (p == "cache-projected-memory") a.setting.memory = "kv";
  if (m.vocabulary) a.vocabulary = m.vocabulary->toJson();
  a.cpuIsa = cpuName();
  a.weights = m.weights;

  // The shape buckets (docs/ARTIFACT.md): the main scoring shape first
  // (qlen, mem_len), then what a stream meets before its memory is full (the
  // padded warm-up graph, or one graph per warm-up mlen for a model that
  // cannot pad), then generation's one-token step, at full memory and padded.
  struct Bucket {
    std::int64_t qlen, mlen;
    bool logprob, nll, padded;
    const char* role;
  };
  const bool pad = m.spec.attn_type == 0 && M > 0;
  std::vector<Bucket> buckets = {{Q, M, false, true, false, "score"}};
  if (pad) buckets.push_back({Q, M, false, true, true, "score-warmup"});
  else
    for (std::int64_t mlen = 0; mlen < M; mlen = std::min(M, mlen + Q))
      buckets.push_back({Q, mlen, false, true, false, "score-warmup"});
  buckets.push_back({1, M, true, false, false, "step"});
  if (pad) buckets.push_back({1, M, true, false, true, "step-warmup"});
  const frontend::SegmentShape base = segmentShape(m.spec, setting.settings);
  for (const Bucket& b : buckets) {
    ir::PassContext ctx;
    ir::Graph g = buildOptimizedGraph(m.spec, segmentShape(base, {b.qlen, b.mlen, {b.logprob, b.nll}, b.padded}),
                                      {b.logprob, b.nll}, options.pipeline, targetInfo(kArtifactTarget), &ctx);
    StoredGraph sg{b.qlen, b.mlen, b.logprob, b.nll, b.padded, b.role, ir::toJson(g), 0};
    const std::string text = sg.graph.dump();
    sg.hash = contentHash(text.data(), text.size());
    a.graphs.push_back(std::move(sg));
  }
  // Compile the main graph once: it must lower on this executor.
  auto executor = makeExecutor(o.model.pipeline.backend);
  ir::Graph main = ir::fromJson(a.graphs.front().graph, "main graph");
  const std::size_t mainNodes = main.size();
  auto plan = executor->compile(main, a.weights);
  nlohmann::json summary = {{"output", o.output},
                            {"emit", o.emit},
                            {"model_id", a.modelId},
                            {"batch", B},
                            {"qlen", Q},
                            {"mem_len", M},
                            {"graphs", a.graphs.size()},
                            {"main_graph_nodes", mainNodes},
                            {"passes", a.passes}};
  if (auto* onednn = dynamic_cast<backend::OnednnCompiledGraph*>(plan.get())) {
    summary["main_plan_steps"] = onednn->steps().size();
    summary["main_plan_arena_bytes"] = onednn->arenaBytes();
  }

  std::vector<std::byte> bytes = serializeArtifact(a);
  if (o.emit == "exe") writeStandalone(o.output, bytes);
  else writeArtifact(o.output, a);
  summary["artifact_bytes"] = bytes.size();
  summary["seconds"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (o.json) std::cout << summary.dump(2) << std::endl;
  std::cerr << "txlc: wrote " << o.output << " (" << (o.emit == "exe" ? "standalone executable, " : "") << "artifact "
            << bytes.size() << " bytes; " << a.graphs.size() << " graphs for batch " << B << ", qlen " << Q
            << ", mem_len " << M << "; main graph " << mainNodes << " nodes)" << std::endl;
  return kExitOk;
}

}  // namespace

void registerCompile(CLI::App& app, Action& action) {
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("compile", "compile a model to an artifact (or a standalone executable)");
  o->model.add(*cmd);
  CLI::Option* random = cmd->add_flag("--random-weights", o->randomWeights, "deterministic random weights instead of a file");
  if (o->model.weightsOpt) random->excludes(o->model.weightsOpt);
  cmd->add_option("--seed", o->seed, "seed of --random-weights (default 0)");
  cmd->add_option("-o,--output", o->output, "the file to write")->required();
  cmd->add_option("--emit", o->emit, "artifact (default) or exe (a standalone executable)")
      ->check(CLI::IsMember({"artifact", "exe"}));
  cmd->add_flag("--json", o->json, "print a summary as JSON on stdout");
  cmd->callback([o, &action] { action = [o] { return run(*o); }; });
}

}  // namespace txl::tools
