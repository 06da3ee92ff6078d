// tools/model_setup.h - from a loaded model to a CompiledModel: the glue of
// frontend (graph builder), passes (pipeline) and backend (executor).
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "backend/session.h"
#include "frontend/graph_builder.h"
#include "frontend/model_spec.h"
#include "ir/target_info.h"
#include "passes/pipeline.h"

namespace txl::tools {

// Run-time settings that may differ from the spec's own.
struct RunSettings {
  std::int64_t batch = 1;
  std::optional<std::int64_t> qlen;      // the usual segment length (default: the spec's tgt_len); sizes state
  std::optional<std::int64_t> memLen;    // default: the spec's mem_len
  std::optional<std::int64_t> clampLen;  // default: the spec's clamp_len
  std::optional<bool> sameLength;        // default: the spec's same_length
  std::optional<frontend::InitialMemory> initialMemory;  // default: the spec's semantics' (--initial-memory)
};

struct ModelOptions {
  std::string backend = "onednn";  // "onednn" or "reference"
  passes::PipelineOptions pipeline;
};

// "onednn" or "reference"; txl::Error for another name.
std::shared_ptr<backend::Executor> makeExecutor(const std::string& name);
// What the passes ask about fast paths when building graphs for executor
// `name`: the oneDNN target for "onednn" (a fusion it would run slowly is
// skipped, e.g. rel_attention at <= 4 query rows), none for "reference"
// (the interpreter runs every form alike); txl::Error for another name.
const ir::TargetInfo* targetInfo(const std::string& name);

// The shape template a setting gives (qlen and mlen are filled in per segment).
frontend::SegmentShape segmentShape(const frontend::ModelSpec& spec, const RunSettings& settings);
// The template with one segment's qlen, mlen and padding filled in.
frontend::SegmentShape segmentShape(const frontend::SegmentShape& base, const backend::SegmentKey& key);

// Builds the graph of one segment and runs the pipeline on it, for `target`
// (targetInfo(); null: no fast-path questions).
ir::Graph buildOptimizedGraph(const frontend::ModelSpec& spec, const frontend::SegmentShape& shape,
                              const frontend::GraphOutputs& outputs, const passes::PipelineOptions& pipeline,
                              const ir::TargetInfo* target, ir::PassContext* ctx = nullptr);

// The least memory a run needs, in bytes: the weights (f32), the recurrent
// memory of every layer input, and the largest activations of one segment
// (two copies of the attention scores of every head against qlen + mem_len
// keys, the log-probabilities over the vocabulary, the feed-forward's inner
// layer). Counted in double: the sizes may overflow any integer type.
struct MemoryEstimate {
  double weights = 0, state = 0, activations = 0;
  double total() const { return weights + state + activations; }
};
MemoryEstimate estimateMemory(const frontend::ModelSpec& spec, std::int64_t batch, std::int64_t qlen,
                              std::int64_t memLen);
// Refuses a setting whose estimate exceeds this machine's physical RAM, before
// anything is planned or allocated (txl::Error naming `source` and the figures).
void checkMemoryFits(const frontend::ModelSpec& spec, std::int64_t batch, std::int64_t qlen, std::int64_t memLen,
                     const std::string& source);

std::shared_ptr<backend::CompiledModel> compileModel(const frontend::ModelSpec& spec, ir::TensorMap weights,
                                                     const RunSettings& settings, const ModelOptions& options);

}  // namespace txl::tools
