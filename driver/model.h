// driver/model.h - a model as a user names it: directory, spec file, artifact or the running executable.
//
// openModel() accepts a model directory, a spec file (with weights or random
// weights), a PyTorch checkpoint file or safetensors weights with config.json
// beside them (recognized by content, frontend/file_form.h), a compiled artifact (detected by its magic), a standalone
// executable (detected by its trailer: the artifact it carries), or - in a
// standalone executable - the artifact embedded in the running binary. Every problem is
// one txl::Error line naming the file.
//
//   driver::Model m = driver::openModel("kjv.txla", {});
//   driver::Setting s = driver::defaultSetting(m);   // driver/compile.h
//   backend::Session session(driver::compile(m, s));
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "driver/artifact.h"
#include "frontend/model_spec.h"
#include "frontend/vocabulary.h"
#include "ir/tensor.h"

namespace txl::driver {

struct OpenOptions {
  std::optional<std::string> weights;  // safetensors weights (for a spec file, or to override a directory's)
  std::optional<std::string> vocab;    // replaces the model's vocabulary (or gives one)
  // --tokenizer: how the word vocabulary splits text ("whitespace" or "hf");
  // unset: the vocabulary's own choice (hf for Hugging Face's vocab.pkl).
  std::optional<std::string> tokenizer;
  bool randomWeights = false;  // seeded random weights instead of a file
  std::uint64_t seed = 0;
};

struct Model {
  std::string path;  // as the user named it (or the executable, embedded)
  // What `path` is: "directory", "spec", "checkpoint" (a checkpoint file, or a
  // spec or directory whose weights are a PyTorch checkpoint), "safetensors"
  // (a safetensors file with config.json beside it), "artifact", "executable" (a
  // standalone executable named as a model) or "embedded" (the running one's).
  std::string form;
  frontend::ModelSpec spec;
  ir::TensorMap weights;
  std::optional<frontend::Vocabulary> vocabulary;
  std::string modelId;
  std::shared_ptr<const Artifact> artifact;  // null for a model directory or spec file
};

Model openModel(const std::string& path, const OpenOptions& options);
// Only the spec of the model at `path` (a spec file, a model directory's
// config.json, an artifact's stored spec): no weights are read unless
// `options` asks for weights or random weights (then they are loaded and checked).
frontend::ModelSpec openSpec(const std::string& path, const OpenOptions& options);
// A model given as a spec and its weights (tests, the conformance runner, bench).
Model modelFrom(frontend::ModelSpec spec, ir::TensorMap weights, std::string path = "");

// The artifact a standalone executable carries (set by main() at startup).
struct EmbeddedArtifact {
  std::string exePath;      // what is read: /proc/self/exe
  std::string displayName;  // what messages name: the executable as invoked (argv[0])
  std::uint64_t offset = 0, length = 0;
};
const std::optional<EmbeddedArtifact>& embeddedArtifact();
// Looks for the standalone trailer at the end of /proc/self/exe; sets
// embeddedArtifact() when found. Cheap: reads 24 bytes. `argv0` names the
// executable in messages. A trailer whose magic is there but whose offsets
// are not is a txl::Error (a corrupted standalone executable), never a
// silent fallback to plain txlc.
void detectEmbeddedArtifact(const std::string& argv0 = "/proc/self/exe");
// The model path commands use when MODEL is implicit (embedded mode).
inline constexpr const char* kEmbeddedModelPath = "<embedded>";

// The model's vocabulary; txl::Error naming the model when there is none and
// `what` (e.g. "score") needs one.
const frontend::Vocabulary& requireVocabulary(const Model& m, const std::string& what);

}  // namespace txl::driver
