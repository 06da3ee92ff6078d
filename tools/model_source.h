// tools/model_source.h - MODEL_OR_ARTIFACT: whatever a user names as the model.
//
// openModelSource() accepts a model directory, a spec file (with --weights or
// --random-weights), a compiled artifact (detected by its magic), or - in a
// standalone executable - the artifact embedded in the running binary.
// compileSource() turns it into a backend::CompiledModel for a run setting:
// from an artifact, segment graphs whose shape the artifact stores are read
// from it; any other shape is rebuilt from the stored spec and pipeline (the
// first rebuild also rebuilds the artifact's main graph and checks it equals
// the stored one). A setting that differs from the compiled one is announced
// on stderr by noteReplanning(), once the setting and the inputs are checked.
//
//   ModelSource m = openModelSource("kjv.txla", {});
//   auto compiled = compileSource(m, settings, qlen, options);
//   backend::Session s(compiled);
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "frontend/vocabulary.h"
#include "tools/artifact.h"
#include "tools/command.h"
#include "tools/model_setup.h"

namespace txl::tools {

struct SourceOptions {
  std::optional<std::string> weights;  // --weights
  std::optional<std::string> vocab;    // --vocab: replaces the model's vocabulary (or gives one)
  bool randomWeights = false;          // --random-weights
  std::uint64_t seed = 0;
};

struct ModelSource {
  std::string path;  // as the user named it (or the executable, embedded)
  frontend::ModelSpec spec;
  ir::TensorMap weights;
  std::optional<frontend::Vocabulary> vocabulary;
  std::string modelId;
  std::shared_ptr<const Artifact> artifact;  // null for a model directory or spec file
};

// The artifact a standalone executable carries (set by main() at startup).
struct EmbeddedArtifact {
  std::string exePath;
  std::uint64_t offset = 0, length = 0;
};
const std::optional<EmbeddedArtifact>& embeddedArtifact();
// Looks for the standalone trailer at the end of /proc/self/exe; sets
// embeddedArtifact() when found. Cheap: reads 24 bytes.
void detectEmbeddedArtifact();
// The model path commands use when MODEL is implicit (embedded mode).
inline constexpr const char* kEmbeddedModelPath = "<embedded>";

ModelSource openModelSource(const std::string& path, const SourceOptions& options);

// The setting a run uses: flags given, else the artifact's setting, else the
// spec's own (qlen: tgt_len).
struct RunFlags {
  std::optional<std::int64_t> batch, qlen, memLen, clampLen;
  bool sameLength = false;  // --same-length given
  std::optional<frontend::InitialMemory> initialMemory;  // --initial-memory
};
struct ResolvedSetting {
  RunSettings settings;
  std::int64_t qlen = 0;
  std::int64_t memLen = 0;
};
ResolvedSetting resolveSetting(const ModelSource& m, const RunFlags& flags);

// True when `setting` differs from the artifact's compiled one (batch,
// mem_len, clamp_len or same_length: a qlen alone does not count), so that
// every graph is rebuilt from the stored spec and pipeline.
bool replans(const ModelSource& m, const ResolvedSetting& setting);
// The note "txlc: note: M was compiled for ...; re-planning for ..." on
// stderr when replans(). A command calls it after compileSource() and its own
// input checks, right before the first segment: a bad setting or input is
// then the one error line, never a note followed by an error.
void noteReplanning(const ModelSource& m, const ResolvedSetting& setting);

// `options.pipeline` is ignored for an artifact (it carries its own); giving
// --passes with an artifact is refused by checkPipelineFlags().
std::shared_ptr<backend::CompiledModel> compileSource(const ModelSource& m, const ResolvedSetting& setting,
                                                      const ModelOptions& options);
void checkPipelineFlags(const ModelSource& m, const PipelineFlags& flags);

// Model-directory vocabulary or the artifact's; txl::Error naming the model
// when there is none and `what` (e.g. "score") needs one.
const frontend::Vocabulary& requireVocabulary(const ModelSource& m, const std::string& what);

}  // namespace txl::tools
