// tests/frontend/hf_word_tokenizer_test.cpp - transformers' Transfo-XL word tokenization, against recorded outputs.
//
// tests/data/hf_tokenizer/cases.json holds, for tricky lines, the words
// transformers' TransfoXLTokenizer (sacremoses normalizer and tokenizer,
// tokenize_numbers) gives, and the ids of a text encoded with hf_tiny's vocab.pkl.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "frontend/checkpoint_model.h"
#include "frontend/hf_word_tokenizer.h"
#include "frontend/moses_tokenizer.h"
#include "frontend/torch_checkpoint.h"
#include "frontend/unicode_classes.h"
#include "frontend/vocabulary.h"
#include "ir/check.h"
#include "pickle_bytes.h"

using namespace txl::frontend;
using Catch::Matchers::Contains;
using txl::test::PickleBytes;

namespace {

const std::string kData = std::string(TXL_TEST_DATA_DIR) + "/data";

nlohmann::json cases() {
  std::ifstream in(kData + "/hf_tokenizer/cases.json");
  REQUIRE(in);
  return nlohmann::json::parse(in);
}

struct TempDir {
  std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("txl_hf_tokenizer_" + std::to_string(::getpid()));
  TempDir() { std::filesystem::remove_all(path), std::filesystem::create_directories(path); }
  ~TempDir() { std::filesystem::remove_all(path); }
};

std::string join(const std::vector<std::string>& words) {
  std::string s;
  for (const auto& w : words) s += (s.empty() ? "" : " ") + w;
  return s;
}

}  // namespace

TEST_CASE("hf tokenizer: every recorded line gives transformers' words", "[hf_tokenizer]") {
  const nlohmann::json doc = cases();
  REQUIRE(doc.at("cases").size() >= 20);
  for (const auto& c : doc.at("cases")) {
    HfTokenizerOptions o;
    o.lowerCase = c.at("lower_case").get<bool>();
    const auto want = c.at("tokens").get<std::vector<std::string>>();
    INFO(c.at("text").get<std::string>() << "  [" << c.at("exercises").get<std::string>() << "]");
    CHECK(join(hfTokenizeLine(c.at("text").get<std::string>(), o)) == join(want));
  }
}

TEST_CASE("hf tokenizer: vocab.pkl chooses it and its options; ids match transformers'", "[hf_tokenizer]") {
  const nlohmann::json enc = cases().at("encode");
  const std::string path = kData + "/" + enc.at("vocabulary").get<std::string>();
  Vocabulary v = Vocabulary::load(path);
  CHECK(v.tokenizer() == WordTokenizer::Hf);
  CHECK_FALSE(v.hfOptions().lowerCase);
  CHECK_FALSE(v.hfOptions().delimiter.has_value());
  CHECK(v.hfOptions().language == "en");
  CHECK(v.hfOptions().specialTokens == std::vector<std::string>{"<unk>", "<eos>", "<formula>"});
  const std::string text = enc.at("text").get<std::string>();
  const auto ids = v.encode(text, "t.txt");
  CHECK(ids == enc.at("ids").get<std::vector<std::int64_t>>());
  CHECK(v.countUnknown(text) == 6);  // house 000 years - : zzyzx

  // The same symbols split on whitespace: "city," and "house." are unknown words.
  v.setTokenizer(WordTokenizer::Whitespace, "--tokenizer");
  const auto plain = v.encode("The city, and the house.\n", "t.txt");
  CHECK(plain == std::vector<std::int64_t>{15, 10, 5, 1, 10, 0});

  // vocab.txt beside vocab.pkl is a Hugging Face folder's: hf.
  CHECK(Vocabulary::load(kData + "/checkpoints/hf_tiny/vocab.txt").tokenizer() == WordTokenizer::Hf);
}

TEST_CASE("hf tokenizer: a vocab.txt alone is split on whitespace unless asked", "[hf_tokenizer]") {
  TempDir tmp;
  std::filesystem::copy_file(kData + "/checkpoints/hf_tiny/vocab.txt", tmp.path / "vocab.txt");
  Vocabulary txt = Vocabulary::load((tmp.path / "vocab.txt").string());
  CHECK(txt.tokenizer() == WordTokenizer::Whitespace);
  const nlohmann::json enc = cases().at("encode");
  txt.setTokenizer(WordTokenizer::Hf, "--tokenizer");
  CHECK(txt.encode(enc.at("text").get<std::string>(), "t.txt") == enc.at("ids").get<std::vector<std::int64_t>>());
}

TEST_CASE("hf tokenizer: the legacy torch.save'd vocab.pkl records the same options", "[hf_tokenizer]") {
  VocabularyPickle p = readVocabularyPickleWithOptions(kData + "/checkpoints/hf_tiny_legacy/vocab.pkl");
  CHECK(p.symbols.size() == 96);
  CHECK_FALSE(p.tokenizer.lowerCase);
  CHECK(p.tokenizer.specialTokens == std::vector<std::string>{"<unk>", "<eos>", "<formula>"});
}

TEST_CASE("hf tokenizer: lower_case, special and delimiter come from the pickle", "[hf_tokenizer]") {
  PickleBytes p;
  p.proto(4).emptyDict().mark();
  p.shortStr("special").op(']').mark().shortStr("<eos>").shortStr("<S>").op('e');
  p.shortStr("lower_case").op(0x88);
  p.shortStr("delimiter").shortStr("");
  p.shortStr("idx2sym").op(']').mark().shortStr("<eos>").shortStr("<unk>").shortStr("a").op('e');
  p.setItems().stop();
  VocabularyPickle v = readVocabularyPickleWithOptions(p.bytes, "vocab.pkl");
  CHECK(v.tokenizer.lowerCase);
  REQUIRE(v.tokenizer.delimiter.has_value());
  CHECK(v.tokenizer.delimiter->empty());
  CHECK(v.tokenizer.specialTokens == std::vector<std::string>{"<unk>", "<eos>", "<formula>", "<S>"});
  // delimiter "": the characters of the stripped, lower-cased line, spaces included.
  CHECK(hfTokenizeLine(" Ab c<S>d ", v.tokenizer) == std::vector<std::string>{"a", "b", " ", "c", "<S>", "d"});

  PickleBytes bad;
  bad.proto(4).emptyDict().mark().shortStr("lower_case").integer(1);
  bad.shortStr("idx2sym").op(']').mark().shortStr("<eos>").op('e').setItems().stop();
  REQUIRE_THROWS_WITH(readVocabularyPickleWithOptions(bad.bytes, "vocab.pkl"),
                      "vocab.pkl: lower_case: expected a bool, got 1");
}

TEST_CASE("hf tokenizer: the choice survives the vocabulary's JSON form (artifacts)", "[hf_tokenizer]") {
  Vocabulary v = Vocabulary::fromSymbols(VocabKind::Word, {"<eos>", "<unk>", "the", ",", "city"}, "v");
  v.setTokenizer(WordTokenizer::Hf, "--tokenizer");
  HfTokenizerOptions o;
  o.lowerCase = true;
  v.setHfOptions(o);
  const nlohmann::json j = v.toJson();
  CHECK(j.at("tokenizer") == "hf");
  Vocabulary back = Vocabulary::fromJson(j, "manifest");
  CHECK(back.tokenizer() == WordTokenizer::Hf);
  CHECK(back.hfOptions().lowerCase);
  CHECK(back.encode("The City, the", "t") == std::vector<std::int64_t>{2, 4, 3, 2, 0});
  // The whitespace form stays as it was: no tokenizer key.
  CHECK_FALSE(Vocabulary::fromSymbols(VocabKind::Word, {"<eos>"}, "v").toJson().contains("tokenizer"));
  nlohmann::json badKind = j;
  badKind["tokenizer"] = "bpe";
  REQUIRE_THROWS_WITH(Vocabulary::fromJson(badKind, "manifest"),
                      "manifest: /tokenizer: expected whitespace or hf, got \"bpe\"");
}

TEST_CASE("hf tokenizer: refused for characters; invalid UTF-8 and unknown words named", "[hf_tokenizer]") {
  Vocabulary chars = Vocabulary::fromSymbols(VocabKind::Char, {"a", "\n"}, "vocab.json");
  REQUIRE_THROWS_WITH(
      chars.setTokenizer(WordTokenizer::Hf, "--tokenizer"),
      "--tokenizer: hf splits words; vocab.json is a character vocabulary (expected a word vocabulary)");
  Vocabulary v = Vocabulary::fromSymbols(VocabKind::Word, {"<eos>", "the", "."}, "vocab.txt");
  v.setTokenizer(WordTokenizer::Hf, "--tokenizer");
  REQUIRE_THROWS_WITH(v.encode("the.\nthe \xff", "t.txt"),
                      "t.txt: line 2 column 5: expected UTF-8 text, got the invalid byte 0xFF");
  REQUIRE_THROWS_WITH(v.encode("the end.", "t.txt"),
                      "t.txt: line 1: word \"end\" is not in the vocabulary (vocab.txt has no <unk>)");
  CHECK(v.encode("the.", "t.txt") == std::vector<std::int64_t>{1, 2, 0});
}

TEST_CASE("moses rules: normalizer and tokenizer pieces", "[hf_tokenizer]") {
  // MosesPunctNormalizer: EXTRA_WHITESPACE, the number rule for non-breaking spaces, French quotes.
  CHECK(toUtf8(mosesNormalizePunctuation(U"a  (b ) , 5 % x", "en")) == "a (b), 5% x");
  CHECK(toUtf8(mosesNormalizePunctuation(U"12\u00A0123", "en")) == "12.123");
  CHECK(toUtf8(mosesNormalizePunctuation(U"12\u00A0123", "fr")) == "12,123");
  CHECK(toUtf8(mosesNormalizePunctuation(U"\u00ABoui\u00BB", "fr")) == "\"oui\"");
  // MosesTokenizer: French apostrophes, protected strings kept whole whatever their case.
  auto words = [](std::u32string_view t, const std::string& lang, std::vector<std::u32string> protect = {}) {
    std::string s;
    for (const auto& w : mosesTokenize(t, lang, protect)) {
      if (!s.empty()) s += ' ';
      s += toUtf8(w);
    }
    return s;
  };
  CHECK(words(U"l'homme", "fr") == "l' homme");
  CHECK(words(U"a <EOS>b.", "en", {U"<eos>"}) == "a <EOS>b .");
  CHECK(words(U"x...y", "en") == "x ... y");
  // Unicode classes: str.lower() and Perl's classes on non-ASCII text.
  CHECK(toUtf8(lowerCase(U"ZÜRICH İ")) == "zürich i\u0307");
  CHECK(isAlpha(U'ü'));
  CHECK_FALSE(isAlnum(U'€'));
  CHECK(isCurrency(U'€'));
  CHECK(isNumber(U'½'));
  CHECK_FALSE(isDigit(U'½'));
}

TEST_CASE("hf tokenizer: import keeps it in tokenizer_config.json, which wins over the pickle", "[hf_tokenizer]") {
  namespace fs = std::filesystem;
  TempDir tmp;
  fs::create_directory(tmp.path / "hf");
  for (const char* f : {"config.json", "pytorch_model.bin", "vocab.pkl"})
    fs::copy_file(kData + "/checkpoints/hf_tiny/" + f, tmp.path / "hf" / f);
  CheckpointModel m = readCheckpointModel((tmp.path / "hf").string(), std::nullopt);
  REQUIRE(m.tokenizer.has_value());
  writeImportedModel(m, (tmp.path / "out").string());
  REQUIRE(fs::exists(tmp.path / "out" / "tokenizer_config.json"));
  Vocabulary imported = Vocabulary::load((tmp.path / "out" / "vocab.txt").string());
  CHECK(imported.tokenizer() == WordTokenizer::Hf);
  CHECK(imported.hfOptions().specialTokens == std::vector<std::string>{"<unk>", "<eos>", "<formula>"});
  CHECK(imported.encode("the city, and", "t") == std::vector<std::int64_t>{1, 95, 2, 5, 0});

  // transformers passes tokenizer_config.json's arguments to the constructor,
  // and they win over vocab.pkl's members.
  std::ofstream((tmp.path / "hf" / "tokenizer_config.json").string())
      << R"({"tokenizer_class": "TransfoXLTokenizer", "lower_case": true, "eos_token": {"content": "<eos>"}})";
  Vocabulary pkl = Vocabulary::load((tmp.path / "hf" / "vocab.pkl").string());
  CHECK(pkl.hfOptions().lowerCase);
  CHECK(pkl.encode("THE City", "t") == std::vector<std::int64_t>{1, 95, 0});
  std::ofstream((tmp.path / "hf" / "tokenizer_config.json").string())
      << R"({"tokenizer_class": "TransfoXLTokenizer", "lower_case": "yes"})";
  REQUIRE_THROWS_WITH(Vocabulary::load((tmp.path / "hf" / "vocab.pkl").string()),
                      Contains("tokenizer_config.json: /lower_case: expected true or false, got \"yes\""));
  // Another tokenizer class says nothing about this one.
  std::ofstream((tmp.path / "hf" / "tokenizer_config.json").string()) << R"({"tokenizer_class": "GPT2Tokenizer"})";
  CHECK_FALSE(Vocabulary::load((tmp.path / "hf" / "vocab.pkl").string()).hfOptions().lowerCase);
}
