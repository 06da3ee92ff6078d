// passes/pipeline.h - the default optimization pipeline and pipeline options.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ir/pass_manager.h"
#include "ir/segment_abi.h"

namespace txl::passes {

// The default pipeline, in order (pipeline.cpp says why each pass is where it is).
const std::vector<std::string>& defaultPipeline();

// The precision of the matmuls (docs/PRECISION.md): what the pipeline
// appends after the passes chosen (bf16-matmuls or int8-matmuls, then
// bf16-state where it applies; resolvePipeline()).
enum class Precision { F32, BF16, Int8 };

// What a user can say about the pipeline (--passes, --disable-pass, ...).
struct PipelineOptions {
  std::optional<std::vector<std::string>> passes;  // empty optional: the default pipeline
  std::set<std::string> disabled;
  // The memory form asked for (--memory): hidden leaves cache-projected-memory
  // out; kv is refused unless the selection makes it. Empty: what the selection makes.
  std::optional<ir::MemoryForm> memory;
  ir::PassManagerOptions manager;
};

// A pass selection resolved, with what it makes of a segment graph's memory:
// computed once per setting (driver::resolveSetting) and read by everything
// downstream (the memory slots, the initial memory, estimates, reports), so
// that no one else derives a fact from pass names.
struct ResolvedPipeline {
  // The passes in order: the selection after --disable-pass, then the
  // precision's passes (once, at the end).
  std::vector<std::string> passes;
  // What each slot holds after the pipeline: kv when cache-projected-memory
  // runs before any window-memory (it matches the literal concat / slice /
  // mem_write, which window-memory replaces), else the layer inputs.
  ir::MemoryForm memory = ir::MemoryForm::Hidden;
  bool windowed = false;                  // window-memory runs: each slot is one in-place window
  ir::DType stateDType = ir::DType::F32;  // of the windows: bf16 when bf16-state runs
  bool foldsPositions = false;            // fold-positions runs (one position table per model)
  friend bool operator==(const ResolvedPipeline&, const ResolvedPipeline&) = default;
};

// The one resolution of `options` at `precision`; validates every pass name
// (txl::Error otherwise) and refuses a memory form the selection contradicts
// (txl::UsageError naming --memory and the passes). bf16-state runs at bf16 and int8 on windowed slots,
// except int8's hidden form: there no bf16 matmul rounds the layer inputs
// first, and rounding the remembered inputs would add error the kv form
// does not have (docs/PRECISION.md).
ResolvedPipeline resolvePipeline(const PipelineOptions& options, Precision precision);

// Whether `name` is a pass that --precision runs (bf16-matmuls, int8-matmuls, bf16-state), never chosen by name.
bool isPrecisionPass(const std::string& name);

// "a,b,c" or "none" -> pass names; validates every name (txl::Error otherwise).
std::vector<std::string> parsePassList(const std::string& text);

// Runs `pipeline`'s passes on `g` (sets ctx.stateDType from it), then, when
// ctx.constants is set, fold-constants (the graph is then the one to
// compile); throws txl::Error naming a failing pass.
std::vector<ir::PassTiming> runPipeline(ir::Graph& g, const ResolvedPipeline& pipeline,
                                        const ir::PassManagerOptions& manager, ir::PassContext& ctx);

// fold-constants alone, for a graph optimized before (an artifact's); nothing when `constants` is null.
void foldConstants(ir::Graph& g, ir::ConstantEvaluator* constants);

}  // namespace txl::passes
