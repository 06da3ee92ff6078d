// driver/bench.h - the benchmark harness behind `txlc bench` (docs/PERFORMANCE.md).
//
// runBench() loads a model (random seeded weights allowed), compiles it for
// one run setting, optionally fills the recurrent memory first (--prefill:
// the timed segments are the steady state), runs untimed warm-up segments,
// then times `segments` segments one by one. Around that it measures, in a
// child process (`txlc bench-probe`, so its gigabyte never counts in the
// model's resident set), the best f32 matmul rate and the read bandwidth of
// this machine, and derives the efficiency (useful GFLOP/s over the matmul
// peak) and, for qlen 1, the memory floor. --profile reruns the steady-state
// plan with per-step timing; --sliding-window L compares a vanilla
// sliding-window evaluation with the memory-based one at attention length L.
//
//   BenchOptions o;
//   o.model = "bench/enwik8_base.json"; o.randomWeights = true; o.prefill = true;
//   BenchReport r = runBench(o);
//   std::cout << benchJson(r).dump(2);
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "driver/compile.h"

namespace txl::driver {

struct BenchOptions {
  std::string model;
  std::optional<std::string> weights;
  bool randomWeights = false;
  std::uint64_t seed = 0;
  std::int64_t batch = 1;
  std::optional<std::int64_t> qlen, memLen;  // default: the spec's tgt_len, mem_len
  bool prefill = false;
  int segments = 10;
  int warmup = 2;
  int threads = 0;  // 0: OpenMP's default
  bool nll = false;
  std::optional<std::int64_t> slidingWindow;
  bool profile = false;
  bool probe = true;
  std::int64_t probeMiB = 1024;  // bandwidth array
  std::string self;              // the txlc executable, for the probe child (default /proc/self/exe)
  Setting setting;               // the backend and the pipeline (batch, lengths and threads: the fields above)
};

struct Latency {
  double avg = 0, median = 0, p90 = 0, p95 = 0, p99 = 0, min = 0, max = 0;  // ms
};
Latency latencyOf(std::vector<double> ms);

struct ProbeResult {
  bool ok = false;
  double matmulPeakGflops = 0;
  std::string matmulShape, matmulImpl;
  double readBandwidthGbs = 0;
  std::string error;
};

struct ProfileRow {
  std::string op, primitive, impl;
  std::uint64_t node = 0;
  double ms = 0;  // per segment
};

struct SlidingWindowRow {
  std::int64_t length = 0;
  double vanillaMsPerToken = 0, memoryMsPerToken = 0, speedup = 0;
};

struct BenchReport {
  std::string model;
  std::int64_t batch = 1, qlen = 0, memLen = 0, mlen = 0;  // mlen: remembered positions in the timed segments
  int threads = 0, segments = 0, warmup = 0;
  bool prefill = false, nll = false;
  Latency latency;
  double tokensPerS = 0;
  double usefulFlops = 0, graphFlops = 0;  // per segment
  double usefulGflops = 0;
  ProbeResult probe;
  double efficiency = 0;
  double memoryFloorBytes = 0, memoryFloorMs = 0, floorRatio = 0;  // qlen 1 only
  std::size_t peakRssBytes = 0, peakRssProcessBytes = 0;
  std::size_t weightBytes = 0, stateBytes = 0, arenaBytes = 0, constantBytes = 0, rssBudgetBytes = 0;
  std::vector<ProfileRow> profile;
  std::vector<SlidingWindowRow> slidingWindow;
  std::vector<std::string> refImpls;  // steps of the timed plan with a `ref` implementation
};

BenchReport runBench(const BenchOptions& options);
nlohmann::json benchJson(const BenchReport& r);
std::string benchText(const BenchReport& r);

// The probes, in this process (the hidden `txlc bench-probe`), and from a
// child process running `self bench-probe` (its JSON on stdout).
ProbeResult runProbes(int threads, std::int64_t probeMiB);
nlohmann::json probeJson(const ProbeResult& p);
ProbeResult runProbeChild(const std::string& self, int threads, std::int64_t probeMiB);

}  // namespace txl::driver
