// tools/model_flags.cpp - ModelFlags.
#include "tools/model_flags.h"

#include "driver/compile.h"
#include "ir/check.h"
#include "tools/cli_checks.h"

namespace txl::tools {

void ModelFlags::add(CLI::App& cmd, Shape shape) {
  addModelArgument(cmd, model,
                   "a model directory, a spec file (with --weights), a PyTorch checkpoint (.bin, .pt) or safetensors "
                   "file with config.json beside it, or a compiled artifact (also -m MODEL)");
  if (!embeddedArtifact())
    weightsOpt =
        cmd.add_option("--weights", weights, "safetensors weights (for a spec file, or to override a directory's)");
  vocabOpt = cmd.add_option("--vocab", vocab,
                            "vocabulary: vocab.json (characters) or one symbol per line (words); for a spec file, "
                            "or to override the model's");
  tokenizerOpt = cmd.add_option("--tokenizer", tokenizer,
                                "how a word vocabulary splits text: whitespace (fields between spaces) or hf "
                                "(transformers' Transfo-XL tokenizer: Moses punctuation rules, \"@,@\" in numbers); "
                                "default: hf for Hugging Face's vocab.pkl, whitespace otherwise")
                     ->check(CLI::IsMember({"whitespace", "hf"}));
  if (shape == Shape::All)
    batchOpt =
        cmd.add_option("--batch", batch, "independent streams (default: 1, or the artifact's)")->check(batchCheck());
  if (shape != Shape::None)
    qlenOpt = cmd.add_option("--qlen", qlen, "tokens per segment (default: the spec's tgt_len, or the artifact's)")
                  ->check(qlenCheck());
  if (shape != Shape::None)
    memLenOpt = cmd.add_option("--mem-len", memLen, "positions of memory kept (default: the spec's mem_len)")
                    ->check(memLenCheck());
  clampLenOpt = cmd.add_option("--clamp-len", clampLen, "clamp relative positions (-1 or 0: no clamping)")
                    ->check(clampLenCheck());
  cmd.add_flag("--same-length", sameLength, "every query attends to the same number of positions");
  initialMemoryOpt = cmd.add_option("--initial-memory", initialMemory,
                                    "how a stream's memory starts: zeros (mem_len zero rows per layer, as Hugging "
                                    "Face and the authors' TensorFlow code) or empty (the authors' PyTorch code); "
                                    "default: the model's semantics'")
                         ->check(CLI::IsMember({"zeros", "empty"}));
  if (shape != Shape::None)
    cmd.add_option("-t,--threads", threads,
                   "OpenMP threads for the oneDNN backend (default: the machine's physical cores, or OpenMP's "
                   "default when OMP_NUM_THREADS is set; 0: OpenMP's default)")
        ->check(threadCountCheck());
  threadPolicyOpt = cmd.add_option("--thread-policy", threadPolicy,
                                   "which steps run on one thread: auto (chosen per run from measured times), idle "
                                   "(only the shortest: right when the cores are free) or loaded (every step under "
                                   "about 0.5 ms: right beside another busy process); default auto")
                        ->check(CLI::IsMember({"auto", "idle", "loaded"}));
  pipeline.add(cmd);
}

OpenOptions ModelFlags::openOptions() const {
  OpenOptions o;
  if (weightsOpt && weightsOpt->count()) o.weights = weights;
  if (vocabOpt && vocabOpt->count()) o.vocab = vocab;
  if (tokenizerOpt && tokenizerOpt->count()) o.tokenizer = tokenizer;
  return o;
}

Model ModelFlags::open() const {
  applyThreads(threads);
  return openModel(model, openOptions());
}

SettingChoice ModelFlags::choice() const {
  SettingChoice c = pipeline.choice();
  c.threads = threads;
  if (threadPolicyOpt->count()) c.threadPolicy = threadPolicy;
  if (batchOpt && batchOpt->count()) c.batch = batch;
  if (qlenOpt && qlenOpt->count()) c.qlen = qlen;
  if (memLenOpt && memLenOpt->count()) c.memLen = memLen;
  if (clampLenOpt->count()) c.clampLen = clampLen;
  if (sameLength) c.sameLength = true;
  if (initialMemoryOpt->count()) c.initialMemory = initialMemory;
  return c;
}

Setting ModelFlags::setting(const Model& m, bool run) const {
  Setting s = resolveSetting(m, choice(), run);
  pipeline.applyDiagnostics(s);
  return s;
}

void checkPipelineFlags(const Model& m, const PipelineFlags& flags) { checkRunPipeline(m, flags.choice()); }

}  // namespace txl::tools
