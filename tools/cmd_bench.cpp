// tools/cmd_bench.cpp - `txlc bench [MODEL]`: throughput, latency and
// efficiency of a sweep of run settings (driver/bench.h, docs/PERFORMANCE.md),
// and the hidden `txlc bench-probe` the machine probe runs as its child process.
//
// MODEL is any form the other commands take (a model directory, a spec with
// --weights or --random-weights, a checkpoint, an artifact; implicit in a
// standalone executable). --precision, --batch, --qlen, --mem-len and
// --threads take comma-separated lists, run as their Cartesian product, one
// report row per case, printed as the case finishes. A case whose estimated
// memory exceeds the machine's RAM is skipped with a line on stderr (exit 3
// at the end); SIGINT/SIGTERM end the sweep with the rows done (exit 128 + signal).
#include <algorithm>
#include <csignal>
#include <filesystem>
#include <iostream>
#include <map>

#include "driver/bench.h"
#include "driver/bench_plot.h"
#include "driver/bench_report.h"
#include "driver/bench_trace.h"
#include "frontend/atomic_file.h"
#include "ir/check.h"
#include "tools/cli_checks.h"
#include "tools/command.h"
#include "tools/exit_codes.h"
#include "tools/model_flags.h"

namespace txl::tools {

namespace {

struct Options {
  ModelFlags model;
  bool randomWeights = false;
  std::uint64_t seed = 0;
  std::vector<std::int64_t> batches, qlens, memLens;
  std::vector<int> threads;
  BenchOptions bench;
  std::int64_t window = 0;
  std::string format = "md";
  std::string plot, trace;
  bool json = false, probe = false, noProbe = false;
  std::int64_t probeMiB = 1024;
};

// The names of a --precision list ("f32,int8"), in order, without repeats; none when not given.
std::vector<std::string> precisionNames(const std::string& list) {
  std::vector<std::string> names;
  std::size_t from = 0;
  for (std::size_t comma; !list.empty() && from <= list.size(); from = comma + 1) {
    comma = std::min(list.find(',', from), list.size());
    const std::string name = list.substr(from, comma - from);
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  }
  return names;
}

void writeAtomically(const std::string& path, const std::string& text) {
  frontend::AtomicFile f(path, 0644);
  f.write(text.data(), text.size());
  f.commit();
}

int run(Options& o) {
  const BenchFormat format = parseBenchFormat(o.json ? "json" : o.format);
  OpenOptions open = o.model.openOptions();
  open.randomWeights = o.randomWeights;
  open.seed = o.seed;
  // Outputs are checked before the model is read or anything is timed.
  for (const std::string* path : {&o.plot, &o.trace}) {
    if (path->empty()) continue;
    frontend::checkOutputPath(*path);
    const std::filesystem::path dir = std::filesystem::path(*path).parent_path();
    std::error_code ec;
    if (!dir.empty() && !std::filesystem::is_directory(dir, ec))
      throw Error(oneLine(*path) + ": the folder " + oneLine(dir.string()) + " does not exist");
  }
  Model m = openModel(o.model.model, open);
  if (o.randomWeights) mapRandomWeights(m);
  // --precision f32,bf16,int8: each checked as the setting of a run (the CPU, an artifact's own precision).
  const std::vector<std::string> names = precisionNames(o.model.pipeline.precision);
  std::vector<Precision> precisions;
  ModelFlags flags = o.model;
  for (const std::string& name : names) {
    flags.pipeline.precision = name;
    flags.setting(m);
    precisions.push_back(parsePrecision(name, "--precision"));
  }
  if (!names.empty()) flags.pipeline.precision = names.front();
  Setting base = flags.setting(m);
  base.threads = 0;  // per case: --threads, else the machine's physical cores
  if (o.window > 0) o.bench.slidingWindow = o.window;
  o.bench.seed = o.seed;
  const std::vector<BenchCase> cases = benchCases(base, o.batches, o.qlens, o.memLens, o.threads, precisions);
  // Every case is checked before the first probe: the probe's child process
  // runs with a case's thread count, so a count beyond the bound
  // (driver/compile.h maxThreads()) must never reach it.
  for (const BenchCase& c : cases) {
    if (c.threads > maxThreads())
      throw Error("--threads: expected a positive integer at most " + std::to_string(maxThreads()) + " (" +
                  std::to_string(kMaxThreadsPerCore) + " per core this process may use), got " +
                  std::to_string(c.threads));
    checkSetting(m.spec, benchSetting(base, c, o.bench));
  }
  // From here SIGINT/SIGTERM end the sweep between two segments: the rows
  // printed stay, the formats are closed, the plot and trace hold the cases done.
  frontend::catchInterrupts();
  const ProbeMode mode = o.noProbe ? ProbeMode::Skip : o.probe ? ProbeMode::Remeasure : ProbeMode::Cached;
  std::map<int, ProbeResult> probes;  // per thread count
  std::vector<BenchReport> reports;
  BenchReportWriter out(std::cout, format);
  std::size_t skipped = 0;
  int signal = 0;
  for (std::size_t i = 0; i < cases.size() && signal == 0; ++i) {
    const BenchCase& c = cases[i];
    const std::string which = "case " + std::to_string(i + 1) + " of " + std::to_string(cases.size());
    // The memory this case needs, with its own batch, qlen and mem_len, before it is probed or planned:
    // in all against the RAM, and beyond the loaded weights against what is available now.
    try {
      checkMemoryFits(m.spec, benchSetting(base, c, o.bench), m.path);
      checkMemoryAvailable(m.spec, benchSetting(base, c, o.bench), m.path, readMachineMemory());
    } catch (const Error& e) {
      std::cerr << "txlc: bench: " << which << " skipped: " << oneLine(e.what()) << std::endl;
      ++skipped;
      continue;
    }
    if (!probes.count(c.threads)) {
      probes[c.threads] = machineProbe("/proc/self/exe", c.threads, o.probeMiB, mode);
      if (mode != ProbeMode::Skip && !probes[c.threads].ok && frontend::interruptSignal() == 0)
        std::cerr << "txlc: warning: machine probe failed: " << oneLine(probes[c.threads].error) << std::endl;
    }
    if (cases.size() > 1)
      std::cerr << "txlc: bench: " << which << ": " << precisionName(c.precision) << ", batch " << c.batch << ", qlen "
                << c.qlen << ", mem_len " << c.memLen << ", " << c.threads << " threads" << std::endl;
    try {
      reports.push_back(runBench(m, base, c, o.bench, probes[c.threads]));
    } catch (const BenchInterrupted& e) {
      signal = e.signal;
      break;
    } catch (...) {
      out.finish();  // the rows printed stay a whole table, array or file; then the error line
      throw;
    }
    out.add(reports.back());
    signal = frontend::interruptSignal();
  }
  out.finish();
  if (!o.plot.empty()) writeAtomically(o.plot, benchPlotSvg(reports));
  if (!o.trace.empty()) writeAtomically(o.trace, benchTraceJson(reports).dump() + "\n");
  if (signal != 0) {
    std::cerr << "txlc: bench: interrupted by " << (signal == SIGINT ? "SIGINT" : "SIGTERM") << " after "
              << reports.size() << " of " << cases.size() << " cases; the rows printed are theirs" << std::endl;
    return 128 + signal;
  }
  if (skipped > 0)
    throw Error(m.path + ": " + std::to_string(skipped) + " of " + std::to_string(cases.size()) +
                " cases skipped: they need more memory than this machine has (each named above)");
  return kExitOk;
}

}  // namespace

void registerBench(CLI::App& app, Action& action) {
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("bench", "benchmark a model: tokens/s, latency, efficiency, memory");
  o->model.pipeline.precisionList = true;  // --precision f32,bf16,int8 sweeps
  o->model.add(*cmd, ModelFlags::Shape::None);
  CLI::Option* random = cmd->add_flag("--random-weights", o->randomWeights, "seeded random weights instead of a file");
  if (o->model.weightsOpt) random->excludes(o->model.weightsOpt);
  cmd->add_option("--seed", o->seed, "seed of the random weights and tokens (default 0)");
  cmd->add_option("--batch", o->batches, "streams per segment; a list runs each (default: 1, or the artifact's)")
      ->delimiter(',')
      ->check(batchCheck());
  cmd->add_option("--qlen", o->qlens, "tokens per timed segment; a list runs each (default: the spec's tgt_len)")
      ->delimiter(',')
      ->check(qlenCheck());
  cmd->add_option("--mem-len", o->memLens, "remembered positions; a list runs each (default: the spec's mem_len)")
      ->delimiter(',')
      ->check(memLenCheck());
  cmd->add_option("-t,--threads", o->threads,
                  "OpenMP threads; a list runs each (default: the machine's physical cores; 0: OpenMP's default)")
      ->delimiter(',')
      ->check(threadCountCheck());
  cmd->add_flag("--prefill", o->bench.prefill, "start with a full memory: time the steady state");
  cmd->add_option("--segments", o->bench.segments, "timed segments per repetition (default 10)")
      ->check(integerIn(1, 1 << 20, "a positive integer"));
  cmd->add_option("--warmup", o->bench.warmup, "untimed warm-up segments (default 6)")
      ->check(integerIn(0, 1 << 20, "a non-negative integer"));
  cmd->add_option("--repetitions", o->bench.repetitions,
                  "timed repetitions per case, each from the state after the warm-up (default 5)")
      ->check(integerIn(1, 1 << 16, "a positive integer"));
  cmd->add_flag("--nll", o->bench.nll, "also the NLL of every position (random targets)");
  cmd->add_option("--sliding-window", o->window,
                  "attention length L: vanilla sliding-window evaluation vs memory (qlen 1, L-1 remembered)")
      ->check(integerIn(2, std::int64_t(1) << 40, "an attention length of at least 2"));
  CLI::Option* format =
      cmd->add_option("--format", o->format, "md (default: a table row per case), text, csv, json or jsonl")
          ->check(CLI::IsMember({"md", "text", "csv", "json", "jsonl"}));
  cmd->add_flag("--json", o->json, "the same as --format json")->excludes(format);
  CLI::Option* profile =
      cmd->add_flag("--profile", o->bench.profile, "time per plan step and its oneDNN implementation");
  cmd->add_option("--trace", o->trace,
                  "--profile: the profiled segments' steps as a Chrome/Perfetto trace (JSON) in FILE")
      ->needs(profile)
      ->check(nonEmptyPath());
  cmd->add_option("--plot", o->plot, "draw tokens/s against the swept axis as an SVG chart in FILE")
      ->check(nonEmptyPath());
  CLI::Option* probe =
      cmd->add_flag("--probe", o->probe, "measure the machine again instead of using its cached figures");
  cmd->add_flag("--no-probe", o->noProbe, "skip the machine figures (no efficiency, no memory floor)")->excludes(probe);
  cmd->add_option("--probe-mib", o->probeMiB, "size of the bandwidth probe's array (default 1024)")
      ->check(integerIn(1, 1 << 16, "a size in MiB in [1, 65536]"))
      ->group("");
  cmd->callback([o, &action] {
    using Output = std::pair<const char*, const std::string*>;
    for (const Output& out : {Output{"--plot", &o->plot}, Output{"--trace", &o->trace}})
      if (*out.second == "-")
        throw CLI::ValidationError(std::string(out.first) + " -", "writes a file, not a stream; give a file");
    action = [o] { return run(*o); };
  });

  // The child process of the machine probe: JSON on stdout.
  auto p = std::make_shared<std::pair<int, std::int64_t>>(0, 1024);
  CLI::App* child = app.add_subcommand("bench-probe", "")->group("");
  child->add_option("--threads", p->first);
  child->add_option("--probe-mib", p->second);
  child->callback([p, &action] {
    action = [p] {
      std::cout << probeJson(runProbes(p->first, p->second)).dump() << std::endl;
      return kExitOk;
    };
  });
}

}  // namespace txl::tools
