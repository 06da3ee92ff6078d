// driver/setting.h - the one run setting: what besides the model decides what is compiled and how it runs.
//
// A Setting is resolved once per run (driver/compile.h defaultSetting() gives
// the model's own: an artifact's compiled setting, else the spec's; a caller
// overrides what its user asked for; checkSetting() refuses a bad one) and
// then drives everything downstream: the shapes of the segment graphs
// (ir::Segment, driver::segmentOf), the pipeline they go through, the executor and
// its threads, and what the session knows of the model (backend::ModelInfo).
// Those narrower structs are derived from it in driver/compile.cpp, never
// filled by hand.
//
//   driver::SettingChoice c;
//   c.batch = 4;
//   c.disabled = {"fuse-attention"};
//   driver::Setting s = driver::resolveSetting(model, c);
//   auto compiled = driver::compile(model, s);
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "backend/onednn/onednn_executor.h"
#include "driver/precision.h"
#include "frontend/model_spec.h"
#include "passes/pipeline.h"

namespace txl::driver {

struct Setting {
  std::int64_t batch = 1;      // independent streams
  std::int64_t qlen = 0;       // the usual segment length: sizes the state windows, the artifact's main graph
  std::int64_t memLen = 0;     // positions of memory kept after each segment
  std::int64_t clampLen = -1;  // relative positions clamped to it (<= 0: no clamping)
  bool sameLength = false;     // every query attends to the same number of positions
  // How a stream's memory starts: empty (the authors' PyTorch code) or
  // mem_len zero positions (Hugging Face, docs/SEMANTICS.md). The semantics
  // itself is the model's (ModelSpec::semantics: part of its identity, its
  // id and its artifacts), not a run's choice.
  frontend::InitialMemory initialMemory = frontend::InitialMemory::Empty;
  int threads = 0;  // OpenMP threads (0: leave OpenMP's default)
  // Which steps run on one thread: chosen per run from measured times
  // (Auto), or fixed for an idle or a loaded machine (backend/onednn/thread_policy.h).
  backend::ThreadPolicy threadPolicy = backend::ThreadPolicy::Auto;
  std::string backend = "onednn";  // the executor: "onednn" or "reference"
  // The matmuls' precision (driver/precision.h); an artifact's own.
  Precision precision = Precision::F32;
  passes::PipelineOptions pipeline;  // the passes (default pipeline unless set) and their diagnostics
  // `pipeline` at `precision`, resolved (resolvePipeline below): the passes
  // that run, the memory form, windows and their dtype. Every consumer reads
  // these facts; none derives them from pass names.
  passes::ResolvedPipeline resolved = passes::resolvePipeline({}, Precision::F32);
};

// What a user chose by name - the command line's flags, the Python module's
// keywords - before it is resolved against a model (driver/compile.h
// resolveSetting()). Unset fields keep the model's own value.
struct SettingChoice {
  std::optional<std::int64_t> batch, qlen, memLen, clampLen;
  std::optional<bool> sameLength;
  std::optional<std::string> initialMemory;  // "zeros" or "empty"
  std::optional<int> threads;
  std::optional<std::string> threadPolicy;  // "auto", "idle" or "loaded"
  std::optional<std::string> backend;       // "onednn" or "reference"
  std::optional<std::string> passes;        // "a,b,c" or "none"
  std::vector<std::string> disabled;        // passes removed from the pipeline
  std::optional<std::string> memory;        // "kv" (the default pipeline's) or "hidden"
  std::optional<std::string> precision;     // "f32", "bf16" or "int8"
};

// Sets s.resolved from s.pipeline and s.precision: resolveSetting() does,
// and so must whoever changes either by hand afterwards (a stored setting, a
// test); checkSetting() refuses a setting whose facts are stale (internal
// error).
void resolvePipeline(Setting& s);

// Sets the backend, the pass selection and the precision of `s` from `c`
// (passes, disabled, memory, precision) and resolves them; validates every
// pass name (txl::Error, one line naming the flag) and refuses a --memory
// that the pass list contradicts (txl::UsageError naming both).
void selectPipeline(Setting& s, const SettingChoice& c);

// "kv" or "hidden": the memory form of s.resolved, as manifests, reports and
// messages name it.
std::string memoryForm(const Setting& s);

}  // namespace txl::driver
