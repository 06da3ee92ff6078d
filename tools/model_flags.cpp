// tools/model_flags.cpp - ModelFlags.
#include "tools/model_flags.h"

#include <omp.h>

#include "tools/cli_checks.h"

namespace txl::tools {

void ModelFlags::add(CLI::App& cmd, bool withBatch) {
  addModelArgument(cmd, model, "a model directory, a spec file (with --weights) or a compiled artifact");
  if (!embeddedArtifact())
    weightsOpt = cmd.add_option("--weights", weights, "safetensors weights (for a spec file, or to override a directory's)");
  vocabOpt = cmd.add_option("--vocab", vocab,
                            "vocabulary: vocab.json (characters) or one symbol per line (words); for a spec file, "
                            "or to override the model's");
  if (withBatch)
    batchOpt = cmd.add_option("--batch", batch, "independent streams (default: 1, or the artifact's)")->check(positiveInt());
  qlenOpt = cmd.add_option("--qlen", qlen, "tokens per segment (default: the spec's tgt_len, or the artifact's)")
                ->check(positiveInt());
  memLenOpt = cmd.add_option("--mem-len", memLen, "positions of memory kept (default: the spec's mem_len)")
                  ->check(nonNegativeInt());
  clampLenOpt = cmd.add_option("--clamp-len", clampLen, "clamp relative positions (<= 0: no clamping)")
                    ->check(integerIn(-(std::int64_t(1) << 40), std::int64_t(1) << 40, "an integer"));
  cmd.add_flag("--same-length", sameLength, "every query attends to the same number of positions");
  initialMemoryOpt = cmd.add_option("--initial-memory", initialMemory,
                                    "how a stream's memory starts: zeros (mem_len zero rows per layer, as Hugging "
                                    "Face and the authors' TensorFlow code) or empty (the authors' PyTorch code); "
                                    "default: the model's semantics'")
                         ->check(CLI::IsMember({"zeros", "empty"}));
  cmd.add_option("--threads", threads,
                 "OpenMP threads for the oneDNN backend (default 1: fastest for small models, and safe on a busy "
                 "machine; 0: OpenMP's default)")
      ->check(integerIn(0, 4096, "a thread count in [0, 4096]"));
  pipeline.add(cmd);
}

void applyThreads(int threads) {
  if (threads > 0) omp_set_num_threads(threads);
}

SourceOptions ModelFlags::sourceOptions() const {
  SourceOptions o;
  if (weightsOpt && weightsOpt->count()) o.weights = weights;
  if (vocabOpt && vocabOpt->count()) o.vocab = vocab;
  return o;
}

ModelSource ModelFlags::open() const {
  applyThreads(threads);
  return openModelSource(model, sourceOptions());
}

ResolvedSetting ModelFlags::setting(const ModelSource& m) const {
  RunFlags f;
  if (batchOpt && batchOpt->count()) f.batch = batch;
  if (qlenOpt->count()) f.qlen = qlen;
  if (memLenOpt->count()) f.memLen = memLen;
  if (clampLenOpt->count()) f.clampLen = clampLen;
  f.sameLength = sameLength;
  if (initialMemoryOpt->count()) f.initialMemory = frontend::parseInitialMemory(initialMemory, "--initial-memory");
  return resolveSetting(m, f);
}

ModelOptions ModelFlags::options(const ModelSource& m) const {
  checkPipelineFlags(m, pipeline);
  return pipeline.resolve();
}

}  // namespace txl::tools
