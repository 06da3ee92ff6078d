// driver/bench.cpp - runBench() and the probes (bench.h, docs/PERFORMANCE.md).
//
// Algorithm (runBench):
//   1. Probe the machine in a child process: `self bench-probe` prints the
//      best f32 matmul rate and the read bandwidth as JSON.
//   2. Load the model (random seeded weights allowed) and compile it for the
//      run setting (batch, mem_len).
//   3. --prefill: a separate session runs one untimed segment of mem_len
//      tokens, and the benchmark session starts from its state (a full
//      memory); that session and its plan are then freed and the peak
//      resident set is reset (/proc/self/clear_refs), so the figure is the
//      steady state's.
//   4. Warm-up segments, untimed. When the timed segments will meet shapes
//      not met yet (no prefill: the memory still grows), they are rehearsed
//      untimed first from a saved state, so no timed segment builds a plan.
//   5. Time each segment's forward(). Tokens are random (seeded), targets too
//      with --nll.
//   6. --profile: the steady-state plan again, with per-step timing.
//   7. --sliding-window L: the vanilla evaluation (a fresh forward of L
//      tokens without memory per predicted token) against the timed one.
#include "driver/bench.h"

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <random>
#include <set>
#include <sstream>

#include "backend/onednn_executor.h"
#include "backend/onednn_probe.h"
#include "frontend/model_loader.h"
#include "frontend/safetensors.h"
#include "frontend/weights.h"
#include "ir/check.h"
#include "driver/flop_count.h"

namespace txl::driver {

namespace {

using Clock = std::chrono::steady_clock;

double msSince(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

// Random ids in [0, n) as i64[qlen, batch].
ir::Tensor randomIds(std::int64_t qlen, std::int64_t batch, std::int64_t n, std::mt19937_64& rng) {
  ir::Tensor t = ir::Tensor::zeros({ir::DType::I64, {qlen, batch}});
  std::uniform_int_distribution<std::int64_t> dist(0, n - 1);
  for (auto& v : t.span<std::int64_t>()) v = dist(rng);
  return t;
}

// A field of /proc/self/status in bytes ("VmHWM", "VmRSS"), or 0.
std::size_t procStatusBytes(const std::string& key) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(key + ":", 0) == 0) return std::size_t(std::stoull(line.substr(key.size() + 1))) * 1024;
  return 0;
}

// Resets the peak resident set (VmHWM) to the current one; false when the kernel refuses.
bool resetPeakRss() {
  std::ofstream out("/proc/self/clear_refs");
  out << "5";
  out.flush();
  return bool(out);
}

std::size_t processPeakRss() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return std::size_t(u.ru_maxrss) * 1024;
}

// Bytes one step of qlen 1 must read (bench.h): every layer's weights with
// r_net replaced by its folded table over klen, the u/v biases, the output
// layer when the segment computes it, and the cached keys and values.
double memoryFloorBytes(const frontend::ModelSpec& spec, const ir::TensorMap& weights, std::int64_t batch,
                        std::int64_t mlen, bool output) {
  const double f32 = 4.0, hd = double(spec.n_head * spec.d_head);
  std::set<const void*> seen;
  double bytes = 0;
  for (const auto& [name, t] : weights) {
    if (!seen.insert(t.raw()).second) continue;
    const bool layer = name.rfind("layers.", 0) == 0, crit = name.rfind("crit.", 0) == 0;
    if (name.find("r_net.weight") != std::string::npos) continue;
    if (layer || name == "r_w_bias" || name == "r_r_bias" || (crit && output)) bytes += double(t.bytes());
  }
  const double klen = double(mlen + 1);
  if (spec.attn_type == 0) bytes += double(spec.n_layer) * klen * hd * f32;       // W_r R, as stored
  bytes += double(spec.n_layer) * double(batch) * double(mlen) * 2.0 * hd * f32;  // cached k and v
  return bytes;
}

}  // namespace

Latency latencyOf(std::vector<double> ms) {
  Latency l;
  if (ms.empty()) return l;
  std::sort(ms.begin(), ms.end());
  auto rank = [&](double q) { return ms[std::size_t(std::max(1.0, std::ceil(q * double(ms.size())))) - 1]; };
  double sum = 0;
  for (double v : ms) sum += v;
  l.avg = sum / double(ms.size());
  l.median = ms.size() % 2 ? ms[ms.size() / 2] : 0.5 * (ms[ms.size() / 2 - 1] + ms[ms.size() / 2]);
  l.p90 = rank(0.90);
  l.p95 = rank(0.95);
  l.p99 = rank(0.99);
  l.min = ms.front();
  l.max = ms.back();
  return l;
}

// --- probes ------------------------------------------------------------------

ProbeResult runProbes(int threads, std::int64_t probeMiB) {
  backend::setThreads(threads);
  ProbeResult p;
  backend::MatmulPeak peak = backend::measureMatmulPeak();
  p.matmulPeakGflops = peak.gflops;
  p.matmulShape = peak.shape;
  p.matmulImpl = peak.impl;
  p.readBandwidthGbs = backend::measureReadBandwidth(std::size_t(probeMiB) << 20);
  p.ok = true;
  return p;
}

nlohmann::json probeJson(const ProbeResult& p) {
  return {{"matmul_peak_gflops", p.matmulPeakGflops},
          {"matmul_shape", p.matmulShape},
          {"matmul_impl", p.matmulImpl},
          {"read_bandwidth_gbs", p.readBandwidthGbs},
          {"threads", backend::threadCount()}};
}

ProbeResult runProbeChild(const std::string& self, int threads, std::int64_t probeMiB) {
  ProbeResult p;
  int fds[2];
  if (pipe(fds) != 0) {
    p.error = "pipe failed";
    return p;
  }
  std::cout.flush();
  std::cerr.flush();
  const std::string t = std::to_string(threads), mib = std::to_string(probeMiB);
  const pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    p.error = "fork failed";
    return p;
  }
  if (pid == 0) {
    dup2(fds[1], STDOUT_FILENO);
    close(fds[0]);
    close(fds[1]);
    execl(self.c_str(), self.c_str(), "bench-probe", "--threads", t.c_str(), "--probe-mib", mib.c_str(),
          static_cast<char*>(nullptr));
    _exit(127);
  }
  close(fds[1]);
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;) out.append(buf, std::size_t(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    p.error = self + " bench-probe exited with status " + std::to_string(WEXITSTATUS(status));
    return p;
  }
  try {
    auto j = nlohmann::json::parse(out);
    p.matmulPeakGflops = j.at("matmul_peak_gflops");
    p.matmulShape = j.at("matmul_shape");
    p.matmulImpl = j.at("matmul_impl");
    p.readBandwidthGbs = j.at("read_bandwidth_gbs");
    p.ok = true;
  } catch (const nlohmann::json::exception& e) {
    p.error = std::string("bench-probe printed no valid JSON: ") + e.what();
  }
  return p;
}

// --- the benchmark -----------------------------------------------------------

namespace {

struct Streams {
  const frontend::ModelSpec& spec;
  std::int64_t batch;
  std::mt19937_64 rng;
  ir::Tensor tokens(std::int64_t qlen) { return randomIds(qlen, batch, spec.n_token, rng); }
};

// Fills `session`'s memory to mem_len with one untimed segment in a separate
// session (freed before returning, with its plan).
// Random weights held as a loaded model holds its weights: written to a
// temporary safetensors file, mapped read-only and bound like any weights
// file. The file is unlinked at once (the mapping keeps it readable), so
// nothing is left behind. The resident memory measured is then a real
// model's: plain weights that the plans read only packed are file pages the
// executor drops (backend/packed_weights.h).
frontend::WeightMap fileBackedWeights(const frontend::ModelSpec& spec, const frontend::WeightMap& weights) {
  std::string dir = (std::filesystem::temp_directory_path() / "txlc-bench-XXXXXX").string();
  if (!::mkdtemp(dir.data())) throw Error(dir + ": cannot create a temporary directory: " + std::strerror(errno));
  const std::string path = dir + "/random.safetensors";
  std::vector<std::pair<std::string, ir::Tensor>> stored;
  for (const frontend::WeightSlot& slot : frontend::weightSlots(spec))
    if (slot.aliasOf.empty()) stored.emplace_back(slot.name, weights.at(slot.name));
  try {
    frontend::writeSafetensors(path, stored);
    frontend::SafetensorsFile file = frontend::SafetensorsFile::open(path);
    frontend::WeightMap mapped = frontend::bindWeights(spec, file);
    std::filesystem::remove_all(dir);
    return mapped;
  } catch (...) {
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
    throw;
  }
}

void prefill(const std::shared_ptr<backend::CompiledModel>& model, backend::Session& session, Streams& s) {
  const std::int64_t memLen = model->info().memLen;
  if (memLen == 0) return;
  ir::TensorMap state;
  {
    backend::Session fill(model);
    fill.forward(s.tokens(memLen), nullptr, false);
    state = fill.saveState();
  }
  session.loadState(state);
}

// One timed forward (ms).
double timedForward(backend::Session& session, Streams& s, std::int64_t qlen, bool nll) {
  ir::Tensor tokens = s.tokens(qlen), targets;
  if (nll) targets = s.tokens(qlen);
  const auto t0 = Clock::now();
  session.forward(tokens, nll ? &targets : nullptr, false);
  return msSince(t0);
}

std::vector<ProfileRow> profilePlan(backend::Session& session, Streams& s, std::int64_t qlen, bool nll, int runs) {
  const ir::TensorMap state = session.saveState();
  session.loadState(state);
  timedForward(session, s, qlen, nll);  // the plan of this shape, built if new
  backend::CompiledGraph* plan = session.lastPlan();
  if (!plan || !plan->hasSteps()) return {};
  plan->setProfiling(true);
  for (int r = 0; r < runs; ++r) {
    session.loadState(state);
    timedForward(session, s, qlen, nll);
  }
  std::vector<ProfileRow> rows;
  const auto& steps = plan->steps();
  const auto& secs = plan->stepSeconds();
  for (std::size_t i = 0; i < steps.size(); ++i)
    rows.push_back({steps[i].op, steps[i].primitive, steps[i].impl, steps[i].node, secs[i] * 1e3 / runs});
  plan->setProfiling(false);
  return rows;
}

}  // namespace

BenchReport runBench(const BenchOptions& o) {
  BenchReport r;
  r.model = o.model;
  r.batch = o.batch;
  r.prefill = o.prefill || o.slidingWindow.has_value();
  r.nll = o.nll;
  r.segments = std::max(1, o.segments);
  r.warmup = std::max(0, o.warmup);
  if (o.batch < 1) throw Error("--batch: expected a positive integer, got " + std::to_string(o.batch));
  if (o.slidingWindow && *o.slidingWindow < 2)
    throw Error("--sliding-window: expected an attention length of at least 2, got " +
                std::to_string(*o.slidingWindow));
  backend::setThreads(o.threads);
  r.threads = backend::threadCount();

  // 1. The machine, from a child process.
  if (o.probe) {
    r.probe = runProbeChild(o.self.empty() ? "/proc/self/exe" : o.self, r.threads, o.probeMiB);
    if (!r.probe.ok) std::cerr << "txlc: warning: machine probe failed: " << oneLine(r.probe.error) << std::endl;
  }

  // 2. The model.
  frontend::LoadOptions load;
  load.randomWeights = o.randomWeights;
  load.seed = o.seed;
  frontend::LoadedModel m = frontend::loadModel(o.model, o.weights, load);
  for (const auto& w : m.spec.warnings) std::cerr << "txlc: warning: " << oneLine(w) << std::endl;
  if (o.randomWeights) m.weights = fileBackedWeights(m.spec, m.weights);
  ir::TensorMap weights(m.weights.begin(), m.weights.end());
  const Model model0 = modelFrom(m.spec, weights, o.model);
  Setting settings = defaultSetting(model0);
  settings.backend = o.setting.backend, settings.pipeline = o.setting.pipeline;
  settings.qlen = std::max<std::int64_t>(m.spec.tgt_len, 1);  // sizes the state windows, as a stream of the spec's
  settings.batch = o.batch;
  if (o.memLen) settings.memLen = *o.memLen;
  r.qlen = o.qlen.value_or(m.spec.tgt_len > 0 ? m.spec.tgt_len : 1);
  if (o.slidingWindow) {
    r.qlen = 1;
    settings.memLen = *o.slidingWindow - 1;
  }
  if (r.qlen < 1) throw Error("--qlen: expected a positive integer, got " + std::to_string(r.qlen));
  auto model = compile(model0, settings);
  r.memLen = model->info().memLen;
  Streams streams{m.spec, o.batch, std::mt19937_64(o.seed + 1)};

  // 3. Prefill, then the steady state's peak resident set.
  backend::Session session(model);
  if (r.prefill) prefill(model, session, streams);
  const bool peakReset = resetPeakRss();

  // 4. Warm-up, and a rehearsal of shapes not met yet.
  for (int i = 0; i < r.warmup; ++i) timedForward(session, streams, r.qlen, o.nll);
  const bool steady = r.prefill || r.memLen == 0;
  if (!steady || r.warmup == 0) {
    const ir::TensorMap state = session.saveState();
    for (int i = 0; i < (steady ? 1 : r.segments); ++i) timedForward(session, streams, r.qlen, o.nll);
    session.loadState(state);
  }

  // 5. Timed segments.
  r.mlen = session.mlen();
  std::vector<double> ms;
  for (int i = 0; i < r.segments; ++i) ms.push_back(timedForward(session, streams, r.qlen, o.nll));
  r.latency = latencyOf(ms);
  r.tokensPerS = double(r.batch * r.qlen) / (r.latency.avg / 1e3);

  // FLOPs of the first timed shape (the memory may still grow without --prefill).
  FlopCount flops = countFlops(model->buildGraph({r.qlen, r.mlen, {false, o.nll}, false}));
  r.usefulFlops = flops.useful;
  r.graphFlops = flops.graph;
  r.usefulGflops = flops.useful / (r.latency.avg / 1e3) / 1e9;
  if (r.probe.ok && r.probe.matmulPeakGflops > 0) r.efficiency = r.usefulGflops / r.probe.matmulPeakGflops;
  if (r.qlen == 1) {
    r.memoryFloorBytes = memoryFloorBytes(m.spec, weights, r.batch, r.mlen, o.nll);
    if (r.probe.ok && r.probe.readBandwidthGbs > 0) {
      r.memoryFloorMs = r.memoryFloorBytes / (r.probe.readBandwidthGbs * 1e9) * 1e3;
      r.floorRatio = r.latency.median / r.memoryFloorMs;
    }
  }

  // Memory: the steady state's peak against weights + state + arena + 64 MiB.
  r.peakRssProcessBytes = processPeakRss();
  r.peakRssBytes = peakReset ? procStatusBytes("VmHWM") : r.peakRssProcessBytes;
  r.weightBytes = ir::distinctBytes(weights) + model->constants().bytes();
  if (const backend::CompiledGraph* plan = session.lastPlan(); plan && plan->hasSteps()) {
    r.arenaBytes = plan->arenaBytes();
    r.constantBytes = plan->constantBytes();
    for (const auto& s : plan->steps())
      if (s.impl.rfind("ref", 0) == 0) r.refImpls.push_back(s.op + " (node " + std::to_string(s.node) + "): " + s.impl);
  }
  // The state as held: every slot's window (2·mem_len + qlen positions, docs/MEMORY.md), not just the mlen rows in use.
  r.stateBytes = session.stateBytes();
  r.rssBudgetBytes = r.weightBytes + r.stateBytes + r.arenaBytes + (std::size_t(64) << 20);

  // 6. Profile.
  if (o.profile) r.profile = profilePlan(session, streams, r.qlen, o.nll, std::max(3, r.segments));

  // 7. The vanilla sliding-window evaluation at the same attention length.
  if (o.slidingWindow) {
    const std::int64_t L = *o.slidingWindow;
    Setting vanilla = settings;
    vanilla.memLen = 0;
    vanilla.sameLength = false;
    auto vmodel = compile(model0, vanilla);
    backend::Session v(vmodel);
    v.forward(streams.tokens(L), nullptr, false);  // builds the plan
    std::vector<double> vms;
    for (int i = 0; i < r.segments; ++i) {
      v.reset();
      vms.push_back(timedForward(v, streams, L, false));
    }
    SlidingWindowRow row;
    row.length = L;
    row.vanillaMsPerToken = latencyOf(vms).median;
    row.memoryMsPerToken = r.latency.median;
    row.speedup = row.vanillaMsPerToken / row.memoryMsPerToken;
    r.slidingWindow.push_back(row);
  }
  return r;
}

// --- reports -----------------------------------------------------------------

nlohmann::json benchJson(const BenchReport& r) {
  auto orNull = [](bool ok, double v) { return ok ? nlohmann::json(v) : nlohmann::json(nullptr); };
  nlohmann::json j = {
      {"model", r.model},
      {"batch", r.batch},
      {"qlen", r.qlen},
      {"mem_len", r.memLen},
      {"mlen", r.mlen},
      {"threads", r.threads},
      {"segments", r.segments},
      {"warmup", r.warmup},
      {"prefill", r.prefill},
      {"nll", r.nll},
      {"tokens_per_s", r.tokensPerS},
      {"ms_per_segment", r.latency.median},
      {"avg_ms", r.latency.avg},
      {"p90_ms", r.latency.p90},
      {"p95_ms", r.latency.p95},
      {"p99_ms", r.latency.p99},
      {"min_ms", r.latency.min},
      {"max_ms", r.latency.max},
      {"useful_gflop_per_segment", r.usefulFlops / 1e9},
      {"graph_gflop_per_segment", r.graphFlops / 1e9},
      {"useful_gflops", r.usefulGflops},
      {"matmul_peak_gflops", orNull(r.probe.ok, r.probe.matmulPeakGflops)},
      {"matmul_peak_shape", r.probe.matmulShape},
      {"matmul_peak_impl", r.probe.matmulImpl},
      {"read_bandwidth_gbs", orNull(r.probe.ok, r.probe.readBandwidthGbs)},
      {"efficiency", orNull(r.probe.ok, r.efficiency)},
      {"memory_floor_bytes", orNull(r.qlen == 1, r.memoryFloorBytes)},
      {"memory_floor_ms", orNull(r.qlen == 1 && r.probe.ok, r.memoryFloorMs)},
      {"memory_floor_ratio", orNull(r.qlen == 1 && r.probe.ok, r.floorRatio)},
      {"peak_rss_bytes", r.peakRssBytes},
      {"peak_rss_process_bytes", r.peakRssProcessBytes},
      {"weight_bytes", r.weightBytes},
      {"state_bytes", r.stateBytes},
      {"arena_bytes", r.arenaBytes},
      {"constant_bytes", r.constantBytes},
      {"rss_budget_bytes", r.rssBudgetBytes},
      {"ref_impls", r.refImpls},
  };
  if (!r.profile.empty()) {
    nlohmann::json p = nlohmann::json::array();
    for (const auto& row : r.profile)
      p.push_back(
          {{"op", row.op}, {"node", row.node}, {"primitive", row.primitive}, {"impl", row.impl}, {"ms", row.ms}});
    j["profile"] = p;
  }
  if (!r.slidingWindow.empty()) {
    const auto& s = r.slidingWindow.front();
    j["sliding_window"] = {{"length", s.length},
                           {"vanilla_ms_per_token", s.vanillaMsPerToken},
                           {"memory_ms_per_token", s.memoryMsPerToken},
                           {"speedup", s.speedup}};
  }
  return j;
}

std::string benchText(const BenchReport& r) {
  std::ostringstream out;
  out.setf(std::ios::fixed);
  auto mib = [](std::size_t b) { return double(b) / double(1 << 20); };
  out.precision(1);
  out << "model        " << r.model << "\n";
  out << "setting      batch " << r.batch << ", qlen " << r.qlen << ", mem_len " << r.memLen << " (" << r.mlen
      << " remembered), " << r.threads << " threads" << (r.nll ? ", with NLL" : "") << "\n";
  out << "segments     " << r.segments << " timed after " << r.warmup << " warm-up"
      << (r.prefill ? ", memory prefilled" : "") << "\n";
  out << "throughput   " << r.tokensPerS << " tokens/s\n";
  out.precision(2);
  out << "latency ms   avg " << r.latency.avg << "  median " << r.latency.median << "  p90 " << r.latency.p90
      << "  p95 " << r.latency.p95 << "  p99 " << r.latency.p99 << "\n";
  out << std::defaultfloat << std::setprecision(4) << "useful work  " << r.usefulFlops / 1e9
      << " GFLOP/segment (the graph does " << r.graphFlops / 1e9 << "), " << r.usefulGflops << " GFLOP/s\n"
      << std::fixed;
  if (r.probe.ok) {
    out << "machine      matmul peak " << r.probe.matmulPeakGflops << " GFLOP/s (" << r.probe.matmulShape << ", "
        << r.probe.matmulImpl << "), read bandwidth " << r.probe.readBandwidthGbs << " GB/s\n";
    out.precision(3);
    out << "efficiency   " << r.efficiency << "\n";
    out.precision(2);
    if (r.qlen == 1)
      out << "memory floor " << r.memoryFloorMs << " ms (" << mib(std::size_t(r.memoryFloorBytes))
          << " MiB per step); measured / floor = " << r.floorRatio << "\n";
  }
  out.precision(1);
  out << "peak RSS     " << mib(r.peakRssBytes) << " MiB (budget " << mib(r.rssBudgetBytes) << " = weights "
      << mib(r.weightBytes) << " + state " << mib(r.stateBytes) << " + arena " << mib(r.arenaBytes)
      << " + 64; plan constants " << mib(r.constantBytes) << ")\n";
  for (const auto& s : r.refImpls) out << "SLOW PATH    " << s << "\n";
  for (const auto& s : r.slidingWindow) {
    out.precision(2);
    out << "sliding window L=" << s.length << ": vanilla " << s.vanillaMsPerToken << " ms/token, memory "
        << s.memoryMsPerToken << " ms/token, speed-up " << s.speedup << "x\n";
  }
  if (!r.profile.empty()) {
    double total = 0;
    for (const auto& p : r.profile) total += p.ms;
    std::map<std::string, std::pair<double, int>> byKind;
    for (const auto& p : r.profile) {
      auto& e = byKind[p.op + " " + p.primitive + " " + p.impl];
      e.first += p.ms;
      e.second += 1;
    }
    std::vector<std::pair<std::string, std::pair<double, int>>> kinds(byKind.begin(), byKind.end());
    std::sort(kinds.begin(), kinds.end(), [](auto& a, auto& b) { return a.second.first > b.second.first; });
    out.precision(3);
    out << "\nprofile: " << total << " ms per segment with a wait after every step (" << r.profile.size()
        << " steps)\n  ms/segment      %  steps  op primitive impl\n";
    for (const auto& [k, v] : kinds) {
      out.width(12);
      out << v.first << "  ";
      out.precision(1);
      out.width(5);
      out << 100.0 * v.first / total << "  ";
      out.width(5);
      out << v.second << "  " << k << "\n";
      out.precision(3);
    }
    std::vector<ProfileRow> top = r.profile;
    std::sort(top.begin(), top.end(), [](auto& a, auto& b) { return a.ms > b.ms; });
    out << "\n  slowest steps (ms/segment, op, node, primitive, impl)\n";
    for (std::size_t i = 0; i < std::min<std::size_t>(15, top.size()); ++i)
      out << "  " << top[i].ms << "  " << top[i].op << " " << top[i].node << " " << top[i].primitive << " "
          << top[i].impl << "\n";
  }
  return out.str();
}

}  // namespace txl::driver
