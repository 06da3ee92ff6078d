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
      throw Error("--passes: " + name + " is not chosen by name; --precision " +
                  (name == "int8-matmuls" ? "int8" : "bf16") + " runs it");
    names.push_back(name);
  }
  if (names.empty()) throw Error("--passes: expected a comma-separated list of passes or 'none'");
  return names;
}

std::vector<std::string> selectedPasses(const PipelineOptions& options) {
  for (const auto& name : options.disabled) createPass(name);  // validates
  std::vector<std::string> out;
  for (const auto& name : options.passes ? *options.passes : defaultPipeline())
    if (!options.disabled.count(name) && !isPrecisionPass(name)) out.push_back(name);
  out.insert(out.end(), options.precisionPasses.begin(), options.precisionPasses.end());
  return out;
}

std::vector<ir::PassTiming> runPipeline(ir::Graph& g, const PipelineOptions& options, ir::PassContext& ctx) {
  const auto& p = options.precisionPasses;
  ctx.stateDType = std::find(p.begin(), p.end(), "bf16-state") != p.end() ? ir::DType::BF16 : ir::DType::F32;
  ir::PassManager pm(options.manager);
  for (const auto& name : selectedPasses(options)) pm.add(createPass(name));
  // A graph built to be compiled ends folded, whatever the pipeline: the
  // executors are handed constants as weights, and --print-after-all's last
  // graph is the one compiled.
  if (ctx.constants) pm.add(std::make_unique<FoldConstants>());
  pm.run(g, ctx);
  return pm.timings();
}

void foldConstants(ir::Graph& g, ir::ConstantEvaluator* constants) {
  if (!constants) return;
  PipelineOptions none;
  none.passes.emplace();
  ir::PassContext ctx;
  ctx.constants = constants;
  runPipeline(g, none, ctx);
}

}  // namespace txl::passes
