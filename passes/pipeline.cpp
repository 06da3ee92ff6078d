// passes/pipeline.cpp - the default pipeline, as a commented list.
#include "passes/pipeline.h"

#include <algorithm>
#include <sstream>

#include "ir/check.h"
#include "passes/fold_constants.h"
#include "passes/registry.h"

namespace txl::passes {

const std::vector<std::string>& defaultPipeline() {
  static const std::vector<std::string> pipeline = {
      // The memory form first, on the literal graph whose projection of
      // [memory; h] it recognizes: remember projected keys and values so each
      // segment projects only its new rows (--memory hidden disables it).
      "cache-projected-memory",
      // [memory; x] and the memory update as one in-place window per slot,
      // while the literal concat / slice / mem_write pattern is still intact.
      "window-memory",
      // Put the literal graph in the forms the Transformer-XL passes
      // match (the reference rel-shift as one rel_shift op, no identity or
      // chained views), and merge the weights the builder adds more than once.
      "canonicalize",
      "cse",
      // Position tables for the longest klen before anything reads r: the
      // r_net projections then sit on one shared table (a constant cone the
      // backend evaluates once per model, not per segment shape).
      "fold-positions",
      // u, v and the score scale into one Q projection; needs the canonical
      // rel_shift (canonicalize) to see both score matmuls of a block, and must run
      // before fuse-rel-shift, which would otherwise capture the scale.
      "fold-bias-terms",
      // The first layer's projections of the segment's embedding rows (the
      // kv form projects the new rows only) as lookups in projected tables;
      // after fold-bias-terms, which makes the query projection one linear
      // of those rows (its scale folded into W_q).
      "fold-embedding-projections",
      // The folding leaves reshape(slice) chains and repeated weight slices:
      // collapse and merge them so the fusions below see one value per view.
      "canonicalize",
      "cse",
      // AC + shift(BD), (any remaining) scale and the mask as one rel_scores op.
      "fuse-rel-shift",
      // Constant operands the score matmuls read transposed (W_r R) laid out
      // transposed once, after fuse-rel-shift, which matches the BD matmul.
      "pretranspose-constants",
      // The whole attention as one op once BD reads W_r R laid out [H, D, K]
      // (pretranspose-constants) and the scores are one rel_scores with its
      // softmax (fuse-rel-shift).
      "fuse-attention",
      // The NLL without the log-probabilities, when the graph does not output
      // them: needs the canonical forms (no identity slices; one log_softmax
      // per cluster after cse) and is independent of the attention fusions.
      "fuse-nll",
      // Each tail cluster's products only for the rows whose target lies in
      // it: matches the logprob_pick ops fuse-nll made over f32 linears,
      // before the precision passes convert or quantize their weights.
      "gather-tail-clusters",
      // Last of the fusions: it consumes the linear ops the passes above
      // create or leave (and would hide them from those passes' patterns).
      "fuse-epilogues",
      // Last: drop whatever the rewrites above left without users.
      "dce",
  };
  return pipeline;
}

bool isPrecisionPass(const std::string& name) {
  return name == "bf16-matmuls" || name == "int8-matmuls" || name == "bf16-state";
}

std::vector<std::string> parsePassList(const std::string& text) {
  std::vector<std::string> names;
  if (text == "none") return names;
  std::stringstream in(text);
  std::string name;
  while (std::getline(in, name, ',')) {
    if (name.empty()) throw Error("--passes: empty pass name in '" + clip(text) + "'");
    createPass(name);  // validates
    if (isPrecisionPass(name))
      throw UsageError("--passes: " + name + " is not chosen by name; --precision " +
                       (name == "int8-matmuls" ? "int8" : "bf16") + " runs it");
    names.push_back(name);
  }
  if (names.empty()) throw Error("--passes: expected a comma-separated list of passes or 'none'");
  return names;
}

ResolvedPipeline resolvePipeline(const PipelineOptions& options, Precision precision) {
  for (const auto& name : options.disabled) createPass(name);  // validates
  ResolvedPipeline r;
  std::ptrdiff_t cache = -1, window = -1;
  for (const auto& name : options.passes ? *options.passes : defaultPipeline()) {
    if (options.disabled.count(name) || isPrecisionPass(name)) continue;
    if (name == "cache-projected-memory" && options.memory == ir::MemoryForm::Hidden) continue;
    createPass(name);  // validates a list made without parsePassList
    const auto at = std::ptrdiff_t(r.passes.size());
    if (name == "cache-projected-memory" && cache < 0) cache = at;
    if (name == "window-memory" && window < 0) window = at;
    if (name == "fold-positions") r.foldsPositions = true;
    r.passes.push_back(name);
  }
  r.memory = cache >= 0 && (window < 0 || cache < window) ? ir::MemoryForm::Kv : ir::MemoryForm::Hidden;
  r.windowed = window >= 0;
  if (options.memory == ir::MemoryForm::Kv && r.memory != ir::MemoryForm::Kv)
    throw UsageError(std::string("--memory kv contradicts the passes: ") +
                     (cache < 0 ? "cache-projected-memory does not run (--passes or --disable-pass)"
                                : "window-memory runs before cache-projected-memory (--passes), which then "
                                  "cannot match") +
                     "; leave out --memory, or select cache-projected-memory before window-memory");
  if (precision == Precision::BF16) r.passes.push_back("bf16-matmuls");
  if (precision == Precision::Int8) r.passes.push_back("int8-matmuls");
  const bool bf16State =
      precision != Precision::F32 && r.windowed && (r.memory == ir::MemoryForm::Kv || precision == Precision::BF16);
  if (bf16State) {
    r.passes.push_back("bf16-state");
    r.stateDType = ir::DType::BF16;
  }
  return r;
}

std::vector<ir::PassTiming> runPipeline(ir::Graph& g, const ResolvedPipeline& pipeline,
                                        const ir::PassManagerOptions& manager, ir::PassContext& ctx) {
  ctx.stateDType = pipeline.stateDType;
  ir::PassManager pm(manager);
  for (const auto& name : pipeline.passes) pm.add(createPass(name));
  // A graph built to be compiled ends folded, whatever the pipeline: the
  // executors are handed constants as weights, and --print-after-all's last
  // graph is the one compiled.
  if (ctx.constants) pm.add(std::make_unique<FoldConstants>());
  pm.run(g, ctx);
  return pm.timings();
}

void foldConstants(ir::Graph& g, ir::ConstantEvaluator* constants) {
  if (!constants) return;
  ir::PassContext ctx;
  ctx.constants = constants;
  runPipeline(g, ResolvedPipeline{}, {}, ctx);
}

}  // namespace txl::passes
