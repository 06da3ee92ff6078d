// driver/bench.h - the benchmark harness behind `txlc bench` (docs/PERFORMANCE.md).
//
// A benchmark is a sweep: the Cartesian product of precisions, batch sizes,
// segment lengths, memory lengths and thread counts (benchCases()), each case run
// on the same model - any form openModel() accepts: a model directory, a
// spec with weights or seeded random weights, a checkpoint, an artifact, the
// running standalone executable. For each case runBench() compiles the model
// for the case's setting, optionally fills the recurrent memory first
// (prefill: the timed segments are the steady state), runs untimed warm-up
// segments, then `repetitions` times restores the state after the warm-up
// and times `segments` segments one by one. Each repetition gives one
// tokens/s figure; the report has their mean and standard deviation and the
// latency percentiles of every timed segment. Against the machine's figures
// (driver/bench_probe.h) it derives the efficiency (useful GFLOP/s over the
// matmul peak) and, for qlen 1, the memory floor. `profile` reruns the
// steady-state plan with per-step timing; `slidingWindow` L compares a
// vanilla sliding-window evaluation with the memory-based one at attention
// length L. driver/bench_report.h prints reports, driver/bench_plot.h draws
// a sweep, driver/bench_trace.h writes the profiled steps as a trace.
// SIGINT/SIGTERM caught by frontend::catchInterrupts() abandon the case
// running (BenchInterrupted) between two segments.
//
//   driver::Model m = driver::openModel("bench/enwik8_base.json", {.randomWeights = true});
//   driver::Setting s = driver::defaultSetting(m);
//   driver::BenchOptions o;  o.prefill = true;
//   for (const driver::BenchCase& c : driver::benchCases(s, {1, 8}, {1, 80}, {}, {2}))
//     reports.push_back(driver::runBench(m, s, c, o, probe));
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "driver/bench_probe.h"
#include "driver/compile.h"

namespace txl::driver {

// One test of a sweep.
struct BenchCase {
  std::int64_t batch = 1;
  std::int64_t qlen = 1;  // tokens per timed segment
  std::int64_t memLen = 0;
  int threads = 1;
  Precision precision = Precision::F32;
};

// The Cartesian product, precision slowest, then batch, and threads
// fastest. An empty list takes the setting's value (threads: the machine's
// physical cores when the setting leaves them to OpenMP).
std::vector<BenchCase> benchCases(const Setting& base, const std::vector<std::int64_t>& batches,
                                  const std::vector<std::int64_t>& qlens, const std::vector<std::int64_t>& memLens,
                                  const std::vector<int>& threads, const std::vector<Precision>& precisions = {});

// What every case of a sweep shares.
struct BenchOptions {
  bool prefill = false;  // start with a full memory: time the steady state
  bool nll = false;      // also the NLL of every position (random targets)
  int segments = 10;     // timed per repetition
  // Untimed, before the first repetition: enough for the plan's first runs
  // (its cold run, then each thread variant twice: ThreadChoice in
  // backend/onednn/thread_policy.h), so the timed runs take the variant the
  // steady state takes.
  int warmup = 6;
  int repetitions = 5;
  std::optional<std::int64_t> slidingWindow;
  bool profile = false;
  std::uint64_t seed = 0;  // of the random tokens (and targets)
};

struct Latency {
  double avg = 0, median = 0, p90 = 0, p95 = 0, p99 = 0, min = 0, max = 0;  // ms
};
Latency latencyOf(std::vector<double> ms);

// The step times of one profiled segment (trace output, driver/bench_trace.h).
struct ProfileRun {
  double startUs = 0;          // steady clock, microseconds
  double wallUs = 0;           // the whole forward()
  std::vector<double> stepUs;  // per step, in plan order (BenchReport::profile's)
};

struct ProfileRow {
  std::string op, primitive, impl;
  std::string node;     // "%48": the node of `txlc inspect`'s graph of this segment (driver/inspect.h renumberNodes)
  double ms = 0;        // per segment
  bool serial = false;  // ran on one thread (backend::StepInfo::serial)
};

struct SlidingWindowRow {
  std::int64_t length = 0;
  double vanillaMsPerToken = 0, memoryMsPerToken = 0, speedup = 0;
};

struct BenchReport {
  std::string model, modelForm;  // as named; Model::form
  std::string semantics, initialMemory, backend, memoryForm;
  std::string precision = "f32";                           // the matmuls' (driver/precision.h)
  std::int64_t batch = 1, qlen = 0, memLen = 0, mlen = 0;  // mlen: remembered positions in the timed segments
  int threads = 0, segments = 0, warmup = 0, repetitions = 0;
  bool prefill = false, nll = false;
  Latency latency;                              // over every timed segment of every repetition
  std::vector<double> tokensPerSRuns;           // one per repetition
  double tokensPerS = 0, tokensPerSStddev = 0;  // their mean and sample standard deviation
  double usefulFlops = 0, graphFlops = 0;       // per segment
  double usefulGflops = 0;
  ProbeResult probe;
  double efficiency = 0;
  double memoryFloorBytes = 0, memoryFloorMs = 0, floorRatio = 0;  // qlen 1 only
  std::size_t peakRssBytes = 0, peakRssProcessBytes = 0;
  std::size_t weightBytes = 0, stateBytes = 0, arenaBytes = 0, constantBytes = 0, copiedConstantBytes = 0,
              rssBudgetBytes = 0;
  std::vector<ProfileRow> profile;
  std::vector<ProfileRun> profileRuns;  // the last kMaxProfileRuns profiled segments
  std::vector<SlidingWindowRow> slidingWindow;
  std::vector<std::string> refImpls;  // steps of the timed plan with a `ref` implementation
};

// Random weights (openModel's, on the heap) held as a loaded model holds its
// weights: written to an unlinked temporary safetensors file and mapped, so
// the resident memory measured is a real model's (plain weights the plans
// read only packed are file pages the executor drops).
void mapRandomWeights(Model& m);

inline constexpr std::size_t kMaxProfileRuns = 10;

// The setting a case runs: `base` (the model's setting with the user's
// overrides) with the case's batch, qlen, mem_len, threads and precision
// (resolved); with a sliding window, qlen 1 and mem_len L - 1.
Setting benchSetting(const Setting& base, const BenchCase& c, const BenchOptions& o);

// Thrown by runBench() when frontend::interruptSignal() is set: the case
// running is abandoned between two segments.
class BenchInterrupted : public std::runtime_error {
 public:
  explicit BenchInterrupted(int signal) : std::runtime_error("interrupted"), signal(signal) {}
  int signal;
};

// One case, run with benchSetting(); checked (checkSetting, checkMemoryFits
// with the case's own batch, qlen and mem_len) before anything is planned.
BenchReport runBench(const Model& m, const Setting& base, const BenchCase& c, const BenchOptions& o,
                     const ProbeResult& probe);

}  // namespace txl::driver
