// tools/cmd_inspect.cpp - `txlc inspect MODEL`: the segment graph at a stage, or what the passes bought.
//
//   txlc inspect spec.json --stage optimized --format dot > g.dot
//   txlc inspect spec.json --stats [--format json] [--qlen 80 --mlen 2100] [--passes LIST | --disable-pass NAME]
//   txlc inspect spec.json --memory-plan [--format json]
//
// MODEL is a spec file or a model directory. Graphs need no weights: the spec
// alone is read unless --weights or --random-weights asks for the model to be
// loaded (and its weights checked). The segment is qlen tokens (default: the
// spec's tgt_len) against mlen remembered positions (default: its mem_len,
// the steady state), batch 1 unless --batch. The optimized stage runs the
// pipeline as compile would (--passes, --disable-pass, --print-after...), with
// the oneDNN target's answers about slow paths unless --backend reference.
//
// --stats prints, for the input (literal) graph and the optimized one, the
// node count per op, FLOPs and bytes moved per segment (docs/PASSES.md has
// the formulas: the input graph is costed as the reference runs it, every op
// every segment; the optimized one with constant subgraphs hoisted to plan
// compile time, as the backend runs it), then the fusion report from the
// passes' remarks.
//
// --memory-plan compiles the segment the graph report shows (qlen tokens
// against mlen remembered positions, the outputs of --outputs: `--outputs
// nll` is what `txlc score` runs in the steady state) with the oneDNN
// executor and prints its arena plan (backend/memory_plan.h), naming each
// buffer by its value in that graph (%N):
// every buffer's offset, size and live steps, the arena against the sum
// without reuse and the lower bound, and the bytes outside the arena (state
// windows, weights, constants). A spec file without --weights is planned
// with seeded random weights: the plan depends on shapes only.
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <set>
#include <nlohmann/json.hpp>

#include "frontend/atomic_file.h"
#include "frontend/model_loader.h"
#include "ir/check.h"
#include "ir/dot.h"
#include "ir/json_io.h"
#include "ir/printer.h"
#include "driver/artifact.h"
#include "tools/cli_checks.h"
#include "tools/command.h"
#include "tools/exit_codes.h"
#include "driver/inspect.h"
#include "driver/compile.h"
#include "driver/model.h"

namespace txl::tools {

namespace {

struct Options {
  std::string model, weights, stage = "optimized", format = "text", output, outputs = "logprob,nll";
  bool randomWeights = false, stats = false, memoryPlan = false;
  std::uint64_t seed = 0;
  std::int64_t batch = 1;
  std::optional<std::int64_t> qlen, mlen;
  int threads = defaultThreads();
  PipelineFlags pipeline;
};

OpenOptions openOptions(const Options& o) {
  OpenOptions so;
  if (!o.weights.empty()) so.weights = o.weights;
  so.randomWeights = o.randomWeights;
  so.seed = o.seed;
  return so;
}

std::string mib(std::size_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MiB", bytes / 1048576.0);
  return buf;
}

InspectRequest request(const Options& o) {
  InspectRequest r;
  r.stage = o.stage, r.format = o.format, r.stats = o.stats, r.batch = o.batch, r.qlen = o.qlen, r.mlen = o.mlen;
  setInspectOutputs(r, o.outputs);
  return r;
}

std::string memoryPlanReport(const Options& o) {
  const SettingChoice choice = o.pipeline.choice();
  if (choice.backend && *choice.backend != "onednn")
    throw Error("--memory-plan: plans are made by the onednn backend, not '" + *choice.backend + "'");
  namespace fs = std::filesystem;
  OpenOptions so = openOptions(o);
  if (!looksLikeArtifact(o.model) && !fs::is_directory(o.model) && o.weights.empty() && !o.randomWeights) {
    so.randomWeights = true;
    std::cerr << "txlc: planning " << o.model << " with random weights (a plan depends on shapes only)\n";
  }
  const Model m = openModel(o.model, so);
  // The segment the graph report shows (driver/inspect.h), so that the
  // labels' %N are the value numbers of `txlc inspect`'s graph.
  const InspectRequest r = request(o);
  SettingChoice c = choice;  // an artifact keeps its passes (compile uses them)
  c.batch = o.batch;
  c.qlen = inspectQlen(m.spec, r);
  Setting setting = resolveSetting(m, c, /*run=*/false);
  o.pipeline.applyDiagnostics(setting);
  const ir::Segment key = inspectSegment(m.spec, setting, r);
  const std::int64_t mlen = key.mlen;
  auto model = compile(m, setting);
  backend::SegmentPlan segment = model->compileSegment(key);
  // The graph `txlc inspect` prints for this segment: the compiled one
  // before its constant subgraphs were folded. Labels name nodes by it.
  const ir::Graph shown = buildOptimizedGraph(m.spec, setting, key, nullptr);
  const auto label = [&](const backend::PlannedBuffer& b) { return renumberNodes(b.request.label, shown); };
  const backend::CompiledGraph* plan = segment.graph.get();
  TXL_CHECK(plan->hasSteps(), "the onednn executor made no oneDNN plan");
  const backend::MemoryPlan& mp = plan->memoryPlan();
  const std::size_t state = backend::Session(model).stateBytes();
  const std::size_t weights = ir::distinctBytes(model->weights());
  const std::size_t constants = model->constants().bytes() + plan->constantBytes();
  const double ratio = mp.lowerBoundBytes > 0 ? double(mp.arenaBytes) / mp.lowerBoundBytes : 1.0;

  if (o.format == "json") {
    nlohmann::json buffers = nlohmann::json::array();
    for (const auto& b : mp.buffers)
      buffers.push_back({{"label", label(b)},
                         {"bytes", b.request.bytes},
                         {"size", b.size},
                         {"offset", b.offset},
                         {"first_step", b.request.first},
                         {"last_step", b.request.last}});
    nlohmann::json j = {{"qlen", setting.qlen},
                        {"mlen", mlen},
                        {"batch", setting.batch},
                        {"steps", plan->steps().size()},
                        {"arena_bytes", mp.arenaBytes},
                        {"no_reuse_bytes", mp.noReuseBytes},
                        {"lower_bound_bytes", mp.lowerBoundBytes},
                        {"arena_over_lower_bound", ratio},
                        {"state_bytes", state},
                        {"weights_bytes", weights},
                        {"constant_bytes", constants},
                        {"buffers", buffers}};
    return j.dump(2) + "\n";
  }
  std::string out;
  auto add = [&out](const char* format, auto... args) {
    char line[512];
    std::snprintf(line, sizeof line, format, args...);
    out += line;
  };
  add("memory plan of a segment of %lld tokens against %lld remembered positions, batch %lld\n",
      (long long)setting.qlen, (long long)mlen, (long long)setting.batch);
  add("  %-12s %12s  (%.3fx the lower bound)\n", "arena", mib(mp.arenaBytes).c_str(), ratio);
  add("  %-12s %12s  (most bytes live at one step)\n", "lower bound", mib(mp.lowerBoundBytes).c_str());
  add("  %-12s %12s  (every buffer apart)\n", "no reuse", mib(mp.noReuseBytes).c_str());
  add("  %-12s %12s  (recurrent memory windows)\n", "state", mib(state).c_str());
  add("  %-12s %12s\n", "weights", mib(weights).c_str());
  add("  %-12s %12s  (folded constants, blocked weight copies, tables)\n", "constants", mib(constants).c_str());
  add("\n%12s %12s %6s %6s  %s\n", "offset", "bytes", "first", "last", "buffer");
  for (const auto& b : mp.buffers) {
    add("%12zu %12zu %6zu %6zu  ", b.offset, b.request.bytes, b.request.first, b.request.last);
    out += label(b) + "\n";  // a label may be longer than a line buffer
  }
  return out;
}

int run(const Options& o) {
  applyThreads(o.threads);
  checkInspectRequest(request(o));
  if (o.memoryPlan && o.format == "dot") throw Error("--memory-plan prints text or json, not dot");
  if (o.memoryPlan && o.stats) throw Error("--memory-plan and --stats are separate reports: give one");
  Setting diagnostics;
  o.pipeline.applyDiagnostics(diagnostics);
  std::string report;
  if (o.memoryPlan) {
    report = memoryPlanReport(o);
  } else {
    const frontend::ModelSpec spec = openSpec(o.model, openOptions(o));
    report = inspectModel(spec, o.pipeline.choice(), diagnostics.pipeline.manager, request(o));
  }
  if (o.output.empty() || o.output == "-") {
    std::cout << report << std::flush;
  } else {  // written whole or not at all
    frontend::AtomicFile f(o.output, 0644);
    f.write(report.data(), report.size());
    f.commit();
  }
  return kExitOk;
}

}  // namespace

void registerInspect(CLI::App& app, Action& action) {
  auto o = std::make_shared<Options>();
  CLI::App* cmd =
      app.add_subcommand("inspect", "print a segment graph (input or optimized), or what the passes bought");
  cmd->add_option("model", o->model, "spec file (reference or Hugging Face names) or model directory")->required();
  auto* w = cmd->add_option("--weights", o->weights, "safetensors weights to load and check (graphs need none)");
  cmd->add_flag("--random-weights", o->randomWeights, "load the model with seeded random weights")->excludes(w);
  cmd->add_option("--seed", o->seed, "seed of --random-weights (default 0)");
  cmd->add_option("--stage", o->stage, "input (the literal graph) or optimized (default)")
      ->check(oneOf({"input", "optimized"}, "'input' or 'optimized'"));
  cmd->add_option("--format", o->format, "text (default), json or dot")
      ->check(oneOf({"text", "json", "dot"}, "'text', 'json' or 'dot'"));
  CLI::Option* stats =
      cmd->add_flag("--stats", o->stats, "ops per kind, FLOPs and bytes per segment before and after, and the fusions");
  cmd->add_flag("--memory-plan", o->memoryPlan,
                "the arena plan of a steady-state segment: buffers, arena, lower bound, state and weight bytes")
      ->excludes(stats);
  cmd->add_option("--qlen", o->qlen, "segment length (default: the spec's tgt_len)")->check(qlenCheck());
  cmd->add_option("--mem-len,--mlen", o->mlen, "remembered positions (default: the spec's mem_len)")
      ->check(memLenCheck());
  cmd->add_option("--batch", o->batch, "batch size (default 1)")->check(batchCheck());
  cmd->add_option("--outputs", o->outputs,
                  "the segment's outputs: logprob,nll (default, as run gives them), nll (as score runs), logprob (as "
                  "generate runs) or hidden (neither, as bench runs without --nll)")
      ->check(oneOf({std::begin(kInspectOutputs), std::end(kInspectOutputs)}, kInspectOutputsExpected));
  cmd->add_option("-o,--output", o->output, "write the report here instead of stdout (-: stdout)")
      ->check(nonEmptyPath());
  cmd->add_option("-t,--threads", o->threads,
                  "OpenMP threads for planning on the oneDNN backend (default: the machine's physical cores; 0: "
                  "OpenMP's default)")
      ->check(threadCountCheck());
  o->pipeline.add(*cmd);
  cmd->callback([o, &action] { action = [o] { return run(*o); }; });
}

}  // namespace txl::tools
