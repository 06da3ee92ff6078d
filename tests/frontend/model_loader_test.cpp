// tests/frontend/model_loader_test.cpp - the MODEL [--weights FILE] input forms and their mistakes.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "frontend/model_loader.h"
#include "ir/check.h"

using namespace txl::frontend;
namespace fs = std::filesystem;

namespace {

const fs::path kModels = TXL_MODELS_DIR;
const fs::path kConformance = fs::path(TXL_TEST_DATA_DIR) / "conformance";

// A scratch directory removed at the end of the test.
struct ScratchDir {
  fs::path path;
  explicit ScratchDir(const std::string& name)
      : path(fs::temp_directory_path() / ("txl_loader_" + std::to_string(::getpid()) + "_" + name)) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~ScratchDir() { fs::remove_all(path); }
};

std::string loadError(const std::string& model, std::optional<std::string> weights, LoadOptions options = {}) {
  try {
    loadModel(model, weights, options);
  } catch (const txl::Error& e) {
    return e.what();
  }
  return "(no error)";
}

void writeCaseConfig(const fs::path& to, const std::string& name) {
  std::ifstream in(kConformance / name / "case.json");
  auto j = nlohmann::json::parse(in);
  std::ofstream(to) << j.at("config").dump(2);
}

}  // namespace

TEST_CASE("model directory: config.json + safetensors + vocabulary", "[loader]") {
  LoadedModel c = loadModel((kModels / "kjv-char").string(), std::nullopt);
  CHECK(c.spec.n_token == 73);
  CHECK(c.vocabPath == (kModels / "kjv-char" / "vocab.json").string());
  CHECK(c.weightsPath == (kModels / "kjv-char" / "model.safetensors").string());
  CHECK(c.dir == (kModels / "kjv-char").string());
  CHECK(c.weights.contains("crit.out_layers.0.weight"));

  LoadedModel w = loadModel((kModels / "kjv-words").string(), std::nullopt);
  CHECK(w.vocabPath == (kModels / "kjv-words" / "vocab.txt").string());
  CHECK(w.weights.at("crit.out_projs.2").raw() == w.weights.at("word_emb.emb_projs.2").raw());
}

TEST_CASE("spec file + --weights, and random weights", "[loader]") {
  ScratchDir dir("spec");
  const fs::path spec = dir.path / "spec.json";
  writeCaseConfig(spec, "tiny_base");
  const std::string weights = (kConformance / "tiny_base" / "weights.safetensors").string();
  LoadedModel m = loadModel(spec.string(), weights);
  CHECK(m.spec.source == spec.string());
  CHECK(m.vocabPath.empty());
  CHECK(m.dir == dir.path.string());
  CHECK(m.weights.size() == weightSlots(m.spec).size());

  LoadOptions random;
  random.randomWeights = true;
  random.seed = 3;
  LoadedModel r = loadModel(spec.string(), std::nullopt, random);
  CHECK(r.weights.size() == m.weights.size());
  CHECK(r.weightsPath.empty());
}

TEST_CASE("MODEL as a checkpoint file or safetensors beside a spec: the folder's spec, weights and vocabulary",
          "[loader][checkpoint]") {
  const fs::path hf = fs::path(TXL_TEST_DATA_DIR) / "data" / "checkpoints" / "hf_tiny";
  const LoadedModel folder = loadModel(hf.string(), std::nullopt);
  const LoadedModel file = loadModel((hf / "pytorch_model.bin").string(), std::nullopt);
  CHECK(file.spec.toJson() == folder.spec.toJson());
  CHECK(file.vocabPath == folder.vocabPath);
  CHECK(file.weightsPath == (hf / "pytorch_model.bin").string());
  REQUIRE(file.weights.size() == folder.weights.size());
  for (const auto& [name, t] : folder.weights) {
    REQUIRE(file.weights.count(name) == 1);
    const auto& u = file.weights.at(name);
    REQUIRE(u.numel() == t.numel());
    CHECK(std::equal(t.data<float>(), t.data<float>() + t.numel(), u.data<float>()));
  }
  CHECK(loadModelFileSpec((hf / "pytorch_model.bin").string()).toJson() == folder.spec.toJson());
  const fs::path authors = fs::path(TXL_TEST_DATA_DIR) / "data" / "checkpoints" / "authors_model" / "model.pt";
  CHECK(loadModel(authors.string(), std::nullopt).spec.n_token == 97);
  const LoadedModel st = loadModel((kModels / "kjv-char" / "model.safetensors").string(), std::nullopt);
  CHECK(st.spec.toJson() == loadModel((kModels / "kjv-char").string(), std::nullopt).spec.toJson());
  CHECK(st.vocabPath == (kModels / "kjv-char" / "vocab.json").string());
}

TEST_CASE("model input mistakes: one clear line each", "[loader][errors]") {
  ScratchDir dir("errors");
  const std::string d = dir.path.string();
  const fs::path spec = dir.path / "spec.json";
  writeCaseConfig(spec, "tiny_base");
  const std::string tinyWeights = (kConformance / "tiny_base" / "weights.safetensors").string();

  CHECK(loadError(d + "/nope", std::nullopt) ==
        d + "/nope: no such file or directory (expected a spec JSON file or a model directory)");
  CHECK(loadError(spec.string(), std::nullopt) ==
        spec.string() + ": a spec file needs weights: pass --weights FILE (or --random-weights)");
  LoadOptions random;
  random.randomWeights = true;
  CHECK(loadError(spec.string(), tinyWeights, random) ==
        "--weights " + tinyWeights + " and --random-weights exclude each other; give one");
  CHECK(loadError(tinyWeights, std::nullopt) ==
        tinyWeights +
            ": safetensors weights with no config.json beside them; put the spec there, or give a spec JSON file as "
            "MODEL and these weights as --weights FILE");
  // Files of other kinds are named for what they are, whatever their extension.
  std::ofstream(d + "/notes.json") << "just words\n";
  CHECK(loadError(d + "/notes.json", std::nullopt).starts_with(d + "/notes.json: a text file, not a model"));
  std::ofstream(d + "/artifact.json") << "TXLCART" << '\0' << "rest";
  CHECK(loadError(d + "/artifact.json", std::nullopt)
            .starts_with(d + "/artifact.json: a compiled txlc artifact, not a model"));
  CHECK(loadError(spec.string(), d + "/notes.json") ==
        "--weights " + d +
            "/notes.json: a text file, not weights; expected a safetensors file or a PyTorch checkpoint");
  CHECK(loadError(spec.string(), d) ==
        d + ": is a directory; --weights expects a safetensors file or a PyTorch checkpoint");
  CHECK(loadError(spec.string(), d + "/w.safetensors") == d + "/w.safetensors: cannot open: No such file or directory");
  // Weights of another model.
  const std::string other = (kConformance / "wide" / "weights.safetensors").string();
  CHECK(loadError(spec.string(), other) ==
        other + ": tensor \"word_emb.emb_layers.0.weight\": expected shape [97,16], found [512,64]");

  // Directory forms.
  CHECK(loadError(d, std::nullopt) == d + ": no config.json (a model directory holds config.json, one *.safetensors "
                                          "file or a PyTorch checkpoint, and optionally vocab.json, vocab.txt or "
                                          "vocab.pkl)");
  fs::copy_file(spec, dir.path / "config.json");
  CHECK(loadError(d, std::nullopt) == d + ": no *.safetensors file and no PyTorch checkpoint (pytorch_model.bin); "
                                          "pass --weights FILE, or --random-weights");
  CHECK(loadError(d, std::nullopt, random) == "(no error)");
  CHECK(loadError(d, tinyWeights) == "(no error)");
  fs::copy_file(tinyWeights, dir.path / "a.safetensors");
  CHECK(loadError(d, std::nullopt) == "(no error)");
  fs::copy_file(tinyWeights, dir.path / "b.safetensors");
  CHECK(loadError(d, std::nullopt) ==
        d + ": 2 safetensors files (a.safetensors, b.safetensors); expected one, or pick one with --weights FILE");
  fs::remove(dir.path / "b.safetensors");
  std::ofstream(dir.path / "vocab.json") << "{}";
  std::ofstream(dir.path / "vocab.txt") << "a\n";
  CHECK(loadError(d, std::nullopt) == d + ": both vocab.json and vocab.txt; expected at most one vocabulary file");
  fs::remove(dir.path / "vocab.txt");
  std::ofstream(dir.path / "model.safetensors.index.json") << "{}";
  CHECK(loadError(d, std::nullopt) == d + ": sharded checkpoints (model.safetensors.index.json) are not supported; "
                                          "merge the shards into one safetensors file");
  fs::remove(dir.path / "model.safetensors.index.json");
  std::ofstream(dir.path / "config.json") << "{\"n_token\": 97,";
  CHECK(loadError(d, std::nullopt) ==
        d + "/config.json: line 1 column 16: syntax error while parsing object key - unexpected end of input; "
            "expected string literal");
}

TEST_CASE("random weights that cannot fit in RAM are refused before allocating", "[loader][errors]") {
  ScratchDir dir("ram");
  const fs::path spec = dir.path / "spec.json";
  // About 50 GiB of f32 parameters: under the spec limit, over this machine's RAM (if it has less).
  std::ofstream(spec) << R"({"n_token": 1000, "n_layer": 200, "n_head": 32, "d_model": 2048, "d_head": 128,
                             "d_inner": 6000, "tgt_len": 4, "mem_len": 4})";
  const double ram = static_cast<double>(::sysconf(_SC_PHYS_PAGES)) * static_cast<double>(::sysconf(_SC_PAGE_SIZE));
  LoadOptions random;
  random.randomWeights = true;
  if (ram < 50.0 * (1 << 30)) {
    CHECK_THAT(loadError(spec.string(), std::nullopt, random),
               Catch::Matchers::StartsWith(spec.string() + ": random weights need 49.6 GiB (13309113192 f32 "
                                                           "parameters); this machine has "));
  }
}
