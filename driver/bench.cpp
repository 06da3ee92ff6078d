// driver/bench.cpp - benchCases() and runBench() (bench.h, docs/PERFORMANCE.md).
//
// Algorithm (runBench):
//   1. Compile the model for the case's setting (batch, mem_len, threads).
//   2. Prefill: a separate session runs one untimed segment of mem_len
//      tokens, and the benchmark session starts from its state (a full
//      memory); that session and its plan are then freed and the peak
//      resident set is reset (/proc/self/clear_refs), so the figure is the
//      steady state's.
//   3. Warm-up segments, untimed. When the timed segments will meet shapes
//      not met yet (no prefill: the memory still grows), they are rehearsed
//      untimed first from a saved state, so no timed segment builds a plan.
//   4. Repetitions: each restores the state after the warm-up and times each
//      segment's forward(). Tokens are random (seeded), targets too with nll.
//   5. Profile: the steady-state plan again, with per-step timing.
//   6. Sliding window L: the vanilla evaluation (a fresh forward of L tokens
//      without memory per predicted token) against the timed one.
#include "driver/bench.h"

#include <malloc.h>
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

#include "backend/onednn/onednn_executor.h"
#include "backend/onednn/onednn_probe.h"
#include "backend/platform.h"
#include "driver/inspect.h"
#include "frontend/atomic_file.h"
#include "frontend/safetensors.h"
#include "frontend/weights.h"
#include "ir/check.h"
#include "driver/flop_count.h"
#include "driver/weight_reads.h"

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

// Bytes of weight `t` as the plan stores it at `precision`: a matrix the
// precision converts (`converted`) in bf16 (2 bytes an element) or as int8
// rows with an f32 scale each (1 byte an element, 4 a row); anything else f32.
double storedBytes(const ir::Tensor& t, bool converted, Precision precision) {
  if (!converted || t.type().rank() != 2) return double(t.bytes());
  switch (precision) {
    case Precision::BF16:
      return double(t.bytes()) / 2;
    case Precision::Int8:
      return double(t.numel()) + 4.0 * double(t.shape()[0]);
    case Precision::F32:
      break;
  }
  return double(t.bytes());
}

// The buffers of the matrices a lower precision converts: every rank-2
// weight read by a linear layer. An embedding table is only looked up (its
// rows widened from f32 as read) unless it is tied to an output layer, whose
// matmul reads it at the lower precision.
std::set<const void*> convertedMatrices(const ir::TensorMap& weights) {
  std::set<const void*> out;
  for (const auto& [name, t] : weights)
    if (t.type().rank() == 2 && name.rfind("word_emb.emb_layers.", 0) != 0) out.insert(t.raw());
  return out;
}

// Bytes one step of qlen 1 must read (bench.h): every layer's weights with
// r_net replaced by its folded table over klen (its distinct rows: with
// clamp_len > 0 every distance from clamp_len on shares one row, which the
// attention reads once) and without the matrices the step's graph reads
// only as rows of projected tables (`rowRead`, driver/weight_reads.h: the
// first layer's q, k and v of a character model), the u/v biases, the
// output layer when the segment computes it, and the cached keys and
// values; each at its stored precision (storedBytes). With bf16 state
// windows (the setting's state dtype) the cached keys and values are bf16
// rows, and the attention reads the position table in bf16 too
// (docs/PRECISION.md): 2 bytes an element. The setting gives the batch, the
// precision, the state's dtype and the run's clamp_len.
double memoryFloorBytes(const frontend::ModelSpec& spec, const ir::TensorMap& weights,
                        const std::set<std::string>& rowRead, const Setting& setting, std::int64_t mlen, bool output) {
  const double hd = double(spec.n_head * spec.d_head);
  const std::int64_t batch = setting.batch;
  const Precision precision = setting.precision;
  const bool bf16 = setting.resolved.stateDType == ir::DType::BF16;
  const double state = bf16 ? 2.0 : 4.0, table = state;
  const std::set<const void*> converted = convertedMatrices(weights);
  std::set<const void*> seen;
  double bytes = 0;
  for (const auto& [name, t] : weights) {
    if (rowRead.count(name) != 0 || !seen.insert(t.raw()).second) continue;
    const bool layer = name.rfind("layers.", 0) == 0, crit = name.rfind("crit.", 0) == 0;
    if (name.find("r_net.weight") != std::string::npos) continue;
    const double stored = storedBytes(t, converted.count(t.raw()) != 0, precision);
    if (layer || name == "r_w_bias" || name == "r_r_bias" || (crit && output)) bytes += stored;
  }
  const double klen = double(mlen + 1);
  const double rows = setting.clampLen > 0 ? std::min(klen, double(setting.clampLen + 1)) : klen;
  if (spec.attn_type == 0) bytes += double(spec.n_layer) * rows * hd * table;       // W_r R, as read
  bytes += double(spec.n_layer) * double(batch) * double(mlen) * 2.0 * hd * state;  // cached k and v
  return bytes;
}

// Every distinct weight at its stored precision (the budget's "weights").
std::size_t storedWeightBytes(const ir::TensorMap& weights, Precision precision) {
  const std::set<const void*> converted = convertedMatrices(weights);
  std::set<const void*> seen;
  double bytes = 0;
  for (const auto& [name, t] : weights)
    if (seen.insert(t.raw()).second) bytes += storedBytes(t, converted.count(t.raw()) != 0, precision);
  return static_cast<std::size_t>(bytes);
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

// --- the benchmark -----------------------------------------------------------

namespace {

struct Streams {
  const frontend::ModelSpec& spec;
  std::int64_t batch;
  std::mt19937_64 rng;
  ir::Tensor tokens(std::int64_t qlen) { return randomIds(qlen, batch, spec.n_token, rng); }
};

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

// Fills `session`'s memory to mem_len with one untimed segment in a separate
// session (freed before returning, with its plan).
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

// Ends the case when SIGINT/SIGTERM has arrived (frontend::catchInterrupts()).
void checkInterrupted() {
  if (const int sig = frontend::interruptSignal()) throw BenchInterrupted(sig);
}

// One timed forward (ms), after checking for an interrupt.
double timedForward(backend::Session& session, Streams& s, std::int64_t qlen, bool nll) {
  checkInterrupted();
  ir::Tensor tokens = s.tokens(qlen), targets;
  if (nll) targets = s.tokens(qlen);
  const auto t0 = Clock::now();
  session.forward(tokens, nll ? &targets : nullptr, false);
  return msSince(t0);
}

std::vector<ProfileRow> profilePlan(backend::Session& session, Streams& s, std::int64_t qlen, bool nll, int runs,
                                    std::vector<ProfileRun>& profileRuns) {
  const ir::TensorMap state = session.saveState();
  session.loadState(state);
  timedForward(session, s, qlen, nll);  // the plan of this shape, built if new
  backend::CompiledGraph* plan = session.lastPlan();
  if (!plan || !plan->hasSteps()) return {};
  plan->setProfiling(true);
  // The plan sums each step's time over the runs; the difference of the
  // sums around a run is that run's (kept for the last kMaxProfileRuns).
  std::vector<double> before;
  std::vector<ProfileRun> latest;  // every step's time in each of the last kMaxProfileRuns runs
  for (int r = 0; r < runs; ++r) {
    session.loadState(state);
    before = plan->stepSeconds();
    ProfileRun run;
    run.startUs = std::chrono::duration<double, std::micro>(Clock::now().time_since_epoch()).count();
    run.wallUs = timedForward(session, s, qlen, nll) * 1e3;
    const auto& after = plan->stepSeconds();
    for (std::size_t i = 0; i < after.size() && i < before.size(); ++i)
      run.stepUs.push_back((after[i] - before[i]) * 1e6);
    if (latest.size() == kMaxProfileRuns) latest.erase(latest.begin());
    latest.push_back(std::move(run));
  }
  std::vector<ProfileRow> rows;
  std::vector<std::size_t> shownSteps;
  const auto& steps = plan->steps();
  const auto& secs = plan->stepSeconds();
  // Steps name their nodes by op id; the report names them as inspect's listing does.
  const ir::Graph shown = session.model().buildGraph(session.lastKey());
  for (std::size_t i = 0; i < steps.size(); ++i) {
    if (!steps[i].everyRun && secs[i] == 0) continue;  // a thread variant's step that no run took
    shownSteps.push_back(i);
    rows.push_back({steps[i].op, steps[i].primitive, steps[i].impl,
                    renumberNodes("node " + std::to_string(steps[i].node), shown), secs[i] * 1e3 / runs,
                    steps[i].serial});
  }
  for (ProfileRun& run : latest) {  // the runs' step times, as the rows list the steps
    std::vector<double> times;
    for (std::size_t i : shownSteps) times.push_back(i < run.stepUs.size() ? run.stepUs[i] : 0.0);
    run.stepUs = std::move(times);
    if (profileRuns.size() == kMaxProfileRuns) profileRuns.erase(profileRuns.begin());
    profileRuns.push_back(std::move(run));
  }
  plan->setProfiling(false);
  return rows;
}

double stddevOf(const std::vector<double>& v, double mean) {
  if (v.size() < 2) return 0;
  double ss = 0;
  for (double x : v) ss += (x - mean) * (x - mean);
  return std::sqrt(ss / double(v.size() - 1));
}

}  // namespace

std::vector<BenchCase> benchCases(const Setting& base, const std::vector<std::int64_t>& batches,
                                  const std::vector<std::int64_t>& qlens, const std::vector<std::int64_t>& memLens,
                                  const std::vector<int>& threads, const std::vector<Precision>& precisions) {
  auto orDefault = [](auto list, auto value) { return list.empty() ? decltype(list){value} : list; };
  const int defaultThreads = base.threads > 0 ? base.threads : backend::platform().physicalCores;
  std::vector<BenchCase> cases;
  for (Precision p : orDefault(precisions, base.precision))
    for (std::int64_t b : orDefault(batches, base.batch))
      for (std::int64_t q : orDefault(qlens, base.qlen))
        for (std::int64_t m : orDefault(memLens, base.memLen))
          for (int t : orDefault(threads, defaultThreads)) cases.push_back({b, q, m, t, p});
  return cases;
}

Setting benchSetting(const Setting& base, const BenchCase& c, const BenchOptions& o) {
  Setting s = base;
  s.batch = c.batch;
  s.qlen = o.slidingWindow ? 1 : c.qlen;
  s.memLen = o.slidingWindow ? *o.slidingWindow - 1 : c.memLen;
  s.threads = c.threads;
  if (s.precision != c.precision) {
    s.precision = c.precision;
    resolvePipeline(s);
  }
  return s;
}

void mapRandomWeights(Model& m) {
  frontend::WeightMap mapped = fileBackedWeights(m.spec, frontend::WeightMap(m.weights.begin(), m.weights.end()));
  m.weights = ir::TensorMap(mapped.begin(), mapped.end());
}

BenchReport runBench(const Model& m, const Setting& base, const BenchCase& c, const BenchOptions& o,
                     const ProbeResult& probe) {
  if (o.segments < 1) throw Error("--segments: expected a positive integer, got " + std::to_string(o.segments));
  if (o.warmup < 0) throw Error("--warmup: expected a non-negative integer, got " + std::to_string(o.warmup));
  if (o.repetitions < 1)
    throw Error("--repetitions: expected a positive integer, got " + std::to_string(o.repetitions));
  if (c.qlen < 1) throw Error("--qlen: expected a positive integer, got " + std::to_string(c.qlen));
  if (o.slidingWindow && *o.slidingWindow < 2)
    throw Error("--sliding-window: expected an attention length of at least 2, got " +
                std::to_string(*o.slidingWindow));
  BenchReport r;
  r.model = m.path;
  r.modelForm = m.form;
  r.prefill = o.prefill || o.slidingWindow.has_value();
  r.nll = o.nll;
  r.segments = o.segments;
  r.warmup = o.warmup;
  r.repetitions = o.repetitions;
  r.probe = probe;

  // 1. The setting and the compiled model (compile() checks the memory the case's own shape needs).
  Setting settings = benchSetting(base, c, o);
  r.qlen = settings.qlen;
  checkSetting(m.spec, settings);
  applyThreads(settings.threads);
  r.batch = settings.batch;
  r.threads = backend::threadCount();
  r.backend = settings.backend;
  r.memoryForm = memoryForm(settings);
  r.semantics = frontend::semanticsName(m.spec.semantics);
  r.initialMemory = frontend::initialMemoryName(settings.initialMemory);
  r.precision = precisionName(settings.precision);
  auto model = compile(m, settings);
  r.memLen = model->info().memLen;
  Streams streams{m.spec, settings.batch, std::mt19937_64(o.seed + 1)};

  // 2. Prefill, then the steady state's peak resident set.
  backend::Session session(model);
  noteReplanning(m, settings);
  if (r.prefill) prefill(model, session, streams);

  // 3. Warm-up, and a rehearsal of shapes not met yet.
  for (int i = 0; i < r.warmup; ++i) timedForward(session, streams, r.qlen, o.nll);
  const bool steady = r.prefill || r.memLen == 0;
  const ir::TensorMap afterWarmup = session.saveState();
  // This copy of the state (each repetition restarts from it) is resident
  // from here on; it is the benchmark's, not the model's, and is left out of
  // the peak resident set below.
  const std::size_t snapshotBytes = ir::distinctBytes(afterWarmup);
  if (!steady || r.warmup == 0) {
    for (int i = 0; i < (steady ? 1 : r.segments); ++i) timedForward(session, streams, r.qlen, o.nll);
    session.loadState(afterWarmup);
  }
  // The steady state's peak resident set starts here: the plan of the timed
  // shape exists, and the prefill session and the transient buffers of
  // building it (constant folding, packing) are freed; glibc keeps freed heap
  // pages resident until trimmed, so they are returned first.
  ::malloc_trim(0);
  const bool peakReset = resetPeakRss();

  // 4. Timed repetitions, each from the state after the warm-up.
  r.mlen = session.mlen();
  std::vector<double> ms;
  for (int rep = 0; rep < r.repetitions; ++rep) {
    if (rep > 0) session.loadState(afterWarmup);
    double repMs = 0;
    for (int i = 0; i < r.segments; ++i) {
      ms.push_back(timedForward(session, streams, r.qlen, o.nll));
      repMs += ms.back();
    }
    r.tokensPerSRuns.push_back(double(r.batch * r.qlen * r.segments) / (repMs / 1e3));
  }
  r.latency = latencyOf(ms);
  double sum = 0;
  for (double t : r.tokensPerSRuns) sum += t;
  r.tokensPerS = sum / double(r.tokensPerSRuns.size());
  r.tokensPerSStddev = stddevOf(r.tokensPerSRuns, r.tokensPerS);

  // FLOPs of the first timed shape (the memory may still grow without prefill).
  const ir::Graph graph = model->buildGraph(model->info().segment(r.qlen, r.mlen, false, o.nll));
  FlopCount flops = countFlops(graph);
  r.usefulFlops = flops.useful;
  r.graphFlops = flops.graph;
  r.usefulGflops = flops.useful / (r.latency.avg / 1e3) / 1e9;
  // Efficiency against the peak of the precision the linears run at.
  const MatmulFigure& peak = r.probe.peakFor(r.precision);
  if (r.probe.ok && peak.gflops > 0) r.efficiency = r.usefulGflops / peak.gflops;
  if (r.qlen == 1) {
    r.memoryFloorBytes = memoryFloorBytes(m.spec, m.weights, rowReadWeights(graph), settings, r.mlen, o.nll);
    if (r.probe.ok && r.probe.readBandwidthGbs > 0) {
      r.memoryFloorMs = r.memoryFloorBytes / (r.probe.readBandwidthGbs * 1e9) * 1e3;
      r.floorRatio = r.latency.median / r.memoryFloorMs;
    }
  }

  // Memory: the steady state's peak against weights + copied constants + state + arena + 64 MiB.
  r.peakRssProcessBytes = processPeakRss();
  r.peakRssBytes = peakReset ? procStatusBytes("VmHWM") : r.peakRssProcessBytes;
  r.peakRssBytes -= std::min(r.peakRssBytes, snapshotBytes);
  r.weightBytes = storedWeightBytes(m.weights, settings.precision) + model->constants().bytes();
  if (const backend::CompiledGraph* plan = session.lastPlan(); plan && plan->hasSteps()) {
    r.arenaBytes = plan->arenaBytes();
    r.constantBytes = plan->constantBytes();
    r.copiedConstantBytes = plan->copiedConstantBytes();
    for (const auto& s : plan->steps())
      if (s.impl.rfind("ref", 0) == 0) r.refImpls.push_back(s.op + " (node " + std::to_string(s.node) + "): " + s.impl);
  }
  // The state as held: every slot's window (2·mem_len + qlen positions, docs/MEMORY.md), not just the mlen rows in use.
  r.stateBytes = session.stateBytes();
  r.rssBudgetBytes = r.weightBytes + r.copiedConstantBytes + r.stateBytes + r.arenaBytes + (std::size_t(64) << 20);

  // 5. Profile.
  if (o.profile) r.profile = profilePlan(session, streams, r.qlen, o.nll, std::max(3, r.segments), r.profileRuns);

  // 6. The vanilla sliding-window evaluation at the same attention length.
  if (o.slidingWindow) {
    const std::int64_t L = *o.slidingWindow;
    Setting vanilla = settings;
    vanilla.memLen = 0;
    vanilla.sameLength = false;
    auto vmodel = compile(m, vanilla);
    backend::Session v(vmodel);
    v.forward(streams.tokens(L), nullptr, false);  // builds the plan
    std::vector<double> vms;
    for (int i = 0; i < r.segments; ++i) {
      checkInterrupted();
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

}  // namespace txl::driver
