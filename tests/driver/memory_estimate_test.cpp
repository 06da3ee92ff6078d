// tests/driver/memory_estimate_test.cpp - estimateMemory() against what a compiled model and its session hold.
#include <catch2/catch.hpp>

#include "backend/session.h"
#include "driver/compile.h"
#include "driver/machine_memory.h"
#include "frontend/weights.h"
#include "tests/driver/tiny_model.h"

using namespace txl;
using namespace txl::driver;

TEST_CASE("the memory estimate counts the session's state windows and the position tables", "[memory]") {
  const frontend::ModelSpec spec = txl::testing::tinySpec();
  const Model m = modelFrom(spec, frontend::randomWeights(spec, 5));
  for (const std::string memory : {"kv", "hidden"})
    for (const std::int64_t memLen : {std::int64_t(0), std::int64_t(40), std::int64_t(900)}) {
      INFO("memory " << memory << ", mem_len " << memLen);
      Setting s = defaultSetting(m);
      s.memLen = memLen;
      s.qlen = 7;
      s.batch = 2;
      SettingChoice c;
      c.memory = memory;
      selectPipeline(s, c);
      auto model = compile(m, s);
      backend::Session session(model);
      const MemoryEstimate e = estimateMemory(spec, s);
      // The state is exact: every slot's window of 2 mem_len + qlen rows, in its form.
      CHECK(e.state == double(session.stateBytes()));
      // Once a segment ran, its position tables are among the plan's constants.
      ir::Tensor tokens = ir::Tensor::zeros({ir::DType::I64, {s.qlen, s.batch}});
      session.forward(tokens, nullptr, true);
      const double constants = double(model->constants().bytes() + session.lastPlan()->constantBytes());
      CHECK(e.tables <= constants);
      if (memLen == 900) CHECK(e.tables > 0.5 * constants);  // the tables are most of them at a long memory
    }
}

TEST_CASE("machine memory: MemTotal and MemAvailable from a meminfo text", "[memory]") {
  const MachineMemory m = parseMeminfo(
      "MemTotal:       16318024 kB\n"
      "MemFree:         1203340 kB\n"
      "MemAvailable:    9437184 kB\n"
      "Buffers:          301228 kB\n");
  REQUIRE(m.total);
  REQUIRE(m.available);
  CHECK(*m.total == 16318024.0 * 1024);
  CHECK(*m.available == 9437184.0 * 1024);
  // An old kernel without MemAvailable: the total alone.
  const MachineMemory old = parseMeminfo("MemTotal: 2048 kB\nMemFree: 1024 kB");
  CHECK(old.total == 2048.0 * 1024);
  CHECK(!old.available);
  // Malformed figures and look-alike names are not read.
  for (const char* bad : {"MemAvailable: lots kB\n", "MemAvailable: 5 MB\n", "MemAvailableX: 5 kB\n",
                          "MemAvailable 5 kB\n", "MemAvailable:\n", " MemAvailable: 5 kB\n"}) {
    INFO(bad);
    CHECK(!parseMeminfo(bad).available);
  }
  CHECK(parseMeminfo("MemAvailable:\t7 kB\r\n").available == 7.0 * 1024);
  CHECK(!parseMeminfo("").total);
  // This machine's.
  const MachineMemory here = readMachineMemory();
  REQUIRE(here.total);
  CHECK(*here.total > 0);
  if (here.available) CHECK(*here.available <= *here.total);
}

TEST_CASE("the available memory bounds what a setting allocates beyond its weights", "[memory]") {
  const frontend::ModelSpec spec = txl::testing::tinySpec();
  const Model m = modelFrom(spec, frontend::randomWeights(spec, 5));
  Setting s = defaultSetting(m);
  s.batch = 4;
  s.qlen = 64;
  s.memLen = 128;
  const MemoryEstimate e = estimateMemory(spec, s);
  const double need = e.state + e.tables + e.activations;
  REQUIRE(need > 0);
  REQUIRE(e.weights > 0);
  const double gib = double(1 << 30);
  // Enough for what the setting allocates, less than that and its weights: the weights are loaded already.
  CHECK_NOTHROW(checkMemoryAvailable(spec, s, "m", {.total = 64 * gib, .available = need}));
  CHECK_NOTHROW(checkMemoryAvailable(spec, s, "m", {.total = 64 * gib, .available = std::nullopt}));
  // Too little: one line naming the need and what is available of the total.
  CHECK_THROWS_WITH(
      checkMemoryAvailable(spec, s, "m", {.total = 15.5 * gib, .available = need / 2}),
      Catch::Matches("m: batch 4, qlen 64, mem_len 128 needs at least [0-9.]+ GiB besides its weights \\(memory "
                     "[0-9.]+ GiB, position tables [0-9.]+ GiB, segment activations [0-9.]+ GiB\\); this machine "
                     "has [0-9.]+ GiB available \\(MemAvailable\\) of 15.5 GiB of RAM"));
  CHECK_THROWS_WITH(checkMemoryAvailable(spec, s, "m", {.total = std::nullopt, .available = 0.0}),
                    Catch::EndsWith("this machine has 0.0 GiB available (MemAvailable) of RAM"));
}
