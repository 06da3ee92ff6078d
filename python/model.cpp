// python/model.cpp - txlc.load, txlc.compile and txlc.Model: a model and what runs it whole (score, inspect, compile).
//
// Each call resolves its setting once - load()'s keywords, then the call's
// - through driver::resolveSetting, exactly as the command line resolves its
// flags, and then runs the same driver calls as the matching command
// (tools/cmd_score.cpp, cmd_inspect.cpp, cmd_compile.cpp). The GIL is
// released while a model is read, compiled or scored.
#include "python/model.h"

#include <pybind11/stl.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>

#include "driver/compile.h"
#include "driver/emit.h"
#include "driver/inspect.h"
#include "driver/score_report.h"
#include "driver/scorer.h"
#include "driver/text_source.h"
#include "passes/pipeline.h"
#include "python/convert.h"
#include "python/errors.h"
#include "python/made_by_txlc.h"
#include "python/txlc_executable.h"

namespace txl::python {

namespace {

using Clock = std::chrono::steady_clock;

std::string fspath(const py::handle& path, const char* what) { return pathArg(path, what); }

std::string settingKey(const driver::Setting& s) {
  std::string key = std::to_string(s.batch) + "|" + std::to_string(s.qlen) + "|" + std::to_string(s.memLen) + "|" +
                    std::to_string(s.clampLen) + "|" + std::to_string(s.sameLength) + "|" +
                    frontend::initialMemoryName(s.initialMemory) + "|" + std::to_string(s.threads) + "|" +
                    driver::threadPolicyName(s.threadPolicy) + "|" + s.backend + "|" +
                    driver::precisionName(s.precision);
  for (const auto& p : s.resolved.passes) key += "|" + p;
  return key;
}

driver::OpenOptions openOptions(const py::object& weights, const py::object& vocab, bool randomWeights,
                                std::uint64_t seed) {
  driver::OpenOptions o;
  if (!weights.is_none()) o.weights = fspath(weights, "weights");
  if (!vocab.is_none()) o.vocab = fspath(vocab, "vocab");
  if (o.weights && randomWeights) throw SettingFailure("--weights excludes --random-weights");
  o.randomWeights = randomWeights;
  o.seed = seed;
  return o;
}

std::shared_ptr<PyModel> load(const py::object& path, const py::object& weights, const py::object& vocab,
                              bool randomWeights, std::uint64_t seed, const py::object& tokenizer,
                              const py::kwargs& kwargs) {
  const std::string p = fspath(path, "path");
  driver::OpenOptions o = openOptions(weights, vocab, randomWeights, seed);
  if (!tokenizer.is_none()) o.tokenizer = tokenizer.cast<std::string>();  // checked by openModel
  auto pm = std::make_shared<PyModel>();
  pm->choice.threads = driver::defaultThreads();  // the command line's default
  applyKeywords(pm->choice, kwargs, "load");
  {
    py::gil_scoped_release release;
    if (pm->choice.threads) driver::applyThreads(*pm->choice.threads);
    pm->model = driver::openModel(p, o);
  }
  pm->resolve(py::kwargs(), "load");  // a bad setting fails here, not at the first run
  return pm;
}

py::dict compileModel(const std::shared_ptr<PyModel>& pm, const py::object& output, const py::object& emitObject,
                      const py::object& txlc, const py::kwargs& kwargs, Clock::time_point start) {
  const std::string out = fspath(output, "output");
  const std::string emit = utf8Text(emitObject, "emit");
  // Recompiling an artifact keeps its passes unless passes= says otherwise.
  const driver::Setting s = pm->resolve(kwargs, "compile", /*run=*/false);
  asSetting([&] { driver::checkMemoryFits(pm->model.spec, s, pm->model.path); });
  if (emit != "artifact" && emit != "exe")
    throw SettingFailure("--emit: expected 'artifact' or 'exe', got '" + emit + "'");
  std::string exe = txlc.is_none() ? defaultTxlcExecutable() : fspath(txlc, "txlc");
  if (emit == "exe" && !std::filesystem::exists(exe))
    throw Error("emit='exe': " + exe + ": no such file (the txlc executable to copy; pass txlc=PATH)");
  nlohmann::json summary;
  {
    py::gil_scoped_release release;
    summary = driver::emitCompiled(pm->model, s, out, emit, exe);
  }
  summary["seconds"] = std::chrono::duration<double>(Clock::now() - start).count();
  return toPython(summary);
}

// What to score: token ids (an array or a list of ints), a file, or a text.
driver::ScoreInput scoreInput(const PyModel& pm, const py::object& source, bool ids, const py::object& isText) {
  const driver::Model& m = pm.model;
  if (!py::isinstance<py::str>(source) && !py::hasattr(source, "__fspath__")) {
    TokenArray t = tokenArray(source, "ids");
    driver::ScoreInput in;
    in.source = "<ids>";
    in.fromIds = true;
    in.ids.assign(t.tensor.data<std::int64_t>(), t.tensor.data<std::int64_t>() + t.tensor.numel());
    for (std::size_t i = 0; i < in.ids.size(); ++i)
      if (in.ids[i] < 0 || in.ids[i] >= m.spec.n_token)
        throw Error("ids: token id " + std::to_string(in.ids[i]) + " at position " + std::to_string(i) +
                    " is outside [0, " + std::to_string(m.spec.n_token) + ")");
    if (in.ids.empty()) throw Error("<ids>: empty input, expected text to score");
    return in;
  }
  bool path = !py::isinstance<py::str>(source);  // an os.PathLike is a file
  std::string s = path ? fspath(source, "text_or_path") : utf8Text(source, "text_or_path");
  if (!isText.is_none()) {
    path = !boolArg(isText, "text");
  } else if (!path) {
    // A str is a file when it names one, or looks like a path (one line,
    // no spaces, a '/' or a file suffix); anything else is the text itself.
    std::error_code ec;
    const bool oneWord = s.find_first_of(" \t\r\n") == std::string::npos && !s.empty();
    path = std::filesystem::exists(s, ec) ||
           (oneWord && (s.find('/') != std::string::npos || std::filesystem::path(s).has_extension()));
  }
  if (path) s = fspath(source, "text_or_path");  // a str taken as a file: a NUL byte or ENAMETOOLONG named
  py::gil_scoped_release release;
  if (path) return driver::scoreInputFromFile(m, s, ids);
  if (!ids) return driver::scoreInputFromText(m, s, "<text>");
  driver::ScoreInput in;
  in.source = "<text>";
  in.fromIds = true;
  in.ids = driver::parseTokenIds(s, in.source, m.spec.n_token);
  if (in.ids.empty()) throw Error("<text>: empty input, expected text to score");
  return in;
}

py::dict score(const std::shared_ptr<PyModel>& pm, const py::object& source, bool ids, bool perToken,
               const py::object& isText, const py::kwargs& kwargs) {
  const driver::Setting s = pm->resolve(kwargs, "score");
  const driver::ScoreInput in = scoreInput(*pm, source, ids, isText);
  driver::checkScoreLength(std::int64_t(in.ids.size()), s.batch, in.source);
  auto compiled = pm->compiled(s);
  driver::ScoreResult r;
  double seconds = 0;
  {
    py::gil_scoped_release release;
    driver::applyThreads(s.threads);
    backend::Session session(compiled);
    driver::ScoreOptions so;
    so.qlen = s.qlen;
    so.perToken = perToken;
    // Ctrl-C stops a long score: the interpreter's signal check, at most every 100 ms.
    auto lastCheck = Clock::now();
    so.progress = [&](std::int64_t, std::int64_t, double) {
      if (Clock::now() - lastCheck < std::chrono::milliseconds(100)) return;
      lastCheck = Clock::now();
      py::gil_scoped_acquire acquire;
      if (PyErr_CheckSignals() != 0) throw py::error_already_set();
    };
    const auto start = Clock::now();
    r = driver::scoreTokens(session, in.ids, so, in.source);
    seconds = std::chrono::duration<double>(Clock::now() - start).count();
  }
  py::dict d = toPython(driver::scoreReport(pm->model, s, in, r, seconds));
  if (perToken) {
    py::array_t<float> a = newFloatArray({std::int64_t(r.perToken.size())});
    std::copy(r.perToken.begin(), r.perToken.end(), a.mutable_data());
    d["per_token_nll"] = a;
  }
  return d;
}

// Whether `source` is a list (or tuple) of texts rather than token ids: a
// non-empty one whose items are str. TypeError for one that mixes str with others.
bool isTextList(const py::object& source) {
  if (!py::isinstance<py::list>(source) && !py::isinstance<py::tuple>(source)) return false;
  const py::sequence items = py::reinterpret_borrow<py::sequence>(source);
  if (items.size() == 0 || !py::isinstance<py::str>(items[0])) return false;
  for (std::size_t i = 0; i < items.size(); ++i)
    if (!py::isinstance<py::str>(items[i]))
      throw py::type_error("score: a list of texts holds a " +
                           std::string(py::str(py::type::handle_of(items[i]).attr("__name__"))) + " at index " +
                           std::to_string(i) + ", expected every item a str");
  return true;
}

// score() of each text of a list, in order: one compiled model, one result dict per text.
py::list scoreTexts(const std::shared_ptr<PyModel>& pm, const py::object& texts, bool ids, bool perToken,
                    const py::object& isText, const py::kwargs& kwargs) {
  const py::object asText = isText.is_none() ? py::object(py::bool_(true)) : isText;
  py::list results;
  for (const py::handle item : texts)
    results.append(score(pm, py::reinterpret_borrow<py::object>(item), ids, perToken, asText, kwargs));
  return results;
}

py::object inspect(const std::shared_ptr<PyModel>& pm, const py::object& stageObject, const py::object& formatObject,
                   bool stats, std::optional<std::int64_t> qlen, std::optional<std::int64_t> mlen, std::int64_t batch,
                   const py::object& outputsObject, const py::kwargs& kwargs) {
  const std::string stage = utf8Text(stageObject, "stage"), format = utf8Text(formatObject, "format"),
                    outputs = utf8Text(outputsObject, "outputs");
  driver::InspectRequest r;
  r.stage = stage, r.format = format, r.stats = stats, r.batch = batch, r.qlen = qlen, r.mlen = mlen;
  driver::SettingChoice c = pm->choice;  // the model's as loaded (precision included), then the keywords
  asSetting([&] {
    driver::setInspectOutputs(r, outputs);
    driver::checkInspectRequest(r);
    applyKeywords(c, kwargs, "inspect");
  });
  std::string text;
  {
    py::gil_scoped_release release;
    text = driver::inspectModel(pm->model.spec, c, {}, r);
  }
  if (format == "json") return py::module_::import("json").attr("loads")(text);
  return py::str(text);
}

py::array_t<std::int64_t> encode(const PyModel& pm, const py::object& textObject, bool eosAtEnd) {
  const std::string text = utf8Text(textObject, "text");
  const frontend::Vocabulary& vocab = driver::requireVocabulary(pm.model, "encode");
  frontend::EncodeOptions o;
  o.eosAtEnd = eosAtEnd;
  std::vector<std::int64_t> ids = vocab.encode(text, "text", o);
  py::array_t<std::int64_t> a(py::ssize_t(ids.size()));
  std::copy(ids.begin(), ids.end(), a.mutable_data());
  return a;
}

std::string decode(const PyModel& pm, const py::object& ids) {
  const frontend::Vocabulary& vocab = driver::requireVocabulary(pm.model, "decode");
  TokenArray t = tokenArray(ids, "ids");
  std::span<const std::int64_t> span(t.tensor.data<std::int64_t>(), std::size_t(t.tensor.numel()));
  for (std::size_t i = 0; i < span.size(); ++i)
    if (span[i] < 0 || span[i] >= vocab.size())
      throw Error("ids: token id " + std::to_string(span[i]) + " at position " + std::to_string(i) +
                  " is outside [0, " + std::to_string(vocab.size()) + ")");
  return vocab.decode(span);
}

}  // namespace

driver::Setting PyModel::resolve(const py::kwargs& kwargs, const char* function, bool run) const {
  return asSetting([&] {
    driver::SettingChoice c = choice;
    applyKeywords(c, kwargs, function);
    return driver::resolveSetting(model, c, run);
  });
}

std::shared_ptr<const backend::CompiledModel> PyModel::compiled(const driver::Setting& s) {
  asSetting([&] { driver::checkMemoryFits(model.spec, s, model.path); });
  const std::string key = settingKey(s);
  py::gil_scoped_release release;
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = compiled_.find(key);
  if (it != compiled_.end()) return it->second;
  auto c = driver::compile(model, s);
  compiled_.emplace(key, c);
  return c;
}

void bindModel(py::module_& m) {
  py::class_<PyModel, std::shared_ptr<PyModel>> model(m, "Model", py::is_final(),
                                                      R"(A Transformer-XL model opened by txlc.load().

Holds the weights, the vocabulary (when the model has one) and the setting
given to load(); every method takes the same setting keywords to override
it for that call. Sessions, generations and compiled forms keep the model
alive: deleting the Model variable does not invalidate them.)");
  model
      .def_property_readonly(
          "path", [](const PyModel& p) { return p.model.path; }, "The path the model was loaded from.")
      .def_property_readonly(
          "model_id", [](const PyModel& p) { return p.model.modelId; },
          "The 16-hex-digit content hash of spec and weights (the id a state file records).")
      .def_property_readonly(
          "spec", [](const PyModel& p) { return toPython(p.model.spec.toJson()); },
          "The hyperparameters, as a dict with the reference's key names.")
      .def_property_readonly(
          "n_token", [](const PyModel& p) { return p.model.spec.n_token; }, "Vocabulary size.")
      .def_property_readonly(
          "n_layer", [](const PyModel& p) { return p.model.spec.n_layer; }, "Layers.")
      .def_property_readonly(
          "d_model", [](const PyModel& p) { return p.model.spec.d_model; }, "Width of the hidden states.")
      .def_property_readonly(
          "semantics", [](const PyModel& p) { return std::string(frontend::semanticsName(p.model.spec.semantics)); },
          "'authors' (the authors' PyTorch code) or 'huggingface' (docs/SEMANTICS.md).")
      .def_property_readonly(
          "vocabulary",
          [](const PyModel& p) -> py::object {
            if (!p.model.vocabulary) return py::none();
            return py::str(p.model.vocabulary->kind() == frontend::VocabKind::Char ? "char" : "word");
          },
          "'char', 'word', or None when the model has no vocabulary (then only token ids are accepted).")
      .def_property_readonly(
          "setting", [](const PyModel& p) { return settingToDict(p.resolve(py::kwargs(), "setting")); },
          "The resolved setting load() gave: batch, qlen, mem_len, clamp_len, same_length, initial_memory, threads, "
          "thread_policy, backend, passes (the pass list), memory ('kv' or 'hidden') and precision.")
      .def(
          "setting_for",
          [](const PyModel& p, const py::kwargs& kw) { return settingToDict(p.resolve(kw, "setting_for")); },
          "setting_for(**setting) -> dict\n\nThe setting a call with these keywords would run with (checked: "
          "txlc.SettingError for a bad one).")
      .def("session", &makeSession, R"(session(**setting) -> Session

A new stream (batch streams side by side) with an empty memory (or the
model's initial memory), e.g. model.session(batch=4, mem_len=128).
Sessions of one model with the same setting share its compiled form and
may run on different threads at once.)")
      .def(
          "score",
          [](const std::shared_ptr<PyModel>& p, const py::object& source, bool ids, bool perToken,
             const py::object& text, const py::kwargs& kw) -> py::object {
            if (isTextList(source)) return scoreTexts(made(p), source, ids, perToken, text, kw);
            return score(made(p), source, ids, perToken, text, kw);
          },
          py::arg("text_or_path"), py::kw_only(), py::arg("ids") = false, py::arg("per_token") = false,
          py::arg("text") = py::none(),
          R"(score(text_or_path, *, ids=False, per_token=False, text=None, **setting) -> dict

Scores a text as `txlc score --json` does and returns its figures: tokens,
nll_sum, nll_per_token, perplexity, bits_per_token, bits_per_char (character
vocabularies), batch, qlen, mem_len, clamp_len, same_length, semantics,
initial_memory, dropped, segments, seconds (and per_token_nll, a float32
array, with per_token=True).

text_or_path: a file (an os.PathLike, or a str that names a file or looks
like a path), the text itself (a str; text=True insists), or token ids (a
sequence or an integer array). ids=True reads the file or str as
whitespace-separated token ids. A list (or tuple) of str is several texts:
score returns a list, each text's dict in order, as score(text, text=True)
returns it (text=False: the strs are files). The GIL is released while it
runs.)")
      .def(
          "generate", &makeGeneration, py::arg("prompt"), py::arg("n") = 200, py::kw_only(),
          py::arg("temperature") = py::none(), py::arg("top_k") = py::none(), py::arg("top_p") = py::none(),
          py::arg("seed") = 0, py::arg("greedy") = false, py::arg("stream") = true,
          R"(generate(prompt, n=200, *, temperature=1.0, top_k=0, top_p=1.0, seed=0, greedy=False, stream=True, **setting)

Samples n tokens after `prompt`, as `txlc generate` does: the same seed and
setting give the same tokens. Returns a Generation, an iterator yielding the
text of each token as it is chosen (its token_ids grow alongside); with
stream=False, the whole generated text as a str. Batch 1. temperature=0 is
greedy decoding (the same as greedy=True).)")
      .def(
          "encode", [](const PyModel& p, const py::object& text, bool eos) { return encode(p, text, eos); },
          py::arg("text"), py::kw_only(), py::arg("eos_at_end") = true,
          R"(encode(text, *, eos_at_end=True) -> numpy.ndarray[int64]

The token ids of `text` with the model's vocabulary, as score reads a file
(a word vocabulary adds <eos> after every line, the last one too unless
eos_at_end=False, as for a prompt). txlc.InputError for a character outside a
character vocabulary.)")
      .def(
          "decode", [](const PyModel& p, const py::object& ids) { return decode(p, ids); }, py::arg("ids"),
          R"(decode(ids) -> str

The text of token ids (a sequence or an integer array): characters joined, or
words joined by spaces with <eos> as a line break.)")
      .def(
          "inspect",
          [](const std::shared_ptr<PyModel>& p, const py::object& stage, const py::object& format, bool stats,
             std::optional<std::int64_t> qlen, std::optional<std::int64_t> mlen, std::int64_t batch,
             const py::object& outputs,
             const py::kwargs& kw) { return inspect(made(p), stage, format, stats, qlen, mlen, batch, outputs, kw); },
          py::arg("stage") = "optimized", py::arg("format") = "text", py::kw_only(), py::arg("stats") = false,
          py::arg("qlen") = py::none(), py::arg("mlen") = py::none(), py::arg("batch") = 1,
          py::arg("outputs") = "logprob,nll",
          R"(inspect(stage='optimized', format='text', *, stats=False, qlen=None, mlen=None, batch=1, outputs='logprob,nll', backend=None, passes=None, disable_pass=None, memory=None)

The segment graph of qlen tokens (default: the spec's tgt_len) against mlen
remembered positions (default: its mem_len) with the outputs asked
('logprob,nll', 'nll' as score runs, 'logprob', or 'hidden' for neither),
as `txlc inspect` prints it:
stage 'input' (the literal graph) or 'optimized'; format 'text' or 'dot'
(a str) or 'json' (a dict). stats=True: ops per kind, FLOPs and bytes per
segment before and after the passes, and the fusions ('text' or 'json').)")
      .def(
          "compile",
          [](const std::shared_ptr<PyModel>& p, const py::object& output, const py::object& emit,
             const py::object& txlc,
             const py::kwargs& kw) { return compileModel(made(p), output, emit, txlc, kw, Clock::now()); },
          py::arg("output"), py::arg("emit") = "artifact", py::kw_only(), py::arg("txlc") = py::none(),
          "compile(output, emit='artifact', *, txlc=None, **setting) -> dict\n\nSee txlc.compile().")
      .def("__repr__", [](const PyModel& p) {
        return "<txlc.Model '" + p.model.path + "' n_token=" + std::to_string(p.model.spec.n_token) +
               " n_layer=" + std::to_string(p.model.spec.n_layer) + " d_model=" + std::to_string(p.model.spec.d_model) +
               (p.model.modelId.empty() ? "" : " model_id=" + p.model.modelId) + ">";
      });

  madeByTxlcOnly(model, "txlc.load()");

  m.def("load", &load, py::arg("path"), py::arg("weights") = py::none(), py::arg("vocab") = py::none(), py::kw_only(),
        py::arg("random_weights") = false, py::arg("seed") = 0, py::arg("tokenizer") = py::none(),
        R"(load(path, weights=None, vocab=None, *, random_weights=False, seed=0, tokenizer=None, **setting) -> Model

Opens a model in any form the command line accepts: a model directory
(config.json, weights, vocabulary; a Hugging Face transfo-xl folder), a spec
file with weights= (or random_weights=True), a compiled artifact, a
PyTorch checkpoint folder or file (pytorch_model.bin, the authors' model.pt),
or safetensors weights with config.json beside them; recognized by content,
any other file is an InputError naming what it is. vocab= replaces or gives
the vocabulary; tokenizer= ('whitespace' or 'hf', as --tokenizer) chooses how
a word vocabulary splits text (default: 'hf' for Hugging Face's vocab.pkl).

Setting keywords, named as the command line's flags: batch, qlen, mem_len,
clamp_len, same_length, initial_memory ('zeros' or 'empty'), threads
(default: the machine's physical cores, as txlc; 0: OpenMP's default),
thread_policy ('auto', 'idle' or 'loaded', as --thread-policy: which steps
run on one thread), backend ('onednn' or 'reference'), passes (a str 'a,b'
or 'none', or a list), disable_pass (a str or a list), memory ('kv' or
'hidden') and precision. They become the model's defaults for every call.
txlc.InputError for a bad file, txlc.SettingError for a bad setting.)");
  m.def(
      "compile",
      [](const py::object& modelOrPath, const py::object& output, const py::object& emit, const py::object& weights,
         const py::object& vocab, bool randomWeights, std::uint64_t seed, const py::object& txlc,
         const py::kwargs& kwargs) {
        const auto start = Clock::now();
        if (py::isinstance<PyModel>(modelOrPath)) {
          if (!weights.is_none() || !vocab.is_none() || randomWeights)
            throw SettingFailure("compile(): weights, vocab and random_weights are for a path, not a loaded Model");
          return compileModel(modelOrPath.cast<std::shared_ptr<PyModel>>(), output, emit, txlc, kwargs, start);
        }
        auto pm = load(modelOrPath, weights, vocab, randomWeights, seed, py::none(), py::kwargs());
        return compileModel(pm, output, emit, txlc, kwargs, start);
      },
      py::arg("model_or_path"), py::arg("output"), py::arg("emit") = "artifact", py::kw_only(),
      py::arg("weights") = py::none(), py::arg("vocab") = py::none(), py::arg("random_weights") = false,
      py::arg("seed") = 0, py::arg("txlc") = py::none(),
      R"(compile(model_or_path, output, emit='artifact', *, weights=None, vocab=None, random_weights=False, seed=0, txlc=None, **setting) -> dict

Compiles a Model (or the model at a path, opened as load() does) to an
artifact file (emit='artifact') or a standalone executable (emit='exe': a
copy of the txlc executable - txlc=, $TXLC_EXECUTABLE, this build's, the one
installed beside the module, or txlc on PATH -
with the artifact appended), as `txlc compile` does, and returns its
summary (`txlc compile --json`): output, emit, model_id, batch, qlen,
mem_len, graphs, main_graph_nodes, passes, main_plan_steps,
main_plan_arena_bytes, artifact_bytes, seconds.)");
  bindScoreDocuments(m);
}

}  // namespace txl::python
