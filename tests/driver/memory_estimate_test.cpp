// tests/driver/memory_estimate_test.cpp - estimateMemory() against what a compiled model and its session hold.
#include <catch2/catch.hpp>

#include "backend/session.h"
#include "driver/compile.h"
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
