// tests/frontend/vocabulary_test.cpp - character and word tokenizers, on the bundled vocabularies and by hand.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "frontend/vocabulary.h"
#include "ir/check.h"

using namespace txl::frontend;
using Catch::Matchers::Contains;

namespace {

Vocabulary chars(std::vector<std::string> symbols) {
  return Vocabulary::fromSymbols(VocabKind::Char, std::move(symbols), "v.json");
}
Vocabulary words() {
  return Vocabulary::fromSymbols(VocabKind::Word, {"<eos>", "<unk>", "the", "earth."}, "vocab.txt");
}

}  // namespace

TEST_CASE("char vocabulary encodes and decodes UTF-8 text", "[vocabulary]") {
  Vocabulary v = chars({"\n", "a", "é", "→"});
  auto ids = v.encode("aé\n→", "t.txt");
  CHECK(ids == std::vector<std::int64_t>{1, 2, 0, 3});
  CHECK(v.decode(ids) == "aé\n→");
}

TEST_CASE("char vocabulary names line, column and character of an unknown one", "[vocabulary]") {
  Vocabulary v = chars({"\n", "a", "b"});
  REQUIRE_THROWS_WITH(v.encode("ab\nbé", "t.txt"),
                      "t.txt: line 2 column 2: character 'é' (U+00E9) is not in the vocabulary (v.json, 3 symbols)");
  REQUIRE_THROWS_WITH(v.encode("a\tb", "t.txt"), Contains("line 1 column 2: character '\\t' (U+0009)"));
}

TEST_CASE("char vocabulary refuses invalid UTF-8 with its byte", "[vocabulary]") {
  Vocabulary v = chars({"a"});
  REQUIRE_THROWS_WITH(v.encode("a\xff", "t.txt"),
                      Contains("line 1 column 2 (byte 1): expected UTF-8 text, got the invalid byte 0xFF"));
  REQUIRE_THROWS_WITH(v.encode("\xc3", "t.txt"), Contains("invalid byte 0xC3"));      // truncated sequence
  REQUIRE_THROWS_WITH(v.encode("\xc0\xaf", "t.txt"), Contains("invalid byte 0xC0"));  // overlong
}

TEST_CASE("char vocabulary symbols must be single distinct characters", "[vocabulary]") {
  REQUIRE_THROWS_WITH(chars({"a", "ab"}), Contains("v.json: symbol 1: expected one UTF-8 character, got \"ab\""));
  REQUIRE_THROWS_WITH(chars({"a", "a"}), Contains("v.json: symbol 1: 'a' (U+0061) is also symbol 0"));
  REQUIRE_THROWS_WITH(chars({}), Contains("expected at least one symbol"));
}

TEST_CASE("vocabulary JSON: type and symbols are checked", "[vocabulary]") {
  using nlohmann::json;
  REQUIRE_THROWS_WITH(Vocabulary::fromJson(json{{"type", "bpe"}, {"symbols", {"a"}}}, "v.json"),
                      "v.json: /type: expected \"char\" or \"word\", got \"bpe\"");
  REQUIRE_THROWS_WITH(Vocabulary::fromJson(json{{"type", "char"}, {"symbols", {"a", 3}}}, "v.json"),
                      "v.json: /symbols/1: expected a string, got 3");
  REQUIRE_THROWS_WITH(Vocabulary::fromJson(json::array(), "v.json"), Contains("expected a JSON object"));
  Vocabulary v = Vocabulary::fromJson(json{{"type", "char"}, {"symbols", {"x", "y"}}}, "v.json");
  CHECK(v.toJson() == json{{"type", "char"}, {"symbols", {"x", "y"}}});
}

TEST_CASE("word vocabulary follows the reference: whitespace split, <eos> per line, <unk>", "[vocabulary]") {
  Vocabulary v = words();
  // Two lines, an empty one in the middle, a last line without a line break.
  auto ids = v.encode("the  earth.\n\n  the moon\tthe\nearth.", "t.txt");
  CHECK(ids == std::vector<std::int64_t>{2, 3, 0, 0, 2, 1, 2, 0, 3, 0});
  CHECK(v.countUnknown("the moon and stars") == 3);
  // A prompt continues its last line: no <eos> at its end.
  CHECK(v.encode("the earth.", "p", {.eosAtEnd = false}) == std::vector<std::int64_t>{2, 3});
  CHECK(v.encode("the\n", "p", {.eosAtEnd = false}) == std::vector<std::int64_t>{2, 0});
  CHECK(v.decode(ids) == "the earth.\n\nthe <unk> the\nearth.\n");
}

TEST_CASE("word vocabulary needs <eos>; without <unk> an unknown word is an error", "[vocabulary]") {
  REQUIRE_THROWS_WITH(Vocabulary::fromSymbols(VocabKind::Word, {"a", "b"}, "vocab.txt"),
                      "vocab.txt: expected the symbol <eos> in a word vocabulary, got none");
  Vocabulary v = Vocabulary::fromSymbols(VocabKind::Word, {"<eos>", "a"}, "vocab.txt");
  REQUIRE_THROWS_WITH(v.encode("a a\na b", "t.txt"),
                      "t.txt: line 2 column 3: word \"b\" is not in the vocabulary (vocab.txt has no <unk>)");
}

TEST_CASE("bundled vocabularies load with their sizes and specials", "[vocabulary]") {
  Vocabulary c = Vocabulary::load(std::string(TXL_MODELS_DIR) + "/kjv-char/vocab.json");
  CHECK(c.kind() == VocabKind::Char);
  CHECK(c.size() == 73);
  CHECK(c.encode("In", "p") == std::vector<std::int64_t>{30, 60});
  Vocabulary w = Vocabulary::load(std::string(TXL_MODELS_DIR) + "/kjv-words/vocab.txt");
  CHECK(w.kind() == VocabKind::Word);
  CHECK(w.size() == 11292);
  CHECK(w.eosId() == 0);
  CHECK(w.unkId() == 1);
  REQUIRE_THROWS_WITH(Vocabulary::load("/nonexistent/vocab.txt"),
                      "/nonexistent/vocab.txt: cannot open: No such file or directory");
}
