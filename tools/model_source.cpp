// tools/model_source.cpp - models from directories, spec files, artifacts and the running executable.
#include "tools/model_source.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstring>
#include <iostream>
#include <mutex>

#include "frontend/model_loader.h"
#include "ir/check.h"
#include "ir/json_io.h"
#include "tools/command.h"
#include "tools/content_hash.h"
#include "tools/standalone.h"

namespace txl::tools {

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

// RunSettings::qlen (the usual segment length, which sizes the session's
// state windows) is being added by the backend's window-memory work; set it
// when this build has it.
template <class Settings>
void setUsualQlen(Settings& s, std::int64_t qlen) {
  if constexpr (requires { s.qlen = qlen; }) s.qlen = qlen;
}

}  // namespace

const std::optional<EmbeddedArtifact>& embeddedArtifact() { return embeddedSlot(); }

void detectEmbeddedArtifact() {
  std::optional<StandaloneTrailer> t = readStandaloneTrailer("/proc/self/exe");
  if (t) embeddedSlot() = EmbeddedArtifact{"/proc/self/exe", t->offset, t->length};
}

namespace {
// --vocab: a vocabulary file given on the command line wins over the model's.
void applyVocabFlag(ModelSource& m, const SourceOptions& options) {
  if (!options.vocab) return;
  m.vocabulary = frontend::Vocabulary::load(*options.vocab);
  checkVocabularySize(*m.vocabulary, m.spec, *options.vocab);
}
}  // namespace

ModelSource openModelSource(const std::string& path, const SourceOptions& options) {
  ModelSource m;
  m.path = path;
  const bool embedded = path == kEmbeddedModelPath && embeddedArtifact();
  if (embedded || looksLikeArtifact(path)) {
    if (options.weights) throw Error("--weights: " + path + " is a compiled artifact that holds its weights");
    if (options.randomWeights) throw Error("--random-weights: " + path + " is a compiled artifact that holds its weights");
    LoadedArtifact loaded = embedded ? readArtifact(embeddedArtifact()->exePath, embeddedArtifact()->offset,
                                                    embeddedArtifact()->length)
                                     : readArtifact(path);
    auto a = std::make_shared<Artifact>(std::move(loaded.artifact));
    m.spec = a->spec;
    m.weights = a->weights;
    m.modelId = a->modelId;
    if (a->vocabulary) {
      m.vocabulary = frontend::Vocabulary::fromJson(*a->vocabulary, path + ": manifest /vocabulary");
      checkVocabularySize(*m.vocabulary, m.spec, path + ": manifest /vocabulary");
    }
    m.artifact = std::move(a);
    applyVocabFlag(m, options);
    return m;
  }
  frontend::LoadOptions load;
  load.randomWeights = options.randomWeights;
  load.seed = options.seed;
  frontend::LoadedModel loaded = frontend::loadModel(path, options.weights, load);
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

ResolvedSetting resolveSetting(const ModelSource& m, const RunFlags& flags) {
  ResolvedSetting r;
  const frontend::ModelSpec& spec = m.spec;
  std::int64_t batch = 1, qlen = spec.tgt_len > 0 ? spec.tgt_len : 64, memLen = spec.mem_len,
               clampLen = spec.clamp_len;
  bool sameLength = spec.same_length;
  if (m.artifact) {
    const ArtifactSetting& s = m.artifact->setting;
    batch = s.batch, qlen = s.qlen, memLen = s.memLen, clampLen = s.clampLen, sameLength = s.sameLength;
  }
  if (flags.batch) {
    if (*flags.batch < 1) throw Error("--batch: expected a positive integer, got " + std::to_string(*flags.batch));
    batch = *flags.batch;
  }
  if (flags.qlen) {
    if (*flags.qlen < 1) throw Error("--qlen: expected a positive integer, got " + std::to_string(*flags.qlen));
    qlen = *flags.qlen;
  }
  if (flags.memLen) {
    if (*flags.memLen < 0) throw Error("--mem-len: expected a non-negative integer, got " + std::to_string(*flags.memLen));
    memLen = *flags.memLen;
  }
  if (flags.clampLen) clampLen = *flags.clampLen;
  if (flags.sameLength) sameLength = true;
  if (sameLength && memLen == 0) throw Error("--same-length: needs a mem_len above 0, got mem_len 0");
  r.settings.batch = batch;
  r.settings.memLen = memLen;
  r.settings.clampLen = clampLen;
  r.settings.sameLength = sameLength;
  setUsualQlen(r.settings, qlen);
  r.qlen = qlen;
  r.memLen = memLen;
  return r;
}

bool replans(const ModelSource& m, const ResolvedSetting& r) {
  if (!m.artifact) return false;
  // A different qlen alone keeps the setting: the stored shapes that still
  // occur (the one-token step) are used, the others built as usual.
  const ArtifactSetting& s = m.artifact->setting;
  const frontend::SegmentShape base = segmentShape(m.spec, r.settings);
  return s.batch != base.batch || s.memLen != base.memLen || s.clampLen != base.clampLen ||
         s.sameLength != base.sameLength;
}

void noteReplanning(const ModelSource& m, const ResolvedSetting& r) {
  if (!replans(m, r)) return;
  const ArtifactSetting& s = m.artifact->setting;
  const frontend::SegmentShape base = segmentShape(m.spec, r.settings);
  std::cerr << "txlc: note: " << m.path << " was compiled for batch " << s.batch << ", qlen " << s.qlen
            << ", mem_len " << s.memLen << ", clamp_len " << s.clampLen << ", same_length "
            << (s.sameLength ? "true" : "false") << "; re-planning for batch " << base.batch << ", qlen " << r.qlen
            << ", mem_len " << base.memLen << ", clamp_len " << base.clampLen << ", same_length "
            << (base.sameLength ? "true" : "false") << " from its stored spec and pipeline" << std::endl;
}

void checkPipelineFlags(const ModelSource& m, const PipelineFlags& flags) {
  if (!m.artifact) return;
  if (!flags.passes.empty() || !flags.disabled.empty())
    throw Error((flags.passes.empty() ? "--disable-pass" : "--passes") + std::string(": ") + m.path +
                " is compiled with its pipeline; recompile it to change the passes");
}

std::shared_ptr<backend::CompiledModel> compileSource(const ModelSource& m, const ResolvedSetting& r,
                                                      const ModelOptions& options) {
  checkMemoryFits(m.spec, r.settings.batch, r.qlen, r.memLen, m.path);  // before anything is planned
  if (!m.artifact) return compileModel(m.spec, m.weights, r.settings, options);

  ModelOptions stored = options;
  stored.pipeline.passes = m.artifact->passes;
  stored.pipeline.disabled.clear();
  // compileModel() works out the session's ModelInfo; the factory is ours.
  auto plain = compileModel(m.spec, m.weights, r.settings, stored);
  const frontend::SegmentShape base = segmentShape(m.spec, r.settings);
  const passes::PipelineOptions pipeline = stored.pipeline;
  const ArtifactSetting& s = m.artifact->setting;
  const bool sameSetting = !replans(m, r);

  // Rebuilding is trusted once this txlc rebuilds the artifact's main graph
  // exactly as it was stored.
  struct Verified {
    std::once_flag once;
  };
  auto verified = std::make_shared<Verified>();
  std::shared_ptr<const Artifact> artifact = m.artifact;
  frontend::ModelSpec spec = m.spec;
  std::string path = m.path;
  auto verify = [=] {
    std::call_once(verified->once, [&] {
      if (artifact->graphs.empty()) return;
      const StoredGraph& main = artifact->graphs.front();
      frontend::SegmentShape shape = frontend::defaultShape(spec, s.batch, main.qlen, main.mlen);
      shape.padded = main.padded;
      shape.memLen = s.memLen, shape.clampLen = s.clampLen, shape.sameLength = s.sameLength;
      passes::PipelineOptions quiet = pipeline;
      quiet.manager = {};
      std::string rebuilt =
          ir::toJson(buildOptimizedGraph(spec, shape, {main.logprob, main.nll}, quiet, targetInfo(kArtifactTarget)))
              .dump();
      if (contentHash(rebuilt.data(), rebuilt.size()) != main.hash)
        throw Error(path + ": this txlc (" + std::string(kTxlcVersion) + ") rebuilds the artifact's main graph differently from txlc " +
                    artifact->txlcVersion + " that compiled it; recompile the artifact");
    });
  };
  // Another setting rebuilds every graph: check now, before the run starts
  // (and before noteReplanning() announces it), not at its first segment.
  if (!sameSetting) verify();
  auto factory = [=](const backend::SegmentKey& key, ir::ConstantEvaluator* constants) {
    if (sameSetting)
      for (const StoredGraph& g : artifact->graphs)
        if (g.qlen == key.qlen && g.mlen == key.mlen && g.padded == key.padded &&
            g.logprob == key.outputs.logprob && g.nll == key.outputs.nll) {
          ir::Graph stored = ir::fromJson(g.graph, path + ": manifest graph qlen " + std::to_string(key.qlen) +
                                                       " mlen " + std::to_string(key.mlen) +
                                                       (key.padded ? " padded" : ""));
          passes::foldConstants(stored, constants);
          return stored;
        }
    verify();
    ir::PassContext ctx;
    ctx.constants = constants;
    return buildOptimizedGraph(spec, segmentShape(base, key), {key.outputs.logprob, key.outputs.nll}, pipeline,
                               targetInfo(options.backend), &ctx);
  };
  return std::make_shared<backend::CompiledModel>(plain->info(), m.weights, makeExecutor(options.backend), factory);
}

const frontend::Vocabulary& requireVocabulary(const ModelSource& m, const std::string& what) {
  if (!m.vocabulary)
    throw Error(m.path + ": no vocabulary; " + what +
                " needs --vocab FILE, a model directory with vocab.json or vocab.txt, or an artifact compiled from one");
  return *m.vocabulary;
}

}  // namespace txl::tools
