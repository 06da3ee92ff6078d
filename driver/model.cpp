// driver/model.cpp - models from directories, spec files, artifacts and the running executable.
#include "driver/model.h"

#include <filesystem>
#include <iostream>

#include "driver/standalone.h"
#include "frontend/checkpoint_model.h"
#include "frontend/file_form.h"
#include "frontend/model_loader.h"
#include "ir/check.h"

namespace txl::driver {

namespace {

std::optional<EmbeddedArtifact>& embeddedSlot() {
  static std::optional<EmbeddedArtifact> slot;
  return slot;
}

void checkVocabularySize(const frontend::Vocabulary& v, const frontend::ModelSpec& spec, const std::string& source) {
  if (v.size() != spec.n_token)
    throw Error(source + ": " + std::to_string(v.size()) + " symbols, expected the model's n_token (" +
                std::to_string(spec.n_token) + ")");
}

}  // namespace

const std::optional<EmbeddedArtifact>& embeddedArtifact() { return embeddedSlot(); }

void detectEmbeddedArtifact(const std::string& argv0) {
  std::optional<StandaloneTrailer> t = readStandaloneTrailer("/proc/self/exe", argv0);
  if (t) embeddedSlot() = EmbeddedArtifact{"/proc/self/exe", argv0, t->offset, t->length};
}

namespace {
// --vocab: a vocabulary file given on the command line wins over the model's;
// --tokenizer then chooses how its words are split.
void applyVocabFlag(Model& m, const OpenOptions& options) {
  if (options.vocab) {
    m.vocabulary = frontend::Vocabulary::load(*options.vocab);
    checkVocabularySize(*m.vocabulary, m.spec, *options.vocab);
  }
  if (options.tokenizer) {
    const frontend::WordTokenizer t = frontend::parseWordTokenizer(*options.tokenizer, "--tokenizer");
    if (!m.vocabulary)
      throw Error("--tokenizer " + *options.tokenizer + ": " + m.path +
                  " has no vocabulary to split text for; give one with --vocab FILE");
    m.vocabulary->setTokenizer(t, "--tokenizer " + *options.tokenizer);
  }
}
}  // namespace

Model openModel(const std::string& path, const OpenOptions& options) {
  Model m;
  m.path = path;
  const bool embedded = path == kEmbeddedModelPath && embeddedArtifact();
  const bool artifactFile = !embedded && looksLikeArtifact(path);
  const std::optional<StandaloneTrailer> exe = embedded || artifactFile ? std::nullopt : readStandaloneTrailer(path);
  if (embedded || artifactFile || exe) {
    m.form = embedded ? "embedded" : exe ? "executable" : "artifact";
    if (options.weights) throw Error("--weights: " + path + " is a compiled artifact that holds its weights");
    if (options.randomWeights)
      throw Error("--random-weights: " + path + " is a compiled artifact that holds its weights");
    LoadedArtifact loaded;
    if (embedded) {
      const EmbeddedArtifact& e = *embeddedArtifact();
      m.path = e.displayName;  // messages name the executable as invoked, not /proc/self/exe
      try {
        loaded = readArtifact(e.exePath, e.offset, e.length, e.displayName);
      } catch (const Error& err) {
        std::string message = err.what();
        if (message.rfind(e.exePath, 0) == 0) message = e.displayName + message.substr(e.exePath.size());
        throw Error(message);
      }
    } else if (exe) {
      loaded = readArtifact(path, exe->offset, exe->length);
    } else {
      loaded = readArtifact(path);
    }
    auto a = std::make_shared<Artifact>(std::move(loaded.artifact));
    m.spec = a->spec;
    m.weights = a->weights;
    m.modelId = a->modelId;
    if (a->vocabulary) {
      // m.path: a standalone executable's name as invoked, not the placeholder of its embedded model.
      m.vocabulary = frontend::Vocabulary::fromJson(*a->vocabulary, m.path + ": manifest /vocabulary");
      checkVocabularySize(*m.vocabulary, m.spec, m.path + ": manifest /vocabulary");
    }
    m.artifact = std::move(a);
    applyVocabFlag(m, options);
    return m;
  }
  frontend::LoadOptions load;
  load.randomWeights = options.randomWeights;
  load.seed = options.seed;
  frontend::LoadedModel loaded = frontend::loadModel(path, options.weights, load);
  m.form = std::filesystem::is_directory(path) ? "directory" : "spec";
  if (options.randomWeights && m.form == "directory") {
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(path, ec)) {
      const std::string name = e.path().filename().string();
      if (name.ends_with(".safetensors") || name.ends_with(".bin") || name.ends_with(".pt")) {
        std::cerr << "txlc: note: --random-weights: " << oneLine(e.path().string())
                  << " is not read; the model gets seeded random weights" << std::endl;
        break;
      }
    }
  }
  // "checkpoint": a checkpoint file as MODEL, or the checkpoint a folder or --weights names.
  if (m.form == "spec" && frontend::isTorchCheckpointFile(path)) m.form = "checkpoint";
  // "safetensors": a safetensors file as MODEL, its spec from the config.json beside it.
  if (m.form == "spec" && frontend::sniffFile(path) == frontend::FileForm::Safetensors) m.form = "safetensors";
  if (!loaded.weightsPath.empty() && frontend::isTorchCheckpointFile(loaded.weightsPath)) m.form = "checkpoint";
  for (const auto& w : loaded.spec.warnings) std::cerr << "txlc: warning: " << oneLine(w) << std::endl;
  m.spec = std::move(loaded.spec);
  m.weights = std::move(loaded.weights);
  if (!loaded.vocabPath.empty()) {
    m.vocabulary = frontend::Vocabulary::load(loaded.vocabPath);
    checkVocabularySize(*m.vocabulary, m.spec, loaded.vocabPath);
  }
  applyVocabFlag(m, options);
  m.modelId = modelId(m.spec, m.weights);
  return m;
}

frontend::ModelSpec openSpec(const std::string& path, const OpenOptions& options) {
  if (looksLikeArtifact(path) && !options.weights && !options.randomWeights)
    return openModel(path, OpenOptions{}).spec;  // checks version and checksum too
  if (options.weights || options.randomWeights) {
    frontend::LoadOptions lo;
    lo.randomWeights = options.randomWeights;
    lo.seed = options.seed;
    return frontend::loadModel(path, options.weights, lo).spec;
  }
  return frontend::loadModelFileSpec(path);
}

Model modelFrom(frontend::ModelSpec spec, ir::TensorMap weights, std::string path) {
  Model m;
  m.path = path.empty() ? spec.source : std::move(path);
  m.form = "spec";
  m.spec = std::move(spec);
  m.weights = std::move(weights);  // modelId left empty: hashing every weight is for those who need it
  return m;
}

const frontend::Vocabulary& requireVocabulary(const Model& m, const std::string& what) {
  if (!m.vocabulary)
    throw Error(
        m.path + ": no vocabulary; " + what +
        " needs --vocab FILE, a model directory with vocab.json or vocab.txt, or an artifact compiled from one");
  return *m.vocabulary;
}

}  // namespace txl::driver
