// driver/compile.h - from a model and a setting to a compiled model: the one way to a running session.
//
// The driver owns the path model -> setting -> optimized segment graph ->
// compiled model -> session. It is the glue of frontend (graph builder),
// passes (pipeline) and backend (executor): buildOptimizedGraph() is the only
// place a segment graph is built and optimized, and compile() hands the
// backend a factory that calls it (or reads an artifact's stored graphs).
// What the session must know up front - the memory slots among it - comes
// from the model and the setting (memorySlots()), not from building a graph.
//
//   driver::Model m = driver::openModel("models/kjv-char", {});
//   driver::Setting s = driver::defaultSetting(m);
//   s.qlen = 64;
//   driver::checkSetting(m.spec, s);
//   backend::Session session(driver::compile(m, s));
//   session.forward(tokens, &targets);
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backend/session.h"
#include "driver/artifact.h"
#include "driver/machine_memory.h"
#include "driver/model.h"
#include "driver/setting.h"
#include "frontend/graph_builder.h"
#include "ir/segment.h"
#include "ir/segment_abi.h"
#include "ir/target_info.h"

namespace txl::driver {

// --- the setting ---------------------------------------------------------------

// The model's own setting: an artifact's compiled one (with its passes),
// else the spec's mem_len, clamp_len, same_length and its semantics'
// initial memory, batch 1 and qlen tgt_len (64 when the spec has none).
Setting defaultSetting(const Model& m);
// The one check of a setting for a model of `spec` (txl::Error, one line
// naming the value): batch >= 1, qlen >= 1, mem_len >= 0, same_length only
// with mem_len > 0 (under the authors' semantics), a known backend and known
// pass names.
void checkSetting(const frontend::ModelSpec& spec, const Setting& s);

// The bounds checkSetting() applies (docs/ERRORS.md, "Limits"): each size,
// and the element count of the largest tensor one segment makes (attention
// scores, log-probabilities, feed-forward, the memory), checked without
// overflow; the thread count against kMaxThreadsPerCore × the cores.
inline constexpr std::int64_t kMaxBatch = std::int64_t{1} << 20;
inline constexpr std::int64_t kMaxLength = std::int64_t{1} << 20;  // qlen, mem_len, clamp_len
inline constexpr std::int64_t kMaxTensorElements = std::int64_t{1} << 48;
inline constexpr int kMaxThreadsPerCore = 4;
int maxThreads();  // kMaxThreadsPerCore × the cores this process may run on
// The first size of `s` out of bounds for `spec`, as "field: message" (the
// field a flag's or a manifest's name: "batch", "qlen", "mem_len",
// "clamp_len", "threads"), or nullopt.
struct SettingProblem {
  std::string field, message;
};
// `quoteValues` words a value as the command line does ('0'), else as JSON does (0).
std::optional<SettingProblem> settingSizeProblem(const frontend::ModelSpec& spec, const Setting& s, bool quoteValues);

// The setting of a run of `m` as a user chose it: defaultSetting(m) with
// every field `c` sets applied, then checkSetting(). For a `run` (not a
// recompile) of an artifact, a pass selection is refused first
// (checkRunPipeline): an artifact is compiled with its pipeline.
Setting resolveSetting(const Model& m, const SettingChoice& c, bool run = true);
// For an artifact: txl::Error when `c` selects passes ("--passes: M is
// compiled with its pipeline; recompile it to change the passes").
void checkRunPipeline(const Model& m, const SettingChoice& c);
// True when an artifact's graphs cannot serve `s` (batch, mem_len,
// clamp_len, same_length or the initial memory differ: a qlen alone does not count), so that
// every graph is rebuilt from the stored spec and pipeline.
bool replans(const Model& m, const Setting& s);
// The note "txlc: note: M was compiled for ...; re-planning for ..." on
// stderr when replans(). A command calls it after compile() and its own
// input checks, right before the first segment: a bad setting or input is
// then the one error line, never a note followed by an error.
void noteReplanning(const Model& m, const Setting& s);

// Sets the OpenMP thread count (0: leave OpenMP's default) and starts the
// team's threads (a thread limit is then one error line).
void applyThreads(int threads);
// The thread count a command uses when none is given: 0 (OpenMP's default)
// when OMP_NUM_THREADS is set, else the physical cores this process may run
// on (a second hardware thread of a core only competes for its units).
int defaultThreads();

// --- what the setting gives the frontend and the backend -----------------------

// "onednn" or "reference"; txl::Error for another name.
std::shared_ptr<backend::Executor> makeExecutor(const Setting& s);
// "auto", "idle" or "loaded" (txl::UsageError naming `flag` otherwise).
backend::ThreadPolicy parseThreadPolicy(const std::string& name, const std::string& flag);
// The name parseThreadPolicy() reads: "auto", "idle" or "loaded".
std::string threadPolicyName(backend::ThreadPolicy policy);
// What the passes ask about fast paths when building graphs for executor
// `backend`: the oneDNN target for "onednn" (a fusion it would run slowly is
// skipped, e.g. rel_attention at <= 4 query rows), none for "reference"
// (the interpreter runs every form alike); txl::Error for another name.
const ir::TargetInfo* targetInfo(const std::string& backend);

// The segment of qlen tokens against mlen remembered positions under `s`
// (its batch, mem_len, clamp_len, same_length): both outputs, no padding.
ir::Segment segmentOf(const Setting& s, std::int64_t qlen, std::int64_t mlen);
// The memory slots every segment graph of `s` has (ir/segment_abi.h): none
// without memory; in the hidden form slots 0..n_layer of [batch, d_model];
// in the kv form (cache-projected-memory before any window-memory) slots
// 0..n_layer-1 of [batch, 2·n_head·d_head]; windowed when window-memory runs.
std::vector<ir::MemorySlot> memorySlots(const frontend::ModelSpec& spec, const Setting& s);
// What the session knows of the model under `s`.
backend::ModelInfo modelInfo(const frontend::ModelSpec& spec, const Setting& s);
// The segment ABI of `segment`'s graph under `s` (memory: memorySlots()).
ir::SegmentSignature segmentSignature(const frontend::ModelSpec& spec, const Setting& s, const ir::Segment& segment);

// Builds the graph of `segment` and runs the pipeline of `s` on it, for
// the target of `s.backend`; the segment ABI is checked after the frontend
// and after every pass. `ctx` (optional) collects the passes' remarks.
ir::Graph buildOptimizedGraph(const frontend::ModelSpec& spec, const Setting& s, const ir::Segment& segment,
                              ir::PassContext* ctx = nullptr);

// --- memory ------------------------------------------------------------------

// The least memory a run needs, in bytes: the weights (f32), the recurrent
// memory of every layer input, and the largest activations of one segment
// (two copies of the attention scores of every head against qlen + mem_len
// keys, the log-probabilities over the vocabulary, the feed-forward's inner
// layer). Counted in double: the sizes may overflow any integer type.
// The graphs an artifact of `spec` under `setting` stores, in order
// (docs/ARTIFACT.md, "Shape buckets").
struct ArtifactBucket {
  ir::Segment segment;
  const char* role;
};
std::vector<ArtifactBucket> artifactBuckets(const frontend::ModelSpec& spec, const Setting& setting);

// Rebuilds every graph `artifact` stores from its spec, setting and passes
// and refuses the artifact (txl::Error naming `path` and the graph) unless
// each is the same graph byte for byte; compile() calls it before anything
// is planned.
void verifyStoredGraphs(const Artifact& artifact, const std::string& path);

// A lower bound on what a setting needs, in bytes: the weights (f32), the
// session's state windows (2·mem_len + qlen rows of every memory slot, in
// the slots' form: keys and values with cache-projected-memory), the
// position tables fold-positions makes (mem_len + qlen rows of the table and
// of each layer's projection of it) and one segment's largest activations.
struct MemoryEstimate {
  double weights = 0, state = 0, tables = 0, activations = 0;
  double total() const { return weights + state + tables + activations; }
};
MemoryEstimate estimateMemory(const frontend::ModelSpec& spec, const Setting& s);
// Refuses a setting whose estimate exceeds this machine's physical RAM, before
// anything is planned or allocated (txl::Error naming `source` and the figures).
void checkMemoryFits(const frontend::ModelSpec& spec, const Setting& s, const std::string& source);
// Refuses a setting whose allocations beyond the weights (the estimate's
// state, position tables and activations) exceed the memory `machine` has
// available now (MemAvailable, driver/machine_memory.h): a model already
// open holds its weights, and other processes hold what they hold. txl::Error
// naming `source`, the need and the memory available and in all; nothing is
// checked when the available memory is unknown. `txlc bench` checks each
// case so, after checkMemoryFits, with readMachineMemory() just before it runs.
void checkMemoryAvailable(const frontend::ModelSpec& spec, const Setting& s, const std::string& source,
                          const MachineMemory& machine);

// --- compiling ---------------------------------------------------------------

// The compiled model of `m` under `s` (checked first: checkSetting, checkMemoryFits).
// From an artifact, segment graphs whose shape it stores are read from it
// (unless replans()); any other shape is rebuilt from the stored spec and
// pipeline (the first rebuild also rebuilds the artifact's main graph and
// checks it equals the stored one). For an artifact the stored pipeline is
// used and `s.pipeline`'s pass selection is ignored. `sharedWith`: another
// compiled model of the same `m` (another batch: driver/stream_server.h's
// pools) whose executor this one uses, so that both read one packed copy of
// each weight instead of packing their own.
std::shared_ptr<backend::CompiledModel> compile(const Model& m, const Setting& s,
                                                const backend::CompiledModel* sharedWith = nullptr);

// The artifact of `m` under `s`: the optimized graphs of the setting's shape
// buckets (docs/ARTIFACT.md), main scoring shape first, for kArtifactTarget.
Artifact buildArtifact(const Model& m, const Setting& s);

}  // namespace txl::driver
