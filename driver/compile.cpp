// driver/compile.cpp - settings, the optimized-graph builder, compile() and buildArtifact().
#include "driver/compile.h"

#include <omp.h>
#include <sched.h>
#include <unistd.h>

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <mutex>

#include "backend/onednn/onednn_executor.h"
#include "backend/onednn/onednn_target_info.h"
#include "backend/platform.h"
#include "backend/reference/reference_interpreter.h"
#include "driver/content_hash.h"
#include "frontend/initial_memory.h"
#include "ir/check.h"
#include "ir/json_io.h"

namespace txl::driver {

namespace {

// The executor a backend name selects.
bool isOnednn(const std::string& name) {
  if (name == "onednn") return true;
  if (name == "reference") return false;
  throw Error("--backend: expected 'onednn' or 'reference', got '" + name + "'");
}

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

}  // namespace

// --- the setting ---------------------------------------------------------------

Setting defaultSetting(const Model& m) {
  Setting s;
  const frontend::ModelSpec& spec = m.spec;
  s.qlen = spec.tgt_len > 0 ? spec.tgt_len : 64;
  s.memLen = spec.mem_len;
  s.clampLen = spec.clamp_len;
  s.sameLength = spec.same_length;
  s.initialMemory = spec.defaultInitialMemory();
  if (m.artifact) {
    const Setting& a = m.artifact->setting;
    s.batch = a.batch, s.qlen = a.qlen, s.memLen = a.memLen, s.clampLen = a.clampLen, s.sameLength = a.sameLength;
    s.initialMemory = a.initialMemory;
    s.pipeline.passes = a.pipeline.passes;
    s.precision = a.precision;
  }
  resolvePipeline(s);
  return s;
}

static_assert(kMaxLength == frontend::kMaxSegmentLength, "a spec's lengths and a setting's share one bound");

int maxThreads() {
  cpu_set_t set;
  CPU_ZERO(&set);
  int cores = ::sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 0;
  if (cores <= 0) cores = int(std::max(1L, ::sysconf(_SC_NPROCESSORS_ONLN)));
  return kMaxThreadsPerCore * cores;
}

std::optional<SettingProblem> settingSizeProblem(const frontend::ModelSpec& spec, const Setting& s, bool quoteValues) {
  auto range = [quoteValues](const char* field, std::int64_t v, std::int64_t lo, std::int64_t hi,
                             const char* what) -> std::optional<SettingProblem> {
    const std::string got = quoteValues ? "'" + std::to_string(v) + "'" : std::to_string(v);
    if (v < lo) return SettingProblem{field, std::string("expected ") + what + ", got " + got};
    if (v > hi)
      return SettingProblem{field, std::string("expected ") + what + " at most " + std::to_string(hi) + ", got " + got};
    return std::nullopt;
  };
  if (auto p = range("batch", s.batch, 1, kMaxBatch, "a positive integer")) return p;
  if (auto p = range("qlen", s.qlen, 1, kMaxLength, "a positive integer")) return p;
  if (auto p = range("mem_len", s.memLen, 0, kMaxLength, "a non-negative integer")) return p;
  if (auto p = range("clamp_len", s.clampLen, -1, kMaxLength, "-1 or a non-negative integer")) return p;
  if (auto p = range("threads", s.threads, 0, maxThreads(), "a positive integer")) {
    if (s.threads > 0) p->message += " (" + std::to_string(kMaxThreadsPerCore) + " per core this process may use)";
    return p;
  }
  // Every size is now at most 2^31 and 2^20 (spec and setting): the products
  // below fit in 128 bits, and are compared with the tensor bound.
  using Wide = unsigned __int128;
  const Wide b = Wide(s.batch), q = Wide(s.qlen), k = Wide(s.qlen + s.memLen);
  struct Term {
    const char* what;
    Wide elements;
  };
  const Term terms[] = {
      {"the attention scores (batch × n_head × qlen × (qlen + mem_len))", b * Wide(spec.n_head) * q * k},
      {"the log-probabilities (qlen × batch × n_token)", q * b * Wide(spec.n_token)},
      {"the feed-forward activations (qlen × batch × d_inner)", q * b * Wide(spec.d_inner)},
      {"the memory ((n_layer + 1) × mem_len × batch × d_model)",
       Wide(spec.n_layer + 1) * Wide(s.memLen) * b * Wide(std::max(spec.d_model, 2 * spec.n_head * spec.d_head))},
  };
  for (const Term& t : terms)
    if (t.elements > Wide(kMaxTensorElements))
      return SettingProblem{s.memLen > 0 && std::string(t.what).find("memory") == 0 ? "mem_len" : "batch",
                            std::string(t.what) + " would hold more than 2^48 elements; batch " +
                                std::to_string(s.batch) + ", qlen " + std::to_string(s.qlen) + ", mem_len " +
                                std::to_string(s.memLen) + " are too large for this model"};
  return std::nullopt;
}

void checkSetting(const frontend::ModelSpec& spec, const Setting& s) {
  // Worded as the command line's validators word them (tools/cli_checks.h), for callers that bypass them.
  if (auto p = settingSizeProblem(spec, s, /*quoteValues=*/true)) {
    std::string flag = "--" + p->field;
    std::replace(flag.begin(), flag.end(), '_', '-');
    throw Error(flag + ": " + p->message);
  }
  if (s.sameLength && s.memLen == 0 && spec.semantics == frontend::Semantics::Authors)
    throw Error("--same-length: needs a mem_len above 0, got mem_len 0");
  isOnednn(s.backend);
  checkPrecisionSupported(s.precision, s.backend, "--precision");
  TXL_CHECK(s.resolved == passes::resolvePipeline(s.pipeline, s.precision),
            "the setting's resolved pipeline is stale (driver::resolvePipeline after changing it)");
}

void checkRunPipeline(const Model& m, const SettingChoice& c) {
  if (!m.artifact) return;
  if (c.precision && parsePrecision(*c.precision, "--precision") != m.artifact->setting.precision)
    throw Error("--precision: " + m.path + " is compiled for precision " +
                precisionName(m.artifact->setting.precision) + "; recompile it with --precision " + *c.precision);
  const bool passes = c.passes && !c.passes->empty();
  if (passes || !c.disabled.empty())
    throw Error((passes ? "--passes" : "--disable-pass") + std::string(": ") + m.path +
                " is compiled with its pipeline; recompile it to change the passes");
}

Setting resolveSetting(const Model& m, const SettingChoice& c, bool run) {
  if (run) checkRunPipeline(m, c);
  Setting s = defaultSetting(m);
  selectPipeline(s, c);
  if (c.threads) s.threads = *c.threads;
  if (c.threadPolicy) s.threadPolicy = parseThreadPolicy(*c.threadPolicy, "--thread-policy");
  if (c.batch) s.batch = *c.batch;
  if (c.qlen) s.qlen = *c.qlen;
  if (c.memLen) s.memLen = *c.memLen;
  if (c.clampLen) s.clampLen = *c.clampLen;
  if (c.sameLength) s.sameLength = *c.sameLength;
  if (c.initialMemory) s.initialMemory = frontend::parseInitialMemory(*c.initialMemory, "--initial-memory");
  checkSetting(m.spec, s);
  return s;
}

bool replans(const Model& m, const Setting& s) {
  if (!m.artifact) return false;
  // A different qlen alone keeps the setting: the stored shapes that still
  // occur (the one-token step) are used, the others built as usual.
  const Setting& a = m.artifact->setting;
  return a.batch != s.batch || a.memLen != s.memLen || a.clampLen != s.clampLen || a.sameLength != s.sameLength ||
         a.initialMemory != s.initialMemory;
}

void noteReplanning(const Model& m, const Setting& s) {
  if (!replans(m, s)) return;
  const Setting& a = m.artifact->setting;
  std::cerr << "txlc: note: " << m.path << " was compiled for batch " << a.batch << ", qlen " << a.qlen << ", mem_len "
            << a.memLen << ", clamp_len " << a.clampLen << ", same_length " << (a.sameLength ? "true" : "false")
            << ", initial memory " << frontend::initialMemoryName(a.initialMemory) << "; re-planning for batch "
            << s.batch << ", qlen " << s.qlen << ", mem_len " << s.memLen << ", clamp_len " << s.clampLen
            << ", same_length " << (s.sameLength ? "true" : "false") << ", initial memory "
            << frontend::initialMemoryName(s.initialMemory) << " from its stored spec and pipeline" << std::endl;
}

void applyThreads(int threads) {
  const int team = threads > 0 ? threads : omp_get_max_threads();
  // libgomp ends the process when it cannot create its threads; create them
  // here first, all at once, so that a thread limit is one error line. A
  // count no larger than the team already started was checked then: the
  // Python module calls this before every segment, so that case takes no lock.
  static std::mutex mutex;
  static std::atomic<int> started{1};
  if (team <= started.load(std::memory_order_acquire)) {
    if (threads > 0 && omp_get_max_threads() != threads) omp_set_num_threads(threads);
    return;
  }
  std::lock_guard<std::mutex> lock(mutex);
  if (team > started.load(std::memory_order_relaxed)) {
    // Without --threads the team is OpenMP's default (OMP_NUM_THREADS): the
    // same bound holds, and the message names where the count came from.
    if (team > maxThreads())
      throw Error(std::string(threads > 0 ? "--threads" : "OMP_NUM_THREADS") +
                  ": expected a positive integer at most " + std::to_string(maxThreads()) + " (" +
                  std::to_string(kMaxThreadsPerCore) + " per core this process may use), got " + std::to_string(team));
    struct Gate {
      std::mutex m;
      std::condition_variable cv;
      bool open = false;
    } gate;
    std::vector<pthread_t> ids;
    int err = 0;
    for (int i = 1; i < team && err == 0; ++i) {
      pthread_t id;
      err = ::pthread_create(
          &id, nullptr,
          [](void* p) -> void* {
            auto* g = static_cast<Gate*>(p);
            std::unique_lock<std::mutex> l(g->m);
            g->cv.wait(l, [g] { return g->open; });
            return nullptr;
          },
          &gate);
      if (err == 0) ids.push_back(id);
    }
    {
      std::lock_guard<std::mutex> l(gate.m);
      gate.open = true;
    }
    gate.cv.notify_all();
    for (pthread_t id : ids) ::pthread_join(id, nullptr);
    if (err != 0)
      throw Error("--threads: cannot create " + std::to_string(team) + " threads (" + std::to_string(ids.size() + 1) +
                  " were possible): " + std::strerror(err));
    omp_set_num_threads(team);
#pragma omp parallel
    {}
    started.store(team, std::memory_order_release);
  }
  if (threads > 0) omp_set_num_threads(threads);
}

int defaultThreads() {
  const char* env = std::getenv("OMP_NUM_THREADS");
  if (env && *env) return 0;
  return backend::platform().physicalCores;
}

// --- what the setting gives the frontend and the backend -----------------------

backend::ThreadPolicy parseThreadPolicy(const std::string& name, const std::string& flag) {
  if (name == "auto") return backend::ThreadPolicy::Auto;
  if (name == "idle") return backend::ThreadPolicy::Idle;
  if (name == "loaded") return backend::ThreadPolicy::Loaded;
  throw UsageError(flag + ": expected auto, idle or loaded, got '" + name + "'");
}

std::string threadPolicyName(backend::ThreadPolicy policy) {
  switch (policy) {
    case backend::ThreadPolicy::Auto:
      return "auto";
    case backend::ThreadPolicy::Idle:
      return "idle";
    case backend::ThreadPolicy::Loaded:
      return "loaded";
  }
  return "auto";
}

std::shared_ptr<backend::Executor> makeExecutor(const Setting& s) {
  backend::OnednnOptions options;
  options.threadPolicy = s.threadPolicy;
  return isOnednn(s.backend) ? backend::makeOnednnExecutor(options) : backend::makeReferenceExecutor();
}

const ir::TargetInfo* targetInfo(const std::string& backend) {
  static const backend::OnednnTargetInfo onednn;
  return isOnednn(backend) ? &onednn : nullptr;
}

ir::Segment segmentOf(const Setting& s, std::int64_t qlen, std::int64_t mlen) {
  return ir::Segment{.batch = s.batch,
                     .qlen = qlen,
                     .mlen = mlen,
                     .memLen = s.memLen,
                     .clampLen = s.clampLen,
                     .sameLength = s.sameLength};
}

std::vector<ir::MemorySlot> memorySlots(const frontend::ModelSpec& spec, const Setting& s) {
  std::vector<ir::MemorySlot> slots;
  if (s.memLen == 0) return slots;
  const bool windowed = s.resolved.windowed;
  const ir::DType dtype = s.resolved.stateDType;
  if (s.resolved.memory == ir::MemoryForm::Kv)
    for (std::int64_t l = 0; l < spec.n_layer; ++l)
      slots.push_back({l, {s.batch, 2 * spec.n_head * spec.d_head}, windowed, dtype});
  else
    for (std::int64_t l = 0; l <= spec.n_layer; ++l) slots.push_back({l, {s.batch, spec.d_model}, windowed, dtype});
  return slots;
}

backend::ModelInfo modelInfo(const frontend::ModelSpec& spec, const Setting& s) {
  return backend::ModelInfo{spec.n_layer,
                            spec.d_model,
                            spec.n_token,
                            s.memLen,
                            s.batch,
                            s.qlen,
                            s.clampLen,
                            s.sameLength,
                            spec.attn_type == 0 && s.memLen > 0,
                            s.initialMemory == frontend::InitialMemory::Zeros && s.memLen > 0,
                            memorySlots(spec, s)};
}

ir::SegmentSignature segmentSignature(const frontend::ModelSpec& spec, const Setting& s, const ir::Segment& segment) {
  return ir::SegmentSignature{segment, spec.d_model, spec.n_token, memorySlots(spec, s)};
}

ir::Graph buildOptimizedGraph(const frontend::ModelSpec& spec, const Setting& s, const ir::Segment& segment,
                              ir::PassContext* ctx) {
  ir::Graph g = frontend::buildSegmentGraph(spec, segment);
  ir::PassContext local;
  ir::PassContext& c = ctx ? *ctx : local;
  c.target = targetInfo(s.backend);
  // fold-positions: one table for the longest klen a stream of this model meets.
  if (!c.maxKlen) c.maxKlen = std::max(segment.klen(), segment.memLen + spec.tgt_len);
  c.segment = segmentSignature(spec, s, segment);
  c.segment->memory.reset();  // the slots change form during the pipeline; the session checks the result
  passes::runPipeline(g, s.resolved, s.pipeline.manager, c);
  return g;
}

// --- memory ------------------------------------------------------------------

MemoryEstimate estimateMemory(const frontend::ModelSpec& spec, const Setting& s) {
  const double b = double(s.batch), q = double(s.qlen), m = double(s.memLen), f32 = 4;
  MemoryEstimate e;
  e.weights = double(spec.parameterCount()) * f32;
  for (const ir::MemorySlot& slot : memorySlots(spec, s)) {
    double row = double(ir::dtypeSize(slot.dtype));
    for (std::int64_t d : slot.rowShape) row *= double(d);
    e.state += double(backend::stateWindowRows(s.memLen, s.qlen)) * row;
  }
  if (spec.attn_type == 0 && s.resolved.foldsPositions)
    e.tables = double(spec.n_layer + 1) * (m + std::max<double>(q, double(spec.tgt_len))) * double(spec.d_model) * f32;
  e.activations =
      (2 * b * double(spec.n_head) * q * (q + m) + q * b * double(spec.n_token) + q * b * double(spec.d_inner)) * f32;
  return e;
}

namespace {
std::string gib(double bytes) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f GiB", bytes / double(1 << 30));
  return buf;
}
}  // namespace

void checkMemoryFits(const frontend::ModelSpec& spec, const Setting& s, const std::string& source) {
  const long pages = ::sysconf(_SC_PHYS_PAGES), pageSize = ::sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || pageSize <= 0) return;
  const double ram = double(pages) * double(pageSize);
  const MemoryEstimate e = estimateMemory(spec, s);
  if (e.total() <= ram) return;
  throw Error(source + ": batch " + std::to_string(s.batch) + ", qlen " + std::to_string(s.qlen) + ", mem_len " +
              std::to_string(s.memLen) + " needs at least " + gib(e.total()) + " (weights " + gib(e.weights) +
              ", memory " + gib(e.state) + ", position tables " + gib(e.tables) + ", segment activations " +
              gib(e.activations) + "); this machine has " + gib(ram) + " of RAM");
}

void checkMemoryAvailable(const frontend::ModelSpec& spec, const Setting& s, const std::string& source,
                          const MachineMemory& machine) {
  if (!machine.available) return;
  const MemoryEstimate e = estimateMemory(spec, s);
  const double need = e.state + e.tables + e.activations;  // the weights are loaded already
  if (need <= *machine.available) return;
  throw Error(source + ": batch " + std::to_string(s.batch) + ", qlen " + std::to_string(s.qlen) + ", mem_len " +
              std::to_string(s.memLen) + " needs at least " + gib(need) + " besides its weights (memory " +
              gib(e.state) + ", position tables " + gib(e.tables) + ", segment activations " + gib(e.activations) +
              "); this machine has " + gib(*machine.available) + " available (MemAvailable)" +
              (machine.total ? " of " + gib(*machine.total) : std::string()) + " of RAM");
}

// --- compiling ---------------------------------------------------------------

namespace {

// The zero initial memory's rows (ModelInfo::fullInitialMemory), in the form of each slot.
backend::InitialRowFactory initialRows(const frontend::ModelSpec& spec, const Setting& s,
                                       const ir::TensorMap& weights) {
  if (!(s.initialMemory == frontend::InitialMemory::Zeros && s.memLen > 0)) return {};
  // cache-projected-memory turns every layer's slot into its keys and values.
  const bool kvSlots = s.resolved.memory == ir::MemoryForm::Kv;
  return [spec, kvSlots, w = weights](const backend::SlotLayout& slot) {
    const bool kv = kvSlots && spec.attn_type == 0 && slot.slot < spec.n_layer;
    return frontend::zeroMemoryRow(spec, w, slot.slot, slot.rowShape,
                                   kv ? frontend::MemoryForm::Kv : frontend::MemoryForm::Hidden);
  };
}

}  // namespace

std::vector<ArtifactBucket> artifactBuckets(const frontend::ModelSpec& spec, const Setting& setting) {
  // The main scoring shape first (qlen, mem_len), then what a stream meets
  // before its memory is full (the padded warm-up graph, or one graph per
  // warm-up mlen for a model that cannot pad), then generation's one-token
  // step, at full memory and padded.
  const std::int64_t Q = setting.qlen, M = setting.memLen;
  const bool pad = spec.attn_type == 0 && M > 0;
  auto segment = [&](std::int64_t qlen, std::int64_t mlen, bool step, bool padded) {
    ir::Segment g = segmentOf(setting, qlen, mlen);
    g.logprob = step;  // generation's step samples from the log-probabilities
    g.nll = !step;     // scoring needs the NLL alone
    g.padded = padded;
    return g;
  };
  std::vector<ArtifactBucket> buckets = {{segment(Q, M, false, false), "score"}};
  if (pad) buckets.push_back({segment(Q, M, false, true), "score-warmup"});
  else
    for (std::int64_t mlen = 0; mlen < M; mlen = std::min(M, mlen + Q))
      buckets.push_back({segment(Q, mlen, false, false), "score-warmup"});
  buckets.push_back({segment(1, M, true, false), "step"});
  if (pad) buckets.push_back({segment(1, M, true, true), "step-warmup"});
  return buckets;
}

void verifyStoredGraphs(const Artifact& artifact, const std::string& path) {
  Setting stored = artifact.setting;
  stored.backend = kArtifactTarget;
  stored.pipeline.manager = {};
  stored.pipeline.disabled.clear();
  // The stored shapes must be exactly those compile stores for the setting.
  stored.pipeline.memory.reset();
  if (!stored.pipeline.passes) stored.pipeline.passes.emplace();
  resolvePipeline(stored);
  const std::int64_t Q = stored.qlen, M = stored.memLen;
  const bool pad = artifact.spec.attn_type == 0 && M > 0;
  const std::size_t expected = pad ? 4 : 1 + std::size_t((M + Q - 1) / Q) + 1;
  if (artifact.graphs.size() != expected)
    throw Error(path + ": manifest /graphs: " + std::to_string(artifact.graphs.size()) +
                " graphs, the stored setting (qlen " + std::to_string(Q) + ", mem_len " + std::to_string(M) + ") has " +
                std::to_string(expected));
  const std::vector<ArtifactBucket> buckets = artifactBuckets(artifact.spec, stored);
  for (std::size_t i = 0; i < artifact.graphs.size(); ++i) {
    const StoredGraph& g = artifact.graphs[i];
    const ArtifactBucket& b = buckets[i];
    const std::string where = path + ": manifest /graphs/" + std::to_string(i) + " (" + quote(g.role) + ", qlen " +
                              std::to_string(g.segment.qlen) + ", mlen " + std::to_string(g.segment.mlen) + ")";
    if (g.segment != b.segment || g.role != b.role)
      throw Error(where + ": expected the \"" + b.role + "\" graph of qlen " + std::to_string(b.segment.qlen) +
                  ", mlen " + std::to_string(b.segment.mlen) + (b.segment.padded ? ", padded" : "") +
                  " for the stored setting");
    const std::string rebuilt = ir::toJson(buildOptimizedGraph(artifact.spec, stored, g.segment)).dump();
    if (rebuilt != g.graph.dump())
      throw Error(where + ": not the graph this txlc (" + std::string(kTxlcVersion) +
                  ") builds from the stored spec, setting and passes; the artifact was altered, or compiled by "
                  "another txlc (" +
                  oneLine(artifact.txlcVersion.substr(0, 40)) + "); recompile it");
  }
}

std::shared_ptr<backend::CompiledModel> compile(const Model& m, const Setting& setting,
                                                const backend::CompiledModel* sharedWith) {
  checkSetting(m.spec, setting);
  checkMemoryFits(m.spec, setting, m.path);  // before anything is planned
  applyThreads(setting.threads);
  Setting s = setting;
  if (m.artifact) {
    s.pipeline.passes = m.artifact->setting.pipeline.passes;
    s.pipeline.disabled.clear();
    s.pipeline.memory.reset();
    s.precision = m.artifact->setting.precision;  // an artifact runs at the precision it was compiled for
    resolvePipeline(s);
  }
  const frontend::ModelSpec spec = m.spec;
  std::shared_ptr<backend::Executor> executor = sharedWith ? sharedWith->sharedExecutor() : makeExecutor(s);
  if (!m.artifact) {
    auto factory = [spec, s](const ir::Segment& segment, ir::ConstantEvaluator* constants) {
      ir::PassContext ctx;
      ctx.constants = constants;
      return buildOptimizedGraph(spec, s, segment, &ctx);
    };
    return std::make_shared<backend::CompiledModel>(modelInfo(spec, s), m.weights, executor, factory,
                                                    initialRows(spec, s, m.weights));
  }

  const bool sameSetting = !replans(m, s);
  std::shared_ptr<const Artifact> artifact = m.artifact;
  const std::string path = m.path;
  // A stored graph is never taken on trust (a checksum is for accidents, not
  // for attackers): before anything is planned, each one is rebuilt from the
  // stored spec, setting and passes, and must be the same graph, byte for
  // byte. Only then is it used, and a rebuilt shape is trusted too.
  verifyStoredGraphs(*artifact, path);
  auto factory = [=](const ir::Segment& segment, ir::ConstantEvaluator* constants) {
    if (sameSetting)
      for (const StoredGraph& g : artifact->graphs)
        if (g.segment == segment) {
          ir::Graph stored =
              ir::fromJson(g.graph, path + ": manifest graph qlen " + std::to_string(segment.qlen) + " mlen " +
                                        std::to_string(segment.mlen) + (segment.padded ? " padded" : ""));
          passes::foldConstants(stored, constants);
          return stored;
        }
    ir::PassContext ctx;
    ctx.constants = constants;
    return buildOptimizedGraph(spec, s, segment, &ctx);
  };
  return std::make_shared<backend::CompiledModel>(modelInfo(spec, s), m.weights, executor, factory,
                                                  initialRows(spec, s, m.weights));
}

Artifact buildArtifact(const Model& m, const Setting& setting) {
  Artifact a;
  a.txlcVersion = kTxlcVersion;
  a.modelId = m.modelId;
  a.spec = m.spec;
  a.setting = setting;
  a.setting.backend = kArtifactTarget;
  a.setting.threads = 0;
  a.setting.pipeline.passes = setting.resolved.passes;
  a.setting.pipeline.disabled.clear();
  a.setting.pipeline.memory.reset();
  resolvePipeline(a.setting);
  if (m.vocabulary) a.vocabulary = m.vocabulary->toJson();
  a.cpuIsa = cpuName();
  a.weights = m.weights;

  Setting build = setting;  // the run's pipeline diagnostics (--print-after-all ...), the artifact's target
  build.backend = kArtifactTarget;
  for (const ArtifactBucket& b : artifactBuckets(m.spec, setting)) {
    const ir::Graph g = buildOptimizedGraph(m.spec, build, b.segment);
    StoredGraph sg{b.segment, b.role, ir::toJson(g), 0};
    const std::string text = sg.graph.dump();
    sg.hash = contentHash(text.data(), text.size());
    a.graphs.push_back(std::move(sg));
  }
  return a;
}

}  // namespace txl::driver
