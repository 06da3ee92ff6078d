// tests/driver/rank_messages_test.cpp - the split score job's messages decode to what was encoded, and a
// truncated one is refused rather than read past its end.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>

#include "driver/rank_messages.h"
#include "ir/check.h"

using namespace txl;
using namespace txl::driver;

TEST_CASE("a share of streams decodes to its fields, NaN and empty vectors included") {
  const StreamShare s{3, {1.5, std::nan("")}, {2.25, 4.0}, {0.5f, -1.0f, 7.0f}, 42, 12.75};
  const StreamShare d = decodeStreamShare(encodeStreamShare(s));
  CHECK(d.first == 3);
  REQUIRE(d.nll.size() == 2);
  CHECK(d.nll[0] == 1.5);
  CHECK(std::isnan(d.nll[1]));
  CHECK(d.nllSquares == s.nllSquares);
  CHECK(d.perToken == s.perToken);
  CHECK(d.predicted == 42);
  CHECK(d.predictedNll == 12.75);
  const StreamShare heartbeat = decodeStreamShare(encodeStreamShare({5, {}, {}, {}, 7, 1.0}));
  CHECK(heartbeat.nll.empty());
  CHECK(heartbeat.perToken.empty());
  CHECK(heartbeat.predicted == 7);
}

TEST_CASE("a batch of documents decodes to its indices and scores in order") {
  DocumentBatch b;
  b.predicted = 99;
  b.scores = {{7, {10, 3.5}}, {2, {1, std::numeric_limits<double>::infinity()}}};
  const DocumentBatch d = decodeDocumentBatch(encodeDocumentBatch(b));
  CHECK(d.predicted == 99);
  REQUIRE(d.scores.size() == 2);
  CHECK(d.scores[0].first == 7);
  CHECK(d.scores[0].second.tokens == 10);
  CHECK(d.scores[0].second.nllSum == 3.5);
  CHECK(d.scores[1].first == 2);
  CHECK(std::isinf(d.scores[1].second.nllSum));
}

TEST_CASE("done carries the signal that stopped a rank, none when its share is complete") {
  CHECK(encodeDone(0).empty());
  CHECK(decodeDone(encodeDone(0)) == 0);
  CHECK(decodeDone(encodeDone(15)) == 15);
}

TEST_CASE("does not read a truncated message past its end") {
  std::string bytes = encodeStreamShare({0, {1.0, 2.0}, {1.0, 4.0}, {}, 2, 3.0});
  bytes.resize(bytes.size() - 5);
  CHECK_THROWS_AS(decodeStreamShare(bytes), InternalError);
  std::string batch = encodeDocumentBatch({1, {{0, {2, 1.0}}}});
  batch.resize(batch.size() - 1);
  CHECK_THROWS_AS(decodeDocumentBatch(batch), InternalError);
  // A length whose byte count wraps past 2^64 (2^61 doubles: 8 * 2^61 = 0 mod 2^64).
  std::string wraps = encodeStreamShare({0, {}, {}, {}, 0, 0.0});
  const std::uint64_t n = std::uint64_t{1} << 61;
  wraps.replace(8, sizeof n, reinterpret_cast<const char*>(&n), sizeof n);
  CHECK_THROWS_AS(decodeStreamShare(wraps), InternalError);
}
