// tests/tools/artifact_test.cpp - the artifact format: round trip, and every way a file can be wrong.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "frontend/model_loader.h"
#include "ir/check.h"
#include "tools/artifact.h"
#include "tools/content_hash.h"

using namespace txl;
using namespace txl::tools;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {

Artifact tinyArtifact() {
  frontend::LoadedModel m = frontend::loadModel(std::string(TXL_MODELS_DIR) + "/kjv-char", std::nullopt);
  Artifact a;
  a.txlcVersion = kTxlcVersion;
  a.spec = m.spec;
  a.weights = m.weights;
  a.modelId = modelId(a.spec, a.weights);
  a.setting = {1, 64, 64, -1, false, "hidden"};
  a.passes = {"dce"};
  a.vocabulary = nlohmann::json{{"type", "char"}, {"symbols", {"a"}}};
  a.cpuIsa = "test";
  StoredGraph g{64, 64, false, true, false, "score", nlohmann::json{{"format", "txlc-graph/1"}}, 0};
  g.hash = contentHash(g.graph.dump().data(), g.graph.dump().size());
  a.graphs.push_back(g);
  return a;
}

std::shared_ptr<const void> own(const std::vector<std::byte>& b) {
  return std::make_shared<std::vector<std::byte>>(b);
}
Artifact parse(const std::vector<std::byte>& b) {
  auto owner = std::make_shared<std::vector<std::byte>>(b);
  return parseArtifact(owner, owner->data(), owner->size(), "a.txla");
}

void rehash(std::vector<std::byte>& b) {
  std::uint64_t h = contentHash(b.data(), b.size() - 8);
  for (int i = 0; i < 8; ++i) b[b.size() - 8 + i] = std::byte((h >> (8 * i)) & 0xff);
}

}  // namespace

TEST_CASE("content hash: streaming in any split gives the one-shot digest", "[artifact]") {
  std::vector<unsigned char> data(1000);
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<unsigned char>(i * 7 + 3);
  const std::uint64_t whole = contentHash(data.data(), data.size());
  for (std::size_t split : {0, 1, 31, 32, 33, 500, 999}) {
    ContentHash h;
    h.update(data.data(), split);
    h.update(data.data() + split, data.size() - split);
    CHECK(h.digest() == whole);
  }
  data[500] ^= 1;
  CHECK(contentHash(data.data(), data.size()) != whole);
  CHECK(contentHash("", 0) != contentHash("\0", 1));
}

TEST_CASE("artifact round trip keeps spec, setting, graphs, vocabulary and weights", "[artifact]") {
  Artifact a = tinyArtifact();
  std::vector<std::byte> bytes = serializeArtifact(a);
  Artifact b = parse(bytes);
  CHECK(b.modelId == a.modelId);
  CHECK(b.spec.toJson() == a.spec.toJson());
  CHECK(b.setting.qlen == 64);
  CHECK(b.setting.memLen == 64);
  CHECK(b.passes == a.passes);
  CHECK(*b.vocabulary == *a.vocabulary);
  REQUIRE(b.graphs.size() == 1);
  CHECK(b.graphs[0].graph == a.graphs[0].graph);
  REQUIRE(b.weights.size() == a.weights.size());
  for (const auto& [name, t] : a.weights) {
    const ir::Tensor& u = b.weights.at(name);
    REQUIRE(u.type() == t.type());
    CHECK(std::memcmp(u.raw(), t.raw(), t.bytes()) == 0);
  }
  // Tied weights stay one buffer.
  CHECK(b.weights.at("crit.out_layers.0.weight").raw() == b.weights.at("word_emb.emb_layers.0.weight").raw());
}

TEST_CASE("artifact: truncated, corrupt, wrong version, not an artifact", "[artifact]") {
  std::vector<std::byte> bytes = serializeArtifact(tinyArtifact());
  SECTION("truncated") {
    auto cut = bytes;
    cut.resize(cut.size() - 100);
    REQUIRE_THROWS_WITH(parse(cut), Contains("a.txla: truncated: the header says"));
    cut.resize(20);
    REQUIRE_THROWS_WITH(parse(cut), "a.txla: truncated: 20 bytes, the header alone is 64");
  }
  SECTION("a flipped byte in the weights") {
    auto bad = bytes;
    bad[bad.size() - 1000] ^= std::byte{1};
    REQUIRE_THROWS_WITH(parse(bad), Contains("a.txla: corrupt: checksum"));
  }
  SECTION("another format version") {
    auto bad = bytes;
    bad[8] = std::byte{kArtifactVersion + 1};
    REQUIRE_THROWS_WITH(parse(bad), "a.txla: artifact format version " + std::to_string(kArtifactVersion + 1) +
                                        ", this txlc reads version " + std::to_string(kArtifactVersion) +
                                        "; recompile it with this txlc");
  }
  SECTION("not an artifact") {
    auto bad = bytes;
    bad[0] = std::byte{'X'};
    REQUIRE_THROWS_WITH(parse(bad), Contains("not a txlc artifact"));
  }
  SECTION("trailing bytes") {
    auto bad = bytes;
    bad.push_back(std::byte{0});
    REQUIRE_THROWS_WITH(parse(bad), Contains("1 bytes after the artifact's end"));
  }
  SECTION("weights that do not match the model id (checksum fixed up)") {
    auto bad = bytes;
    bad[bad.size() - 1000] ^= std::byte{1};
    rehash(bad);
    REQUIRE_THROWS_WITH(parse(bad), Contains("manifest /model_id: does not match"));
  }
}

TEST_CASE("artifact files are written atomically and read back from disk", "[artifact]") {
  fs::path dir = fs::temp_directory_path() / ("txl_artifact_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string path = (dir / "a.txla").string();
  writeArtifact(path, tinyArtifact());
  CHECK(looksLikeArtifact(path));
  LoadedArtifact l = readArtifact(path);
  CHECK(l.artifact.modelId == tinyArtifact().modelId);
  CHECK(l.loadSeconds < 1.0);
  for (const auto& [name, t] : l.artifact.weights) CHECK(reinterpret_cast<std::uintptr_t>(t.raw()) % 64 == 0);
  for (const auto& e : fs::directory_iterator(dir)) CHECK(e.path().filename() == "a.txla");  // no temporary left
  REQUIRE_THROWS_WITH(writeArtifact((dir / "missing" / "a.txla").string(), tinyArtifact()), Contains("cannot create"));
  REQUIRE_THROWS_WITH(readArtifact((dir / "none.txla").string()), Contains("cannot open"));
  fs::remove_all(dir);
}
