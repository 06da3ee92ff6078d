// passes/pipeline.h - the default optimization pipeline and pipeline options.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ir/pass_manager.h"

namespace txl::passes {

// The default pipeline, in order (pipeline.cpp says why each pass is where it is).
const std::vector<std::string>& defaultPipeline();

// What a user can say about the pipeline (--passes, --disable-pass, ...).
struct PipelineOptions {
  std::optional<std::vector<std::string>> passes;  // empty optional: the default pipeline
  std::set<std::string> disabled;
  ir::PassManagerOptions manager;
  // The passes the run's precision appends (driver/precision.h): none for
  // f32, bf16-matmuls then bf16-state for bf16, int8-matmuls then bf16-state
  // for int8. They run last, whatever the pass list (they are not pass
  // choices; --disable-pass does not remove them).
  std::vector<std::string> precisionPasses;
};

// Whether `name` is a pass that --precision runs (bf16-matmuls, int8-matmuls, bf16-state), never chosen by name.
bool isPrecisionPass(const std::string& name);

// "a,b,c" or "none" -> pass names; validates every name (txl::Error otherwise).
std::vector<std::string> parsePassList(const std::string& text);

// The pass names a PipelineOptions selects, after --disable-pass, then the
// precision's passes (once, at the end).
std::vector<std::string> selectedPasses(const PipelineOptions& options);

// Runs the selected pipeline on `g`, then, when ctx.constants is set,
// fold-constants (the graph is then the one to compile); throws txl::Error
// naming a failing pass.
std::vector<ir::PassTiming> runPipeline(ir::Graph& g, const PipelineOptions& options, ir::PassContext& ctx);

// fold-constants alone, for a graph optimized before (an artifact's); nothing when `constants` is null.
void foldConstants(ir::Graph& g, ir::ConstantEvaluator* constants);

}  // namespace txl::passes
