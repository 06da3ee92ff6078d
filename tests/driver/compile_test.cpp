// tests/driver/compile_test.cpp - driver/setting.h and driver/compile.h: a
// setting resolved from a user's choice (resolveSetting: the model's own
// values, the choice applied, the pipeline resolved once, bad values
// refused), the memory slots it gives (kv or hidden form, windowed or not,
// the state dtype) against those of the graph it builds, and docs/DRIVER.md's
// setting table against the fields of driver::Setting.
#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "driver/compile.h"
#include "driver/setting.h"
#include "frontend/weights.h"
#include "ir/check.h"
#include "ir/segment_abi.h"
#include "tests/driver/tiny_model.h"

using namespace txl;
using namespace txl::driver;

namespace {

// Every field of driver::Setting, in declaration order. settingFieldsAreListed
// binds each field to a name: it stops compiling when a field is added or
// removed, and the list here must follow (and docs/DRIVER.md with it).
const std::vector<std::string> kSettingFields = {"batch",      "qlen",          "memLen",   "clampLen",
                                                 "sameLength", "initialMemory", "threads",  "threadPolicy",
                                                 "backend",    "precision",     "pipeline", "resolved"};

[[maybe_unused]] void settingFieldsAreListed(const Setting& s) {
  [[maybe_unused]] const auto& [batch, qlen, memLen, clampLen, sameLength, initialMemory, threads, threadPolicy,
                                backend, precision, pipeline, resolved] = s;
}

// The field names of the table under "## The setting" in docs/DRIVER.md:
// the first cell of each row, without its backticks.
std::vector<std::string> documentedSettingFields() {
  std::ifstream f(TXL_DRIVER_DOC);
  REQUIRE(f);
  std::vector<std::string> names;
  std::string line;
  bool inSection = false, inTable = false;
  while (std::getline(f, line)) {
    if (line.rfind("## ", 0) == 0) {
      if (inSection) break;
      inSection = line.rfind("## The setting", 0) == 0;
      continue;
    }
    if (!inSection) continue;
    if (line.rfind("|", 0) != 0) {
      if (inTable) break;  // the table ended
      continue;
    }
    inTable = true;
    const std::size_t open = line.find('`'), close = line.find('`', open + 1), cell = line.find('|', 1);
    if (open == std::string::npos || close == std::string::npos || open > cell) continue;  // header, rule
    names.push_back(line.substr(open + 1, close - open - 1));
  }
  return names;
}

Model tinyModel() {
  const frontend::ModelSpec spec = txl::testing::tinySpec();
  return modelFrom(spec, frontend::randomWeights(spec, 3));
}

}  // namespace

TEST_CASE("docs/DRIVER.md's setting table lists every field of driver::Setting, once", "[setting]") {
  std::vector<std::string> documented = documentedSettingFields();
  std::vector<std::string> fields = kSettingFields;
  INFO("documented: " << documented.size() << " rows");
  const std::set<std::string> unique(documented.begin(), documented.end());
  CHECK(unique.size() == documented.size());
  std::sort(documented.begin(), documented.end());
  std::sort(fields.begin(), fields.end());
  CHECK(documented == fields);
}

TEST_CASE("resolveSetting: the model's own values, the pipeline resolved once", "[setting]") {
  const Model m = tinyModel();
  const Setting s = resolveSetting(m, {});
  const Setting d = defaultSetting(m);
  CHECK(s.batch == 1);
  CHECK(s.memLen == m.spec.mem_len);
  CHECK(s.qlen == d.qlen);
  CHECK(s.clampLen == d.clampLen);
  CHECK(s.sameLength == d.sameLength);
  CHECK(s.backend == "onednn");
  CHECK(s.precision == Precision::F32);
  CHECK(s.resolved == passes::resolvePipeline(s.pipeline, Precision::F32));
  CHECK(s.resolved.memory == ir::MemoryForm::Kv);  // the default pipeline's
  CHECK(s.resolved.stateDType == ir::DType::F32);
  CHECK(memoryForm(s) == "kv");
}

TEST_CASE("resolveSetting: the choice applied; memory form and precision resolved into the facts", "[setting]") {
  const Model m = tinyModel();
  SettingChoice c;
  c.batch = 3, c.qlen = 5, c.memLen = 4, c.clampLen = 2, c.threads = 1, c.backend = "reference";
  Setting s = resolveSetting(m, c);
  CHECK(s.batch == 3);
  CHECK(s.qlen == 5);
  CHECK(s.memLen == 4);
  CHECK(s.clampLen == 2);
  CHECK(s.threads == 1);
  CHECK(s.backend == "reference");

  c = {};
  c.memory = "hidden";
  s = resolveSetting(m, c);
  CHECK(s.resolved.memory == ir::MemoryForm::Hidden);
  CHECK(memoryForm(s) == "hidden");
  CHECK(std::find(s.resolved.passes.begin(), s.resolved.passes.end(), "cache-projected-memory") ==
        s.resolved.passes.end());

  c = {};
  c.precision = "bf16";
  s = resolveSetting(m, c);
  CHECK(s.precision == Precision::BF16);
  CHECK(s.resolved == passes::resolvePipeline(s.pipeline, Precision::BF16));
  CHECK(s.resolved.windowed);
  CHECK(s.resolved.stateDType == ir::DType::BF16);  // bf16-state on the windows

  c = {};
  c.disabled = {"window-memory"};
  s = resolveSetting(m, c);
  CHECK_FALSE(s.resolved.windowed);
  CHECK(std::find(s.resolved.passes.begin(), s.resolved.passes.end(), "window-memory") == s.resolved.passes.end());
}

TEST_CASE("resolveSetting refuses bad values and a memory form the passes contradict", "[setting]") {
  const Model m = tinyModel();
  const auto refused = [&](SettingChoice c) { CHECK_THROWS_AS(resolveSetting(m, c), txl::Error); };
  SettingChoice c;
  c.batch = 0;
  refused(c);
  c = {};
  c.qlen = 0;
  refused(c);
  c = {};
  c.memLen = -1;
  refused(c);
  c = {};
  c.backend = "gpu";
  refused(c);
  c = {};
  c.passes = "no-such-pass";
  refused(c);
  c = {};
  c.precision = "f16";
  refused(c);
  c = {};
  c.memory = "both";
  refused(c);
  c = {};
  c.passes = "window-memory,cache-projected-memory";  // the hidden form: cache-projected-memory no longer matches
  c.memory = "kv";
  CHECK_THROWS_AS(resolveSetting(m, c), txl::UsageError);
}

TEST_CASE("memorySlots: kv and hidden forms, windowed or not, the state dtype, as the built graph has them",
          "[setting]") {
  const Model m = tinyModel();
  const frontend::ModelSpec& spec = m.spec;
  struct Case {
    const char* memory;
    const char* precision;
    bool windows;
  };
  for (const Case& k : {Case{"kv", "f32", true}, Case{"kv", "f32", false}, Case{"hidden", "f32", true},
                        Case{"hidden", "f32", false}, Case{"kv", "bf16", true}, Case{"hidden", "bf16", true},
                        Case{"kv", "int8", true}, Case{"hidden", "int8", true}}) {
    INFO("memory " << k.memory << ", precision " << k.precision << ", windows " << k.windows);
    SettingChoice c;
    c.batch = 2, c.qlen = 3;
    c.memory = k.memory;
    c.precision = k.precision;
    if (!k.windows) c.disabled = {"window-memory"};
    const Setting s = resolveSetting(m, c);
    const std::vector<ir::MemorySlot> slots = memorySlots(spec, s);
    const bool kv = std::string(k.memory) == "kv";
    REQUIRE(std::int64_t(slots.size()) == (kv ? spec.n_layer : spec.n_layer + 1));
    for (std::size_t i = 0; i < slots.size(); ++i) {
      CHECK(slots[i].slot == std::int64_t(i));
      CHECK(slots[i].rowShape == (kv ? ir::Shape{2, 2 * spec.n_head * spec.d_head} : ir::Shape{2, spec.d_model}));
      CHECK(slots[i].windowed == k.windows);
      CHECK(slots[i].dtype == s.resolved.stateDType);
    }
    // bf16 windows at bf16 and int8, except int8's hidden form (docs/PRECISION.md).
    const bool bf16State =
        k.windows && (std::string(k.precision) == "bf16" || (std::string(k.precision) == "int8" && kv));
    CHECK(s.resolved.stateDType == (bf16State ? ir::DType::BF16 : ir::DType::F32));
    // The graph the setting builds has exactly these slots.
    for (const std::int64_t mlen : {std::int64_t(0), s.memLen}) {
      CHECK(ir::memorySlots(buildOptimizedGraph(spec, s, segmentOf(s, s.qlen, mlen))) == slots);
    }
  }
  SettingChoice none;
  none.memLen = 0;
  CHECK(memorySlots(spec, resolveSetting(m, none)).empty());
}
