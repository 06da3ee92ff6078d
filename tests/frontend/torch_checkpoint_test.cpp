// tests/frontend/torch_checkpoint_test.cpp - PyTorch checkpoints: the fixtures convert exactly, hostile files are
// refused with one line, and hand-made archives probe every bound.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <functional>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>

#include "frontend/model_spec.h"
#include "frontend/safetensors.h"
#include "frontend/torch_checkpoint.h"
#include "ir/check.h"
#include "tests/frontend/pickle_bytes.h"

using namespace txl::frontend;
using txl::test::PickleBytes;
using txl::test::zipArchive;
using txl::test::ZipMember;

namespace {

const std::filesystem::path kDir = std::filesystem::path(TXL_TEST_DATA_DIR) / "data" / "checkpoints";

std::string fixture(const std::string& rel) { return (kDir / rel).string(); }

std::vector<std::byte> fileBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> chars((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::byte> out(chars.size());
  if (!chars.empty()) std::memcpy(out.data(), chars.data(), chars.size());
  return out;
}

std::vector<std::string> lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

bool sameBits(const txl::ir::Tensor& a, const txl::ir::Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && std::memcmp(a.raw(), b.raw(), a.bytes()) == 0;
}

// The untied tensors of `ck` (minus `leaveOut`) are exactly those of the safetensors file, bit for bit.
void requireSameAs(const TorchCheckpoint& ck, const std::string& expectedPath,
                   const std::set<std::string>& leaveOut = {}) {
  SafetensorsFile expected = SafetensorsFile::open(expectedPath);
  std::set<std::string> names;
  for (const CheckpointTensor& t : ck.tensors) {
    if (!t.tiedTo.empty() || leaveOut.contains(t.name)) continue;
    INFO("tensor " << t.name);
    names.insert(t.name);
    REQUIRE(expected.contains(t.name));
    CHECK(t.tensor.dtype() == txl::ir::DType::F32);
    CHECK(sameBits(t.tensor, expected.toF32(t.name, {NonFinitePolicy::Allow, nullptr})));
  }
  const auto want = expected.names();
  CHECK(names == std::set<std::string>(want.begin(), want.end()));
}

std::string errorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const txl::Error& e) {
    return e.what();
  }
  return "(no error)";
}

std::string errorOfImage(const std::vector<std::byte>& bytes, const std::string& name = "t.bin") {
  return errorOf([&] { readTorchCheckpoint(bytes, name); });
}

// A torch zip archive "t/": data.pkl plus the storages given.
std::vector<std::byte> archive(const PickleBytes& pkl,
                               std::vector<std::pair<std::string, std::vector<std::byte>>> storages) {
  std::vector<ZipMember> members{{"t/data.pkl", pkl.bytes}};
  for (auto& [key, data] : storages) members.push_back({"t/data/" + key, data});
  members.push_back({"t/version", txl::test::bytesOf("3\n")});
  return zipArchive(members);
}

// A state dict of one tensor.
PickleBytes oneTensor(const std::string& name, const std::string& cls, std::int64_t numel, std::int64_t offset,
                      std::vector<std::int64_t> size, std::vector<std::int64_t> stride) {
  PickleBytes p;
  p.proto(2).orderedDict().mark().str(name).tensor(cls, "0", numel, offset, size, stride).setItems().stop();
  return p;
}

}  // namespace

TEST_CASE("torch checkpoint: hf_tiny (zip) converts to the HF case's weights, the tie found", "[checkpoint]") {
  TorchCheckpoint ck = readTorchCheckpoint(fixture("hf_tiny/pytorch_model.bin"));
  CHECK(ck.format == "zip");
  CHECK(ck.moduleClass.empty());
  REQUIRE(ck.tensors.size() == 30);
  CHECK(ck.tensors.front().name == "transformer.word_emb.emb_layers.0.weight");
  CHECK(ck.tensors[27].name == "transformer.pos_emb.inv_freq");
  CHECK(ck.tensors[28].name == "crit.out_layers.0.weight");
  CHECK(ck.tensors[28].tiedTo == "transformer.word_emb.emb_layers.0.weight");
  CHECK(ck.tensors[28].tensor.raw() == ck.tensors[0].tensor.raw());
  int ties = 0;
  for (const auto& t : ck.tensors) {
    ties += !t.tiedTo.empty();
    CHECK(t.storedDType == "F32");
  }
  CHECK(ties == 1);
  requireSameAs(ck, fixture("expected/hf_tiny.model.safetensors"));
}

TEST_CASE("torch checkpoint: hf_tiny_legacy (pre-1.6 format) converts to the same weights", "[checkpoint]") {
  TorchCheckpoint ck = readTorchCheckpoint(fixture("hf_tiny_legacy/pytorch_model.bin"));
  CHECK(ck.format == "legacy");
  REQUIRE(ck.tensors.size() == 30);
  CHECK(ck.tensors[28].tiedTo == "transformer.word_emb.emb_layers.0.weight");
  requireSameAs(ck, fixture("expected/hf_tiny.model.safetensors"));
  // Same names in the same order as the zip file.
  TorchCheckpoint zip = readTorchCheckpoint(fixture("hf_tiny/pytorch_model.bin"));
  for (std::size_t k = 0; k < ck.tensors.size(); ++k) CHECK(ck.tensors[k].name == zip.tensors[k].name);
}

TEST_CASE("torch checkpoint: F16 and BF16 state dicts widen exactly to their expected F32", "[checkpoint]") {
  for (const char* dir : {"hf_tiny_fp16", "hf_tiny_bf16"}) {
    INFO(dir);
    TorchCheckpoint ck = readTorchCheckpoint(fixture(std::string(dir) + "/pytorch_model.bin"));
    REQUIRE(ck.tensors.size() == 30);
    for (const auto& t : ck.tensors) CHECK(t.storedDType == (std::string(dir) == "hf_tiny_fp16" ? "F16" : "BF16"));
    CHECK(ck.tensors[28].tiedTo == "transformer.word_emb.emb_layers.0.weight");
    requireSameAs(ck, fixture(std::string(dir) + "/expected.safetensors"));
  }
}

TEST_CASE("torch checkpoint: the authors' model.pt and state_dict.pt give tiny_base's weights", "[checkpoint]") {
  TorchCheckpoint model = readTorchCheckpoint(fixture("authors_model/model.pt"));
  TorchCheckpoint state = readTorchCheckpoint(fixture("authors_model/state_dict.pt"));
  CHECK(model.moduleClass == "mem_transformer.MemTransformerLM");
  CHECK(state.moduleClass.empty());
  REQUIRE(model.tensors.size() == 28);
  REQUIRE(state.tensors.size() == 28);
  // The walk over _parameters / _buffers / _modules gives state_dict()'s names and order.
  for (std::size_t k = 0; k < model.tensors.size(); ++k) {
    CHECK(model.tensors[k].name == state.tensors[k].name);
    CHECK(model.tensors[k].tiedTo == state.tensors[k].tiedTo);
    CHECK(sameBits(model.tensors[k].tensor, state.tensors[k].tensor));
  }
  for (const TorchCheckpoint* ck : {&model, &state}) {
    int ties = 0;
    for (const auto& t : ck->tensors) {
      if (t.name == "crit.out_layers.0.weight") CHECK(t.tiedTo == "word_emb.emb_layers.0.weight");
      ties += !t.tiedTo.empty();
    }
    CHECK(ties == 1);
    CHECK(ck->tensors.back().name == "pos_emb.inv_freq");
    requireSameAs(*ck, fixture("expected/tiny_base.weights.safetensors"), {"pos_emb.inv_freq"});
  }
  // pos_emb.inv_freq is the sinusoid's 1 / 10000^(2i/d).
  const float* inv = model.tensors.back().tensor.data<float>();
  CHECK(inv[0] == 1.0f);
  CHECK(inv[1] == Approx(1.0 / std::pow(10000.0, 2.0 / 16)).epsilon(1e-6));
  // Module attributes.
  CHECK(model.moduleAttributes.at("").at("n_token") == 97);
  CHECK(model.moduleAttributes.at("layers.0.pos_ff.layer_norm").at("normalized_shape") == nlohmann::json::array({16}));
  CHECK(model.moduleClasses.at("crit") == "proj_adaptive_softmax.ProjectedAdaptiveLogSoftmax");
}

TEST_CASE("torch checkpoint: the authors' spec read from model.pt agrees with tiny_base's config", "[checkpoint]") {
  TorchCheckpoint model = readTorchCheckpoint(fixture("authors_model/model.pt"));
  nlohmann::json spec = authorsModelSpec(model);
  std::ifstream in(fixture("expected/tiny_base.config.json"));
  nlohmann::json config = nlohmann::json::parse(in);
  for (auto it = config.begin(); it != config.end(); ++it) {
    INFO("key " << it.key());
    REQUIRE(spec.contains(it.key()));
    CHECK(spec[it.key()] == it.value());
  }
  CHECK(spec["layer_norm_epsilon"] == 1e-5);
  // The reference dialect reads it.
  ModelSpec parsed = parseModelSpec(spec, "model.pt");
  CHECK(parsed.n_token == 97);
  CHECK(parsed.tie_weight);
  // A state dict has no hyperparameters.
  TorchCheckpoint state = readTorchCheckpoint(fixture("authors_model/state_dict.pt"));
  CHECK_THAT(errorOf([&] { authorsModelSpec(state); }),
             Catch::Contains("a state dict, not a whole pickled MemTransformerLM"));
  // A module without the attributes: the missing one is named.
  TorchCheckpoint broken = model;
  broken.moduleAttributes.at("").erase("mem_len");
  CHECK_THAT(errorOf([&] { authorsModelSpec(broken); }),
             Catch::Contains("the root module (mem_transformer.MemTransformerLM): missing attribute \"mem_len\""));
  broken = model;
  broken.moduleAttributes.erase("layers.0.pos_ff");
  CHECK_THAT(errorOf([&] { authorsModelSpec(broken); }),
             Catch::Contains("no module \"layers.0.pos_ff\" to read attribute \"d_inner\" from"));
}

TEST_CASE("torch checkpoint: both vocab.pkl forms give vocab.txt's symbols", "[checkpoint]") {
  for (const char* dir : {"hf_tiny", "hf_tiny_legacy"}) {
    INFO(dir);
    std::vector<std::string> symbols = readVocabularyPickle(fixture(std::string(dir) + "/vocab.pkl"));
    CHECK(symbols == lines(fixture(std::string(dir) + "/vocab.txt")));
    CHECK(symbols.size() == 96);
  }
}

TEST_CASE("torch checkpoint: a tokenizer's unneeded members are skipped, other globals refused", "[checkpoint]") {
  // What a live HF tokenizer's __dict__ carries besides the vocabulary.
  PickleBytes p;
  p.proto(4).emptyDict().mark();
  p.shortStr("moses_tokenizer").shortStr("sacremoses.tokenize").shortStr("MosesTokenizer").op(0x93).tuple(0).op(0x81);
  p.emptyDict().mark().shortStr("lang").shortStr("en").setItems().op('b');
  p.shortStr("pattern").shortStr("re").shortStr("_compile").op(0x93).shortStr("[^\\s]").integer(32).tuple(2).reduce();
  p.shortStr("eos").shortStr("tokenizers").shortStr("AddedToken").op(0x93).tuple(0).op(0x81).emptyDict().op('b');
  p.shortStr("trie").shortStr("transformers.tokenization_utils").shortStr("Trie").op(0x93).tuple(0).op(0x81);
  p.emptyDict().op('b');
  p.shortStr("idx2sym").op(']').mark().shortStr("<eos>").shortStr("the").op('e');
  p.shortStr("sym2idx").shortStr("collections").shortStr("OrderedDict").op(0x93).tuple(0).reduce();
  p.mark().shortStr("<eos>").integer(0).shortStr("the").integer(1).setItems();
  p.setItems().stop();
  CHECK(readVocabularyPickle(p.bytes, "vocab.pkl") == std::vector<std::string>{"<eos>", "the"});

  PickleBytes evil;
  evil.proto(4).emptyDict().mark().shortStr("x").shortStr("os").shortStr("system").op(0x93);
  evil.shortStr("touch /tmp/PWNED_vocab").tuple(1).reduce().setItems().stop();
  CHECK_THAT(errorOf([&] { readVocabularyPickle(evil.bytes, "vocab.pkl"); }),
             Catch::Contains("vocab.pkl: offset 19: global os.system is not allowed"));
  // A skipped name in a checkpoint is not allowed: the skip list is the vocabulary's only.
  PickleBytes ck;
  ck.proto(2).global("sacremoses.tokenize", "MosesTokenizer").stop();
  CHECK_THAT(errorOfImage(archive(ck, {})),
             Catch::Contains("global sacremoses.tokenize.MosesTokenizer is not allowed"));

  PickleBytes mismatch;
  mismatch.proto(2).emptyDict().mark().str("idx2sym").op(']').mark().str("a").str("b").op('e');
  mismatch.str("sym2idx").emptyDict().mark().str("a").integer(1).str("b").integer(0).setItems().setItems().stop();
  CHECK_THAT(errorOf([&] { readVocabularyPickle(mismatch.bytes, "vocab.pkl"); }),
             Catch::Contains("sym2idx: \"a\" -> 1 disagrees with idx2sym"));
  PickleBytes space;
  space.proto(2).emptyDict().mark().str("idx2sym").op(']').mark().str("a b").op('e').setItems().stop();
  CHECK_THAT(errorOf([&] { readVocabularyPickle(space.bytes, "vocab.pkl"); }),
             Catch::Contains("idx2sym[0]: \"a b\" holds whitespace"));
  PickleBytes twice;
  twice.proto(2).emptyDict().mark().str("idx2sym").op(']').mark().str("a").str("a").op('e').setItems().stop();
  CHECK_THAT(errorOf([&] { readVocabularyPickle(twice.bytes, "vocab.pkl"); }),
             Catch::Contains("idx2sym[1]: \"a\" repeats idx2sym[0]"));
}

TEST_CASE("torch checkpoint: every hostile fixture is refused with one line, and runs nothing", "[checkpoint]") {
  struct Row {
    const char* file;
    std::vector<std::string> says;
  };
  const Row rows[] = {
      {"reduce_os_system.bin",
       {"reduce_os_system.bin: reduce_os_system/data.pkl: offset 199: global os.system is not allowed (a checkpoint "
        "may only name"}},
      {"truncated_storage.bin",
       {"tensor \"transformer.word_emb.emb_layers.0.weight\": storage \"0\"", "has 6144 bytes",
        "3072 F32 elements need 12288"}},
      {"offset_past_end.bin",
       {"offset_past_end.bin: tensor \"transformer.layers.0.dec_attn.o_net.weight\": storage offset 4096 is past "
        "storage \"0\"'s 1024 elements"}},
      {"dtype_int64.bin",
       {"tensor \"transformer.layers.0.pos_ff.CoreNet.0.weight\": storage \"8\" is int64 (torch.LongStorage); a "
        "weight must be a float type"}},
  };
  for (const Row& row : rows) {
    const std::string stem = std::filesystem::path(row.file).stem().string();
    const std::string pwned = "/tmp/PWNED_" + stem;
    std::filesystem::remove(pwned);
    const std::string path = fixture(std::string("hostile/") + row.file);
    const std::string message = errorOf([&] { readTorchCheckpoint(path); });
    INFO(message);
    CHECK(message.rfind(path + ": ", 0) == 0);
    CHECK(message.find('\n') == std::string::npos);
    for (const std::string& part : row.says) CHECK_THAT(message, Catch::Contains(part));
    CHECK_FALSE(std::filesystem::exists(pwned));
  }
}

TEST_CASE("torch checkpoint: zip archives that torch.save would never write are refused", "[checkpoint]") {
  PickleBytes pkl = oneTensor("w", "FloatStorage", 4, 0, {4}, {1});
  const auto data = txl::test::floatBytes({1, 2, 3, 4});
  // Well-formed: reads.
  TorchCheckpoint ok = readTorchCheckpoint(archive(pkl, {{"0", data}}), "t.bin");
  REQUIRE(ok.tensors.size() == 1);
  CHECK(ok.tensors[0].tensor.data<float>()[3] == 4.0f);

  std::vector<ZipMember> compressed{{"t/data.pkl", pkl.bytes}, {"t/data/0", data, 8}};
  CHECK_THAT(errorOfImage(zipArchive(compressed)),
             Catch::Contains("t.bin: zip entry \"t/data/0\": compressed (method 8); torch.save stores entries"));
  std::vector<ZipMember> pastEnd{{"t/data.pkl", pkl.bytes}, {"t/data/0", data, 0, 1 << 20}};
  CHECK_THAT(errorOfImage(zipArchive(pastEnd)), Catch::Contains("zip entry \"t/data/0\": data [") &&
                                                    Catch::Contains("runs past the start of the central directory"));
  std::vector<ZipMember> noPickle{{"t/data/0", data}};
  CHECK_THAT(errorOfImage(zipArchive(noPickle)), Catch::Contains("no zip entry <folder>/data.pkl"));
  std::vector<ZipMember> twoTops{{"a/data.pkl", pkl.bytes}, {"b/data.pkl", pkl.bytes}};
  CHECK_THAT(errorOfImage(zipArchive(twoTops)), Catch::Contains("two top folders hold data.pkl"));
  std::vector<ZipMember> twice{{"t/data.pkl", pkl.bytes}, {"t/data.pkl", pkl.bytes}};
  CHECK_THAT(errorOfImage(zipArchive(twice)), Catch::Contains("zip entry \"t/data.pkl\": appears twice"));
  // A corrupted byte in a storage: the CRC says so.
  auto flipped = archive(pkl, {{"0", data}});
  const std::size_t at = 30 + std::string("t/data.pkl").size() + pkl.bytes.size() + 30 + std::string("t/data/0").size();
  flipped[at] ^= std::byte{1};
  CHECK_THAT(errorOfImage(flipped), Catch::Contains("zip entry \"t/data/0\": CRC-32"));
  // The top folder is whatever holds data.pkl.
  std::vector<ZipMember> renamed{{"anything_at_all/data.pkl", pkl.bytes}, {"anything_at_all/data/0", data}};
  CHECK(readTorchCheckpoint(zipArchive(renamed), "t.bin").tensors.size() == 1);
  CHECK_THAT(errorOfImage(txl::test::bytesOf("PK\x03\x04 not really a zip archive, only its first bytes")),
             Catch::Contains("no zip end-of-central-directory"));
  CHECK_THAT(errorOfImage(txl::test::bytesOf("hello")), Catch::Contains("neither a torch zip archive"));
}

TEST_CASE("torch checkpoint: views honour offsets and strides; bad views are refused", "[checkpoint]") {
  const auto data = txl::test::floatBytes({0, 1, 2, 3, 4, 5, 6, 7});
  // A transposed [2,3] view at offset 2 of an 8-element storage: element (i, j) is storage[2 + i + 2j].
  TorchCheckpoint t =
      readTorchCheckpoint(archive(oneTensor("w", "FloatStorage", 8, 2, {2, 3}, {1, 2}), {{"0", data}}), "t.bin");
  REQUIRE(t.tensors[0].tensor.shape() == txl::ir::Shape{2, 3});
  const float* v = t.tensors[0].tensor.data<float>();
  CHECK(std::vector<float>(v, v + 6) == std::vector<float>{2, 4, 6, 3, 5, 7});
  // A permuted rank-3 view, F16: element (a, b, c) is storage[a + 4b + 12c].
  std::vector<std::byte> halves(48);
  for (int i = 0; i < 24; ++i) {
    const float f = static_cast<float>(i);  // small integers are exact in F16: sign 0, exponent, mantissa
    std::uint32_t bits;
    std::memcpy(&bits, &f, 4);
    const std::uint16_t h =
        i == 0 ? 0 : static_cast<std::uint16_t>((((bits >> 23) & 0xff) - 127 + 15) << 10 | ((bits >> 13) & 0x3ff));
    halves[2 * i] = static_cast<std::byte>(h & 0xff);
    halves[2 * i + 1] = static_cast<std::byte>(h >> 8);
  }
  TorchCheckpoint r3 = readTorchCheckpoint(
      archive(oneTensor("w", "HalfStorage", 24, 0, {4, 3, 2}, {1, 4, 12}), {{"0", halves}}), "t.bin");
  const float* p3 = r3.tensors[0].tensor.data<float>();
  for (int a = 0; a < 4; ++a)
    for (int b = 0; b < 3; ++b)
      for (int c = 0; c < 2; ++c) CHECK(p3[a * 6 + b * 2 + c] == static_cast<float>(a + 4 * b + 12 * c));
  // Stride 0 (an expanded view) repeats.
  TorchCheckpoint e =
      readTorchCheckpoint(archive(oneTensor("w", "FloatStorage", 8, 5, {3}, {0}), {{"0", data}}), "t.bin");
  CHECK(std::vector<float>(e.tensors[0].tensor.data<float>(), e.tensors[0].tensor.data<float>() + 3) ==
        std::vector<float>{5, 5, 5});
  // Zero elements: no storage access, even past the end.
  TorchCheckpoint z =
      readTorchCheckpoint(archive(oneTensor("w", "FloatStorage", 8, 100, {0, 4}, {4, 1}), {{"0", data}}), "t.bin");
  CHECK(z.tensors[0].tensor.numel() == 0);
  // F64 storage narrowed.
  std::vector<std::byte> doubles(16);
  const double d[2] = {0.5, -3.25};
  std::memcpy(doubles.data(), d, 16);
  TorchCheckpoint f64 =
      readTorchCheckpoint(archive(oneTensor("w", "DoubleStorage", 2, 0, {2}, {1}), {{"0", doubles}}), "t.bin");
  CHECK(f64.tensors[0].storedDType == "F64");
  CHECK(f64.tensors[0].tensor.data<float>()[1] == -3.25f);

  CHECK_THAT(
      errorOfImage(archive(oneTensor("w", "FloatStorage", 8, 0, {3, 3}, {3, 1}), {{"0", data}})),
      Catch::Contains(
          "t.bin: tensor \"w\": offset 0, size [3,3], stride [3,1] reach element 8 of storage \"0\"'s 8 elements"));
  CHECK_THAT(errorOfImage(archive(oneTensor("w", "FloatStorage", 8, 0, {1LL << 40, 1LL << 40}, {1, 1}), {{"0", data}})),
             Catch::Contains("tensor \"w\": size [1099511627776,1099511627776] has more than 2^62 elements"));
  CHECK_THAT(errorOfImage(
                 archive(oneTensor("w", "FloatStorage", 8, 0, {3, 1LL << 20}, {1LL << 62, 1LL << 62}), {{"0", data}})),
             Catch::Contains("reach element past 2^64 of storage \"0\"'s 8 elements"));
  // Stride 0 over a huge size: within the storage, but bounded before any allocation.
  CHECK_THAT(errorOfImage(archive(oneTensor("w", "FloatStorage", 8, 0, {1LL << 20, 1LL << 20}, {0, 0}), {{"0", data}})),
             Catch::Contains("f32 elements would bring the checkpoint's tensors past"));
  CHECK_THAT(errorOfImage(archive(oneTensor("w", "FloatStorage", 8, 0, {2}, {-1}), {{"0", data}})),
             Catch::Contains("tensor \"w\": negative stride -1 in dimension 0"));
  // A persistent id naming a storage that is not in the archive.
  CHECK_THAT(errorOfImage(archive(oneTensor("w", "FloatStorage", 8, 0, {2}, {1}), {})),
             Catch::Contains("tensor \"w\": storage \"0\": no zip entry \"t/data/0\" in the file"));
  CHECK_THAT(errorOfImage(archive(oneTensor("w", "IntStorage", 8, 0, {2}, {1}), {{"0", data}})),
             Catch::Contains("tensor \"w\": storage \"0\" is int32 (torch.IntStorage); a weight must be a float type"));
  CHECK_THAT(errorOfImage(archive(oneTensor("w", "FloatStorage", -1, 0, {2}, {1}), {{"0", data}})),
             Catch::Contains("storage \"0\": negative element count -1"));
}

TEST_CASE("torch checkpoint: state dicts whose entries are not what a state dict holds", "[checkpoint]") {
  PickleBytes notTensor;
  notTensor.proto(2).orderedDict().mark().str("config").integer(3).setItems().stop();
  CHECK_THAT(errorOfImage(archive(notTensor, {})),
             Catch::Contains("tensor \"config\": expected a tensor (torch._utils._rebuild_tensor_v2), got 3"));
  // The same storage key named with two dtypes.
  const auto data = txl::test::floatBytes({0, 1, 2, 3});
  PickleBytes two;
  two.proto(2).orderedDict().mark().str("a").tensor("FloatStorage", "0", 4, 0, {4}, {1});
  two.str("b").tensor("HalfStorage", "0", 8, 0, {4}, {1}).setItems().stop();
  CHECK_THAT(errorOfImage(archive(two, {{"0", data}})),
             Catch::Contains("storage \"0\" named again as 8 F16 elements; first named as 4 F32"));
  // Two names for one view: a tie; another view of the same storage: not a tie.
  PickleBytes shared;
  shared.proto(2).orderedDict().mark().str("a").tensor("FloatStorage", "0", 4, 0, {2}, {1});
  shared.str("b").tensor("FloatStorage", "0", 4, 0, {2}, {1});
  shared.str("c").tensor("FloatStorage", "0", 4, 2, {2}, {1}).setItems().stop();
  TorchCheckpoint ck = readTorchCheckpoint(archive(shared, {{"0", data}}), "t.bin");
  REQUIRE(ck.tensors.size() == 3);
  CHECK(ck.tensors[1].tiedTo == "a");
  CHECK(ck.tensors[2].tiedTo.empty());
  CHECK(ck.tensors[2].tensor.data<float>()[0] == 2.0f);
  // Deep nesting as data.pkl: refused as not a state dict, cleanly.
  PickleBytes deep;
  deep.proto(2);
  for (int i = 0; i < 100000; ++i) deep.op(']');
  for (int i = 0; i < 99999; ++i) deep.op('a');
  deep.stop();
  CHECK_THAT(errorOfImage(archive(deep, {})),
             Catch::Contains("expected a state dict (an OrderedDict of tensors) or a pickled nn.Module"));
  // A module that contains itself.
  PickleBytes cycle;
  cycle.proto(2).global("mem_transformer", "MemTransformerLM").tuple(0).op(0x81).put(0);
  cycle.emptyDict().mark().str("_modules").orderedDict().mark().str("me").get(0).setItems().setItems().op('b').stop();
  CHECK_THAT(errorOfImage(archive(cycle, {})), Catch::Contains("module \"me\": a module that contains itself"));
  // A module shared along a thousand paths, three levels down: the walk is counted, not run to the end.
  PickleBytes shared3;
  shared3.proto(2);
  for (int level = 0; level < 3; ++level) {
    shared3.global("torch.nn.modules.container", "ModuleList").tuple(0).op(0x81).emptyDict().mark().str("_modules");
    shared3.orderedDict().mark();
    if (level > 0)
      for (int i = 0; i < 1000; ++i) shared3.str(std::to_string(i)).get(level - 1);
    shared3.setItems().setItems().op('b').put(level);
    if (level < 2) shared3.op('0');
  }
  shared3.stop();
  CHECK_THAT(errorOfImage(archive(shared3, {})), Catch::Contains("more than 65536 modules in the walk") ||
                                                     Catch::Contains("the module walk needs more than"));
  // One module whose 1000 parameters are one tensor (the memo), reached along 1000 paths: a million
  // names from a 20 KB pickle, refused by the walk's budget (a multiple of the file size) as it grows.
  PickleBytes fan;
  fan.proto(2);
  fan.global("torch.nn.modules.container", "ModuleList").tuple(0).op(0x81).emptyDict().mark().str("_parameters");
  fan.orderedDict().mark().str("p0").tensor("FloatStorage", "0", 4, 0, {4}, {1}).put(0);
  for (int i = 1; i < 1000; ++i) {
    std::string name = "p";
    name += std::to_string(i);
    fan.str(name).get(0);
  }
  fan.setItems().setItems().op('b').put(1).op('0');
  fan.global("torch.nn.modules.container", "ModuleList").tuple(0).op(0x81).emptyDict().mark().str("_modules");
  fan.orderedDict().mark();
  for (int i = 0; i < 1000; ++i) fan.str(std::to_string(i)).get(1);
  fan.setItems().setItems().op('b').stop();
  const std::vector<std::byte> fanData(16, std::byte{0});
  CHECK_THAT(errorOfImage(archive(fan, {{"0", fanData}})), Catch::Contains("t/data.pkl: module \"") &&
                                                               Catch::Contains("the module walk needs more than") &&
                                                               Catch::Contains("8 a byte of the file"));
  // The same shape as an attribute: too big to keep, so left out (a bounded walk).
  PickleBytes laughs;
  laughs.proto(2).global("torch.nn.modules.container", "ModuleList").tuple(0).op(0x81).emptyDict().mark();
  laughs.op(']').put(0);
  for (int level = 1; level < 4; ++level) {
    laughs.op(']').mark();
    for (int i = 0; i < 1000; ++i) laughs.get(level - 1);
    laughs.op('e').put(level);
  }
  for (int level = 0; level < 4; ++level) laughs.op('0');  // the lists are in the memo only
  laughs.str("small").integer(1).str("huge").get(3).setItems().op('b').stop();
  TorchCheckpoint bomb = readTorchCheckpoint(archive(laughs, {}), "t.bin");
  CHECK(bomb.moduleAttributes.at("").contains("small"));
  CHECK_FALSE(bomb.moduleAttributes.at("").contains("huge"));
}

TEST_CASE("torch checkpoint: every prefix of small fixtures is refused cleanly", "[checkpoint]") {
  for (const char* rel : {"hostile/reduce_os_system.bin", "hostile/offset_past_end.bin", "hf_tiny_legacy/vocab.pkl"}) {
    const std::vector<std::byte> bytes = fileBytes(fixture(rel));
    REQUIRE(bytes.size() > 100);
    for (std::size_t n = 0; n < bytes.size(); ++n) {
      std::span<const std::byte> prefix(bytes.data(), n);
      INFO(rel << " cut to " << n << " bytes");
      CHECK_THROWS_AS(readTorchCheckpoint(prefix, "cut.bin"), txl::Error);
    }
  }
  // The legacy checkpoint: every 37th prefix (it is 95 KB).
  const std::vector<std::byte> legacy = fileBytes(fixture("hf_tiny_legacy/pytorch_model.bin"));
  REQUIRE_NOTHROW(readTorchCheckpoint(legacy, "legacy.bin"));
  for (std::size_t n = 0; n < legacy.size(); n += 37) {
    INFO("legacy cut to " << n << " bytes");
    CHECK_THROWS_AS(readTorchCheckpoint(std::span<const std::byte>(legacy.data(), n), "cut.bin"), txl::Error);
  }
  const std::vector<std::byte> vocab = fileBytes(fixture("hf_tiny/vocab.pkl"));
  for (std::size_t n = 0; n < vocab.size(); ++n) {
    INFO("vocab cut to " << n << " bytes");
    CHECK_THROWS_AS(readVocabularyPickle(std::span<const std::byte>(vocab.data(), n), "cut.pkl"), txl::Error);
  }
}
