// tests/backend/memory_plan_test.cpp - the arena planner (backend/memory_plan.h):
// allocator fixtures (a script of ALLOC / FREE events with the peak they
// must reach), its invariants on random requests, and its errors.
#include <catch2/catch.hpp>

#include <map>
#include <random>
#include <sstream>

#include "backend/memory_plan.h"
#include "ir/check.h"

using namespace txl;
using namespace txl::backend;

namespace {

// A fixture script: one event per line, each line one step of a schedule.
//   ALLOC name bytes   the buffer is live from this step
//   FREE name          ... and no longer at this step (live until the one before)
//   STEP               nothing happens (a step that reads only)
// A buffer never freed lives to the last step.
std::vector<BufferRequest> parseScript(const std::string& script) {
  std::vector<BufferRequest> requests;
  std::map<std::string, std::size_t> index;
  std::istringstream in(script);
  std::string line;
  std::size_t step = 0;
  for (; std::getline(in, line); ++step) {
    std::istringstream words(line);
    std::string verb, name;
    words >> verb >> name;
    if (verb.empty()) {
      --step;
      continue;
    }
    if (verb == "ALLOC") {
      std::size_t bytes = 0;
      words >> bytes;
      index[name] = requests.size();
      requests.push_back({name, bytes, step, SIZE_MAX});
    } else if (verb == "FREE") {
      REQUIRE(index.count(name));
      REQUIRE(step > requests[index[name]].first);
      requests[index[name]].last = step - 1;
    } else {
      REQUIRE(verb == "STEP");
    }
  }
  for (auto& r : requests)
    if (r.last == SIZE_MAX) r.last = step;
  return requests;
}

MemoryPlan planScript(const std::string& script, std::size_t alignment = 64) {
  MemoryPlan plan = planMemory(parseScript(script), alignment);
  INFO("conflict: " << findConflict(plan));
  REQUIRE(findConflict(plan).empty());
  return plan;
}

std::size_t offsetOf(const MemoryPlan& plan, const std::string& label) {
  for (const auto& b : plan.buffers)
    if (b.request.label == label) return b.offset;
  FAIL("no buffer " << label);
  return 0;
}

}  // namespace

TEST_CASE("memory plan: a chain reuses the buffer two steps back", "[memory_plan]") {
  const MemoryPlan p = planScript(R"(
    ALLOC a 1024
    ALLOC b 1024
    FREE a
    ALLOC c 1024
    FREE b
    ALLOC d 1024
  )");
  CHECK(p.lowerBoundBytes == 2048);
  CHECK(p.arenaBytes == 2048);
  CHECK(p.noReuseBytes == 4096);
  CHECK(offsetOf(p, "a") == offsetOf(p, "c"));
  CHECK(offsetOf(p, "b") == offsetOf(p, "d"));
}

TEST_CASE("memory plan: a buffer freed and one allocated at the same step do not overlap", "[memory_plan]") {
  // FREE at a step means "no longer live here"; an ALLOC on the next line
  // is a step later, so they may share. Both live at step 1 here: no sharing.
  const MemoryPlan p = planScript(R"(
    ALLOC x 4096
    ALLOC y 4096
    FREE x
  )");
  CHECK(p.lowerBoundBytes == 8192);
  CHECK(p.arenaBytes == 8192);
}

TEST_CASE("memory plan: a small buffer fills the gap a large one left", "[memory_plan]") {
  const MemoryPlan p = planScript(R"(
    ALLOC big 8192
    ALLOC keep 1024
    FREE big
    ALLOC small1 4096
    ALLOC small2 4096
    FREE small1
    FREE small2
    ALLOC last 8192
  )");
  CHECK(p.lowerBoundBytes == 9216);
  CHECK(p.arenaBytes == 9216);
}

TEST_CASE("memory plan: the transformer pattern (scores twice the size of the rest) packs to the bound",
          "[memory_plan]") {
  // x -> q, k -> scores -> probs (in turn) -> context -> y, twice over.
  const MemoryPlan p = planScript(R"(
    ALLOC x 1000
    ALLOC q 1000
    ALLOC k 1000
    ALLOC s 8000
    FREE q
    FREE k
    ALLOC p 8000
    FREE s
    ALLOC c 1000
    FREE p
    ALLOC y 1000
    FREE c
    ALLOC q2 1000
    FREE x
    ALLOC k2 1000
    ALLOC s2 8000
    FREE q2
    FREE k2
    ALLOC p2 8000
    FREE s2
  )");
  CHECK(p.arenaBytes >= p.lowerBoundBytes);
  CHECK(p.arenaBytes <= p.lowerBoundBytes * 115 / 100);
}

TEST_CASE("memory plan: sizes round up to the alignment, zero bytes take no room", "[memory_plan]") {
  const MemoryPlan p = planScript(R"(
    ALLOC a 1
    ALLOC b 65
    ALLOC z 0
  )");
  CHECK(p.noReuseBytes == 64 + 128);
  CHECK(p.arenaBytes == 192);
  for (const auto& b : p.buffers) CHECK(b.offset % 64 == 0);
  CHECK(planScript("ALLOC a 1\nALLOC b 1", 4096).arenaBytes == 8192);
}

TEST_CASE("memory plan: bad requests are internal errors", "[memory_plan]") {
  CHECK_THROWS_AS(planMemory({{"backwards", 64, 3, 2}}), InternalError);
  CHECK_THROWS_AS(planMemory({{"huge", SIZE_MAX - 10, 0, 0}}), InternalError);
  CHECK_THROWS_AS(planMemory({{"a", 64, 0, 0}}, 0), InternalError);
  CHECK(planMemory({}).arenaBytes == 0);
}

TEST_CASE("memory plan: random requests never overlap while live, and the figures are ordered", "[memory_plan]") {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 300; ++trial) {
    const int count = std::uniform_int_distribution<int>(1, 60)(rng);
    const std::size_t steps = std::uniform_int_distribution<std::size_t>(1, 40)(rng);
    std::vector<BufferRequest> requests;
    for (int i = 0; i < count; ++i) {
      std::size_t a = std::uniform_int_distribution<std::size_t>(0, steps)(rng);
      std::size_t b = std::uniform_int_distribution<std::size_t>(0, steps)(rng);
      // Sizes from a few classes, as in a network: many equal, a few large.
      const std::size_t sizes[] = {1, 64, 100, 4096, 5000, 65536, 300000};
      const std::size_t bytes = sizes[std::uniform_int_distribution<int>(0, 6)(rng)];
      // append, not "r" + to_string: GCC 12 at -O3 misreports that as -Wrestrict (bug 105651)
      requests.push_back({std::string("r").append(std::to_string(i)), bytes, std::min(a, b), std::max(a, b)});
    }
    const MemoryPlan p = planMemory(requests);
    INFO("trial " << trial << ": " << findConflict(p));
    REQUIRE(findConflict(p).empty());
    REQUIRE(p.buffers.size() == requests.size());
    REQUIRE(p.lowerBoundBytes <= p.arenaBytes);
    REQUIRE(p.arenaBytes <= p.noReuseBytes);
    for (std::size_t i = 0; i < requests.size(); ++i) REQUIRE(p.buffers[i].request.label == requests[i].label);
  }
}

TEST_CASE("memory plan: findConflict names two live buffers sharing bytes", "[memory_plan]") {
  MemoryPlan p = planMemory({{"a", 64, 0, 1}, {"b", 64, 1, 2}});
  REQUIRE(findConflict(p).empty());
  p.buffers[1].offset = p.buffers[0].offset;
  CHECK(findConflict(p) == "'a' and 'b'");
  p.buffers[1].request.first = 2;  // no longer live together
  CHECK(findConflict(p).empty());
}
