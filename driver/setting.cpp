// driver/setting.cpp - memoryForm(), selectPipeline().
#include "driver/setting.h"

#include <algorithm>

#include "ir/check.h"
#include "passes/registry.h"

namespace txl::driver {

std::string memoryForm(const Setting& s) {
  const std::vector<std::string> selected = passes::selectedPasses(s.pipeline);
  return std::find(selected.begin(), selected.end(), "cache-projected-memory") != selected.end() ? "kv" : "hidden";
}

void applyPrecision(Setting& s, Precision p) {
  s.precision = p;
  s.pipeline.precisionPasses = precisionPasses(p);
}

void selectPipeline(Setting& s, const SettingChoice& c) {
  if (c.backend) s.backend = *c.backend;
  // The same words as the command line's validators (tools/pipeline_flags.cpp), for callers that bypass them.
  auto named = [](const char* flag, const auto& validate) {
    try {
      validate();
    } catch (const Error& e) {
      const std::string m = e.what();
      throw Error(m.rfind("--", 0) == 0 ? m : std::string(flag) + ": " + m);
    }
  };
  if (c.passes && !c.passes->empty())
    named("--passes", [&] { s.pipeline.passes = passes::parsePassList(*c.passes); });
  for (const auto& name : c.disabled) {
    named("--disable-pass", [&] { passes::createPass(name); });
    if (passes::isPrecisionPass(name))
      throw Error("--disable-pass: " + name + " follows --precision; use --precision f32");
    s.pipeline.disabled.insert(name);
  }
  if (c.precision) applyPrecision(s, parsePrecision(*c.precision, "--precision"));
  if (c.memory) {
    if (*c.memory == "hidden") s.pipeline.disabled.insert("cache-projected-memory");
    else if (*c.memory != "kv") throw Error("--memory: expected 'kv' or 'hidden', got '" + *c.memory + "'");
  }
}

}  // namespace txl::driver
