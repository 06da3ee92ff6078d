// tests/frontend/checkpoint_model_test.cpp - `txlc import`'s reader and writer:
// every benign fixture becomes exactly its expected model folder.
#include <catch2/catch.hpp>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "frontend/checkpoint_model.h"
#include "frontend/model_loader.h"
#include "frontend/safetensors.h"
#include "ir/check.h"

using namespace txl;
namespace fs = std::filesystem;

namespace {

const std::string kData = std::string(TXL_TEST_DATA_DIR) + "/data/checkpoints";

std::string readFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

struct TempDir {
  fs::path path = fs::temp_directory_path() / ("txl_import_" + std::to_string(::getpid()));
  TempDir() { fs::remove_all(path), fs::create_directories(path); }
  ~TempDir() { fs::remove_all(path); }
};

// `got` holds exactly `want`'s tensors: the same names, shapes and f32 bits.
void requireSameTensors(const frontend::SafetensorsFile& got, const frontend::SafetensorsFile& want,
                        const std::vector<std::string>& extra = {}) {
  std::vector<std::string> names = want.names();
  names.insert(names.end(), extra.begin(), extra.end());
  std::sort(names.begin(), names.end());
  REQUIRE(got.names() == names);
  for (const auto& name : want.names()) {
    INFO(name);
    REQUIRE(got.info(name).dtype == frontend::StDType::F32);
    const ir::Tensor a = got.toF32(name), b = want.toF32(name);
    REQUIRE(a.shape() == b.shape());
    CHECK(std::memcmp(a.raw(), b.raw(), a.bytes()) == 0);
  }
}

}  // namespace

TEST_CASE("import: each benign fixture writes exactly the expected tensors and vocab.txt", "[import]") {
  struct Case {
    std::string source, spec, expected, vocab;
    std::vector<std::string> extra;  // tensors the expected file leaves out
  };
  const std::vector<Case> cases = {
      {"hf_tiny", "", "expected/hf_tiny.model.safetensors", "hf_tiny/vocab.txt", {}},
      {"hf_tiny_legacy", "", "expected/hf_tiny.model.safetensors", "hf_tiny/vocab.txt", {}},
      {"hf_tiny_fp16", "", "hf_tiny_fp16/expected.safetensors", "", {}},
      {"hf_tiny_bf16", "", "hf_tiny_bf16/expected.safetensors", "", {}},
      // The authors' whole-model pickle: the spec is read from its attributes.
      {"authors_model/model.pt", "", "expected/tiny_base.weights.safetensors", "", {"pos_emb.inv_freq"}},
      {"authors_model/state_dict.pt",
       "expected/tiny_base.config.json",
       "expected/tiny_base.weights.safetensors",
       "",
       {"pos_emb.inv_freq"}},
  };
  for (const Case& c : cases) {
    INFO(c.source);
    TempDir tmp;
    const std::string out = (tmp.path / "model").string();
    std::optional<std::string> spec;
    if (!c.spec.empty()) spec = kData + "/" + c.spec;
    frontend::CheckpointModel m = frontend::readCheckpointModel(kData + "/" + c.source, spec);
    frontend::writeImportedModel(m, out);
    requireSameTensors(frontend::SafetensorsFile::open(out + "/model.safetensors"),
                       frontend::SafetensorsFile::open(kData + "/" + c.expected), c.extra);
    if (c.vocab.empty()) {
      CHECK_FALSE(fs::exists(out + "/vocab.txt"));
    } else {
      CHECK(readFile(out + "/vocab.txt") == readFile(kData + "/" + c.vocab));
    }
    // The folder is a model: it loads, with the source's convention.
    frontend::LoadedModel loaded = frontend::loadModel(out, std::nullopt);
    CHECK(loaded.spec.semantics ==
          (c.source.rfind("hf_", 0) == 0 ? frontend::Semantics::HuggingFace : frontend::Semantics::Authors));
    CHECK(loaded.spec.n_token == m.spec.n_token);
    CHECK(std::distance(fs::directory_iterator(tmp.path), fs::directory_iterator()) == 1);  // no temporary left
  }
}

TEST_CASE("import: widening and ties are noted", "[import]") {
  auto m = frontend::readCheckpointModel(kData + "/hf_tiny_fp16", std::nullopt);
  bool widened = false, tied = false;
  for (const auto& n : m.notes) {
    widened |= n.find("F16 tensors widened to F32") != std::string::npos;
    tied |= n.find("\"crit.out_layers.0.weight\" shares its storage") != std::string::npos;
  }
  CHECK(widened);
  CHECK(tied);
}

TEST_CASE("a model folder with pytorch_model.bin loads like its import", "[import]") {
  TempDir tmp;
  fs::create_directory(tmp.path / "hf");
  for (const char* f : {"config.json", "pytorch_model.bin", "vocab.pkl"})
    fs::copy_file(kData + "/hf_tiny/" + f, tmp.path / "hf" / f);
  const frontend::LoadedModel direct = frontend::loadModel((tmp.path / "hf").string(), std::nullopt);
  CHECK(direct.vocabPath == (tmp.path / "hf" / "vocab.pkl").string());
  frontend::writeImportedModel(frontend::readCheckpointModel((tmp.path / "hf").string(), std::nullopt),
                               (tmp.path / "out").string());
  const frontend::LoadedModel imported = frontend::loadModel((tmp.path / "out").string(), std::nullopt);
  REQUIRE(direct.weights.size() == imported.weights.size());
  for (const auto& [name, t] : direct.weights) {
    INFO(name);
    const ir::Tensor& u = imported.weights.at(name);
    REQUIRE(t.shape() == u.shape());
    CHECK(std::memcmp(t.raw(), u.raw(), t.bytes()) == 0);
  }
}

TEST_CASE("import: refusals name the problem and leave the destination alone", "[import]") {
  TempDir tmp;
  const std::string out = (tmp.path / "out").string();
  CHECK_THROWS_WITH(frontend::readCheckpointModel(kData + "/authors_model/state_dict.pt", std::nullopt),
                    Catch::Contains("state_dict.pt: a state dict carries no hyperparameters; pass --spec SPEC"));
  CHECK_THROWS_WITH(frontend::readCheckpointModel((tmp.path / "missing").string(), std::nullopt),
                    Catch::Contains("missing: no such file or directory"));
  CHECK_THROWS_WITH(frontend::readCheckpointModel(tmp.path.string(), std::nullopt),
                    Catch::Contains(": no PyTorch checkpoint (expected pytorch_model.bin"));
  // A vocabulary whose size is not the model's.
  fs::create_directory(tmp.path / "hf");
  for (const char* f : {"config.json", "pytorch_model.bin"})
    fs::copy_file(kData + "/hf_tiny/" + f, tmp.path / "hf" / f);
  std::ofstream(tmp.path / "hf" / "vocab.txt") << "a\nb\n";
  CHECK_THROWS_WITH(frontend::readCheckpointModel((tmp.path / "hf").string(), std::nullopt),
                    Catch::Contains("vocab.txt: 2 symbols, expected the model's n_token (96)"));
  fs::remove(tmp.path / "hf" / "vocab.txt");
  // A destination that holds something is never touched.
  const auto m = frontend::readCheckpointModel((tmp.path / "hf").string(), std::nullopt);
  fs::create_directory(out);
  std::ofstream(out + "/keep") << "x";
  CHECK_THROWS_WITH(frontend::writeImportedModel(m, out), Catch::Contains("out: exists; expected a new folder name"));
  CHECK(readFile(out + "/keep") == "x");
  // An empty destination folder is replaced.
  fs::remove(out + "/keep");
  frontend::writeImportedModel(m, out);
  CHECK(fs::exists(out + "/model.safetensors"));
}
