// tests/ir/segment_abi_test.cpp - verifySegment() accepts a graph that keeps the ABI and names what one breaks.
#include <catch2/catch.hpp>

#include "ir/graph.h"
#include "ir/segment_abi.h"

using namespace txl::ir;

namespace {

// A stand-in segment graph: qlen 2, batch 1, d_model 4, n_token 5, one
// memory slot of 3 remembered rows, a hidden output and (when asked) nll.
struct StandIn {
  Graph g;
  SegmentSignature sig{.segment = {.batch = 1, .qlen = 2, .mlen = 3, .memLen = 3, .logprob = false, .nll = false},
                       .dModel = 4,
                       .nToken = 5,
                       .memory = std::nullopt};  // no declared slots unless a test sets them

  explicit StandIn(bool nll = false, bool hiddenOk = true) {
    sig.segment.nll = nll;
    g.addInput(kTokens, {DType::I64, {2, 1}});
    Node mem = g.add(OpKind::MemRead, {}, {{"slot", std::int64_t(0)}}, TensorType{DType::F32, {3, 1, 4}});
    Node h = g.addWeight("h", {DType::F32, {2, 1, hiddenOk ? 4 : 3}});
    Node cat = g.add(OpKind::Concat, {mem, g.addWeight("x", {DType::F32, {2, 1, 4}})}, {{"axis", std::int64_t(0)}});
    g.add(OpKind::MemWrite,
          {g.add(OpKind::Slice, {cat},
                 {{"axis", std::int64_t(0)}, {"start", std::int64_t(2)}, {"end", std::int64_t(5)}})},
          {{"slot", std::int64_t(0)}});
    g.addOutput(kHidden, h);
    if (nll) {
      g.addInput(kTargets, {DType::I64, {2, 1}});
      g.addOutput(kNll, g.addWeight("n", {DType::F32, {2, 1}}));
    }
  }
};

}  // namespace

TEST_CASE("segment ABI: a graph that keeps it passes, with its memory slots") {
  StandIn s(/*nll=*/true);
  CHECK(!verifySegment(s.g, s.sig));
  CHECK(memoryName(7) == "mem.7");
  const std::vector<MemorySlot> slots = memorySlots(s.g);
  REQUIRE(slots.size() == 1);
  CHECK(slots[0] == MemorySlot{0, {1, 4}, false});
  s.sig.memory = slots;
  CHECK(!verifySegment(s.g, s.sig));
}

TEST_CASE("segment ABI: names the output of the wrong type, the missing input and the extra one") {
  StandIn wrong(false, /*hiddenOk=*/false);
  auto problem = verifySegment(wrong.g, wrong.sig);
  REQUIRE(problem);
  CHECK(*problem == "output 'hidden': expected f32[2,1,4], got f32[2,1,3]");

  StandIn noNll(/*nll=*/false);
  noNll.sig.segment.nll = true;  // the signature wants targets and nll
  problem = verifySegment(noNll.g, noNll.sig);
  REQUIRE(problem);
  CHECK(*problem == "input 'targets' i64[2,1] is missing");

  StandIn extra(/*nll=*/true);
  extra.sig.segment.nll = false;
  problem = verifySegment(extra.g, extra.sig);
  REQUIRE(problem);
  CHECK(*problem == "input 'targets' is not in the signature");
}

TEST_CASE("segment ABI: memory rows and slots must match the signature") {
  StandIn s;
  s.sig.segment.mlen = 2;  // the graph reads 3 rows
  auto problem = verifySegment(s.g, s.sig);
  REQUIRE(problem);
  CHECK(*problem == "mem_read of slot 0: expected 2 rows (mlen), got f32[3,1,4]");

  StandIn t;
  t.sig.memory = std::vector<MemorySlot>{{0, {1, 8}, false}};
  problem = verifySegment(t.g, t.sig);
  REQUIRE(problem);
  CHECK(*problem == "memory slots [0 f32[1,4]], expected the model's [0 f32[1,8]]");
  CHECK_THROWS_WITH(verifySegmentOrThrow(t.g, t.sig, "g"), Catch::StartsWith("g: memory slots"));
}
