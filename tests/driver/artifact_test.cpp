// tests/driver/artifact_test.cpp - the artifact format: round trip, and every way a file can be wrong.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>

#include "frontend/model_loader.h"
#include "ir/check.h"
#include "driver/artifact.h"
#include "driver/compile.h"
#include "driver/content_hash.h"

using namespace txl;
using namespace txl::driver;
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
  a.setting.batch = 1, a.setting.qlen = 64, a.setting.memLen = 64, a.setting.clampLen = -1;
  a.setting.sameLength = false;
  a.setting.pipeline.passes = std::vector<std::string>{"dce"};  // the memory form: hidden
  resolvePipeline(a.setting);
  a.vocabulary = nlohmann::json{{"type", "char"}, {"symbols", {"a"}}};
  a.cpuIsa = "test";
  ir::Segment score = segmentOf(a.setting, 64, 64);
  score.logprob = false;
  StoredGraph g{score, "score", nlohmann::json{{"format", "txlc-graph/1"}}, 0};
  g.hash = contentHash(g.graph.dump().data(), g.graph.dump().size());
  a.graphs.push_back(g);
  return a;
}

Artifact parse(const std::vector<std::byte>& b) {
  auto owner = std::make_shared<std::vector<std::byte>>(b);
  return parseArtifact(owner, owner->data(), owner->size(), "a.txla");
}

void put64(std::byte* p, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = std::byte((v >> (8 * i)) & 0xff);
}
std::uint64_t get64(const std::byte* p) {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | std::to_integer<std::uint64_t>(p[i]);
  return v;
}

void rehash(std::vector<std::byte>& b) { put64(b.data() + b.size() - 8, contentHash(b.data(), b.size() - 8)); }

// A crafted artifact: the manifest of `b` changed by `edit`, the data section
// moved after it and the header and checksum fixed up, so that parsing
// reaches the manifest checks.
std::vector<std::byte> withManifest(const std::vector<std::byte>& b, const std::function<void(nlohmann::json&)>& edit) {
  const std::uint64_t mOff = get64(b.data() + 16), mLen = get64(b.data() + 24), dOff = get64(b.data() + 32),
                      dLen = get64(b.data() + 40);
  nlohmann::json m = nlohmann::json::parse(reinterpret_cast<const char*>(b.data() + mOff),
                                           reinterpret_cast<const char*>(b.data() + mOff + mLen));
  edit(m);
  const std::string text = m.dump();
  const std::uint64_t newDOff = (mOff + text.size() + 63) / 64 * 64;
  std::vector<std::byte> out(newDOff + dLen + 8, std::byte{0});
  std::memcpy(out.data(), b.data(), mOff);
  std::memcpy(out.data() + mOff, text.data(), text.size());
  std::memcpy(out.data() + newDOff, b.data() + dOff, dLen);
  put64(out.data() + 24, text.size());
  put64(out.data() + 32, newDOff);
  put64(out.data() + 48, out.size());
  rehash(out);
  return out;
}

// The manifest's entry for weight `name`.
nlohmann::json& weightEntry(nlohmann::json& m, const std::string& name) {
  nlohmann::json& weights = m["weights"];
  auto it = std::find_if(weights.begin(), weights.end(), [&](const nlohmann::json& w) { return w["name"] == name; });
  REQUIRE(it != weights.end());
  return *it;
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
  CHECK(b.setting.pipeline.passes == a.setting.pipeline.passes);
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

TEST_CASE("artifact: a weight's size product is checked for overflow before the data section", "[artifact]") {
  // 16 MiB of padding: a data section of at least 2^24 bytes, where the old
  // check (element count <= data bytes after each dimension of at most 2^40)
  // let the count wrap around 2^64.
  Artifact a = tinyArtifact();
  a.weights["pad"] = ir::Tensor::zeros({ir::DType::F32, {std::int64_t(1) << 22}});
  const std::vector<std::byte> bytes = serializeArtifact(a);
  const std::uint64_t dLen = get64(bytes.data() + 40);
  REQUIRE(dLen >= (std::uint64_t(1) << 24));
  const std::string section = "-byte data section";
  auto padShape = [&](nlohmann::json shape, std::int64_t stored) {
    return withManifest(bytes, [&](nlohmann::json& m) {
      nlohmann::json& w = weightEntry(m, "pad");
      w["shape"] = shape;
      w["bytes"] = stored;
    });
  };
  SECTION("2^24 x 2^40 elements: the count wraps to 0, which matched \"bytes\": 0") {
    auto bad = padShape({std::int64_t(1) << 24, std::int64_t(1) << 40}, 0);
    const std::string ptr = "/weights/" + std::to_string(std::distance(a.weights.begin(), a.weights.find("pad")));
    REQUIRE_THROWS_WITH(parse(bad), "a.txla: manifest " + ptr + "/shape: [16777216,1099511627776] of f32 needs 2^64 " +
                                        "bytes or more, expected at most the " + std::to_string(dLen) + section);
  }
  SECTION("2^62 elements of f32: the count fits, the bytes overflow") {
    auto bad = padShape({std::int64_t(1) << 22, std::int64_t(1) << 40}, 0);
    REQUIRE_THROWS_WITH(parse(bad), Contains("/shape: [4194304,1099511627776] of f32 needs 2^64 bytes or more"));
  }
  SECTION("three dimensions of 2^40") {
    const std::int64_t d = std::int64_t(1) << 40;
    REQUIRE_THROWS_WITH(parse(padShape({d, d, d}, 0)), Contains("of f32 needs 2^64 bytes or more"));
  }
  SECTION("a product that fits 64 bits but not the data section") {
    REQUIRE_THROWS_WITH(parse(padShape({1 << 20, 1 << 20}, 0)),
                        Contains("/shape: [1048576,1048576] of f32 needs 4398046511104 bytes, expected at most the " +
                                 std::to_string(dLen) + section));
  }
  SECTION("a zero dimension needs no bytes, whatever the others") {
    auto ok = padShape({0, std::int64_t(1) << 40}, 0);
    // Refused later, for not being a tensor of the spec, not for its size.
    REQUIRE_THROWS_WITH(parse(ok), Contains("is not a tensor of the stored spec"));
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
