// driver/bench_probe.h - the machine figures a benchmark is judged against:
// the best f32 matmul rate and the memory read bandwidth (docs/PERFORMANCE.md).
//
// The probes run in a child process (`txlc bench-probe`, so that their
// gigabyte never counts in the benchmarked model's resident set) and take
// seconds, so machineProbe() keeps each result in the user's cache folder
// ($XDG_CACHE_HOME/txlc, else ~/.cache/txlc), one file per CPU, thread
// count, probe size, txlc and oneDNN version. A cached figure is used unless
// the caller asks to re-measure; an unreadable or stale cache file is
// re-measured and replaced.
//
//   ProbeResult p = machineProbe("/proc/self/exe", 2, 1024, ProbeMode::Cached);
//   if (p.ok) std::cout << p.f32.gflops << " GFLOP/s\n";
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace txl::driver {

struct MatmulFigure {
  double gflops = 0;  // 0: not measured (bf16 without native bf16 matmuls)
  std::string shape, impl;
};

struct ProbeResult {
  bool ok = false;
  MatmulFigure f32, bf16;
  // The peak a model running its linears at `precision` (driver/precision.h
  // name) is measured against. int8's linears widen their int8 weights and
  // multiply in f32 (backend/kernels/int8_linear.h): the f32 rate is their ceiling.
  const MatmulFigure& peakFor(const std::string& precision) const { return precision == "bf16" ? bf16 : f32; }
  double readBandwidthGbs = 0;
  bool cached = false;  // read from the cache file rather than measured now
  std::string error;    // why !ok
};

// The probes, in this process (the hidden `txlc bench-probe`).
ProbeResult runProbes(int threads, std::int64_t probeMiB);
nlohmann::json probeJson(const ProbeResult& p);
// `self bench-probe --threads T --probe-mib M` in a child process, its JSON read back.
ProbeResult runProbeChild(const std::string& self, int threads, std::int64_t probeMiB);

enum class ProbeMode {
  Cached,     // the cached figure when there is one, else measure and cache it
  Remeasure,  // measure now and replace the cached figure (`bench --probe`)
  Skip,       // no figures (`bench --no-probe`): efficiency and floors are left out
};
ProbeResult machineProbe(const std::string& self, int threads, std::int64_t probeMiB, ProbeMode mode);
// The cache file machineProbe() uses for these parameters ("" when there is no cache folder).
std::string probeCachePath(int threads, std::int64_t probeMiB);

}  // namespace txl::driver
