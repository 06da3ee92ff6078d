// tools/cmd_bench.cpp - `txlc bench MODEL_OR_SPEC`: throughput, latency and
// efficiency of one run setting (driver/bench.h, docs/PERFORMANCE.md), and the
// hidden `txlc bench-probe` the benchmark runs as its child process.
#include <iostream>

#include "driver/bench.h"
#include "tools/command.h"
#include "tools/exit_codes.h"

namespace txl::tools {

namespace {

struct Options {
  BenchOptions bench;
  std::string weights;
  std::int64_t qlen = 0, memLen = -1, window = 0;
  bool json = false;
  PipelineFlags pipeline;
};

int run(Options& o) {
  if (!o.weights.empty()) o.bench.weights = o.weights;
  if (o.qlen > 0) o.bench.qlen = o.qlen;
  if (o.memLen >= 0) o.bench.memLen = o.memLen;
  if (o.window > 0) o.bench.slidingWindow = o.window;
  o.pipeline.apply(o.bench.setting);
  if (!o.bench.randomWeights && !o.bench.weights && o.bench.model.ends_with(".json"))
    std::cerr << "txlc: note: a spec file without --weights needs --random-weights" << std::endl;
  BenchReport r = runBench(o.bench);
  if (o.json) std::cout << benchJson(r).dump(2) << std::endl;
  else std::cout << benchText(r) << std::flush;
  return kExitOk;
}

}  // namespace

void registerBench(CLI::App& app, Action& action) {
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("bench", "benchmark a model: tokens/s, latency, efficiency, memory");
  cmd->add_option("model", o->bench.model, "model directory or spec file")->required();
  cmd->add_option("--weights", o->weights, "safetensors file (with a spec file)");
  cmd->add_flag("--random-weights", o->bench.randomWeights, "seeded random weights instead of a file");
  cmd->add_option("--seed", o->bench.seed, "seed of the random weights and tokens (default 0)");
  cmd->add_option("--batch", o->bench.batch, "streams per segment (default 1)");
  cmd->add_option("--qlen", o->qlen, "tokens per segment (default: the spec's tgt_len)");
  cmd->add_option("--mem-len", o->memLen, "remembered positions (default: the spec's mem_len)");
  cmd->add_flag("--prefill", o->bench.prefill, "start with a full memory: time the steady state");
  cmd->add_option("--segments", o->bench.segments, "timed segments (default 10)");
  cmd->add_option("--warmup", o->bench.warmup, "untimed warm-up segments (default 2)");
  cmd->add_option("--threads", o->bench.threads, "OpenMP threads (default: OpenMP's)");
  cmd->add_flag("--nll", o->bench.nll, "also the NLL of every position (random targets)");
  cmd->add_option("--sliding-window", o->window,
                  "attention length L: vanilla sliding-window evaluation vs memory (qlen 1, L-1 remembered)");
  cmd->add_flag("--json", o->json, "machine-readable result on stdout");
  cmd->add_flag("--profile", o->bench.profile, "time per plan step and its oneDNN implementation");
  cmd->add_option("--probe-mib", o->bench.probeMiB, "size of the bandwidth probe's array (default 1024)")->group("");
  cmd->add_flag("!--no-probe", o->bench.probe, "skip the machine probe")->group("");
  o->pipeline.add(*cmd);
  cmd->callback([o, &action] { action = [o] { return run(*o); }; });

  // The child process of the machine probe: JSON on stdout.
  auto p = std::make_shared<std::pair<int, std::int64_t>>(0, 1024);
  CLI::App* probe = app.add_subcommand("bench-probe", "")->group("");
  probe->add_option("--threads", p->first);
  probe->add_option("--probe-mib", p->second);
  probe->callback([p, &action] {
    action = [p] {
      std::cout << probeJson(runProbes(p->first, p->second)).dump() << std::endl;
      return kExitOk;
    };
  });
}

}  // namespace txl::tools
