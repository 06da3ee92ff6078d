// tools/model_flags.h - the flags every model-running command shares.
//
// MODEL (implicit in a standalone executable), --weights, --vocab, --tokenizer, the run setting
// (--batch, --qlen, --mem-len, --clamp-len, --same-length, --initial-memory,
// --threads) and the
// pipeline flags. open() loads the model; setting() turns the flags given
// into the driver::Setting of the run: the model's own (driver::defaultSetting)
// with every flag given applied, checked once (driver::checkSetting).
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

#include "driver/compile.h"
#include "driver/model.h"
#include "tools/command.h"

namespace txl::tools {

struct ModelFlags {
  std::string model;
  std::string weights, vocab;
  std::string tokenizer;  // --tokenizer whitespace|hf
  CLI::Option* tokenizerOpt = nullptr;
  std::int64_t batch = 1, qlen = 0, memLen = 0, clampLen = -1;
  bool sameLength = false;
  std::string initialMemory;  // --initial-memory zeros|empty
  int threads = defaultThreads();
  std::string threadPolicy;  // --thread-policy auto|idle|loaded
  PipelineFlags pipeline;
  CLI::Option *weightsOpt = nullptr, *vocabOpt = nullptr, *batchOpt = nullptr, *qlenOpt = nullptr, *memLenOpt = nullptr,
              *clampLenOpt = nullptr, *initialMemoryOpt = nullptr, *threadPolicyOpt = nullptr;

  // Which of the shape flags the command takes as ModelFlags: all; all but
  // --batch (generate); none of --batch, --qlen, --mem-len and --threads
  // (bench, which takes lists of them).
  enum class Shape { All, NoBatch, None };
  void add(CLI::App& cmd, Shape shape = Shape::All);
  // Applies --threads, then loads the model.
  Model open() const;
  OpenOptions openOptions() const;  // --weights, --vocab and --tokenizer
  // The setting; for a `run` (not a recompile), --passes or --disable-pass
  // with an artifact is refused first (it is compiled with its pipeline).
  Setting setting(const Model& m, bool run = true) const;
  // The flags given, as driver::resolveSetting() takes them.
  SettingChoice choice() const;
};

// --passes / --disable-pass given for an artifact: txl::Error.
void checkPipelineFlags(const Model& m, const PipelineFlags& flags);

}  // namespace txl::tools
