// tests/driver/text_source_test.cpp - token ids and streams given on the command line or in files.
#include <catch2/catch.hpp>

#include "ir/check.h"
#include "driver/text_source.h"

using namespace txl::driver;

TEST_CASE("token ids: whitespace separated, checked against n_token with line and column", "[text]") {
  CHECK(parseTokenIds(" 1 2\n3\t4 \n", "ids.txt", 10) == std::vector<std::int64_t>{1, 2, 3, 4});
  REQUIRE_THROWS_WITH(parseTokenIds("1 2\n3 -1", "ids.txt", 10),
                      "ids.txt: line 2 column 3: expected a token id in [0, 10), got \"-1\"");
  REQUIRE_THROWS_WITH(parseTokenIds("1 10", "ids.txt", 10),
                      "ids.txt: line 1 column 3: expected a token id in [0, 10), got \"10\"");
  REQUIRE_THROWS_WITH(parseTokenIds("1 x", "ids.txt", 10),
                      "ids.txt: line 1 column 3: expected a token id in [0, 10), got \"x\"");
  REQUIRE_THROWS_AS(parseTokenIds("99999999999999999999", "ids.txt", 10), txl::Error);
}

TEST_CASE("token streams: one per line or ';', all the same length", "[text]") {
  auto s = parseTokenStreams("1 2 3; 4 5 6", "--tokens", 10);
  REQUIRE(s.size() == 2);
  CHECK(s[1] == std::vector<std::int64_t>{4, 5, 6});
  CHECK(parseTokenStreams("1 2\n\n3 4\n", "f", 10).size() == 2);
  REQUIRE_THROWS_WITH(parseTokenStreams("1 2\n3", "f", 10), "f: line 2: stream 1 has 1 ids, expected 2 like stream 0");
  REQUIRE_THROWS_WITH(parseTokenStreams(" \n ", "f", 10), "f: expected token ids, got none");
}

TEST_CASE("text files: missing, directory", "[text]") {
  REQUIRE_THROWS_WITH(readTextFile("/nonexistent/x.txt"), "/nonexistent/x.txt: cannot open: No such file or directory");
  REQUIRE_THROWS_WITH(readTextFile("/tmp"), "/tmp: is a directory, expected a text file (a regular file)");
}
