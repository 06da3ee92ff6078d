// tools/model_flags.h - the flags every model-running command shares.
//
// MODEL (implicit in a standalone executable), --weights, --vocab, the run setting
// (--batch, --qlen, --mem-len, --clamp-len, --same-length, --initial-memory) and the pipeline
// flags. open() loads the model; setting() resolves the run setting against
// the model's own (tools/model_source.h).
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

#include "tools/command.h"
#include "tools/model_source.h"

namespace txl::tools {

struct ModelFlags {
  std::string model;
  std::string weights, vocab;
  std::int64_t batch = 1, qlen = 0, memLen = 0, clampLen = -1;
  bool sameLength = false;
  std::string initialMemory;  // --initial-memory zeros|empty
  int threads = 1;
  PipelineFlags pipeline;
  CLI::Option *weightsOpt = nullptr, *vocabOpt = nullptr, *batchOpt = nullptr, *qlenOpt = nullptr, *memLenOpt = nullptr,
              *clampLenOpt = nullptr, *initialMemoryOpt = nullptr;

  // `withBatch`: the command accepts --batch.
  void add(CLI::App& cmd, bool withBatch = true);
  // Applies --threads, then loads the model.
  ModelSource open() const;
  SourceOptions sourceOptions() const;  // --weights and --vocab
  ResolvedSetting setting(const ModelSource& m) const;
  ModelOptions options(const ModelSource& m) const;  // checks pipeline flags against an artifact
};

// Sets the OpenMP thread count (0: leave OpenMP's default).
void applyThreads(int threads);

}  // namespace txl::tools
