// driver/setting.cpp - memoryForm(), resolvePipeline(), selectPipeline().
#include "driver/setting.h"

#include "ir/check.h"
#include "passes/registry.h"

namespace txl::driver {

std::string memoryForm(const Setting& s) { return ir::memoryFormName(s.resolved.memory); }

void resolvePipeline(Setting& s) { s.resolved = passes::resolvePipeline(s.pipeline, s.precision); }

void selectPipeline(Setting& s, const SettingChoice& c) {
  if (c.backend) s.backend = *c.backend;
  // The same words as the command line's validators (tools/pipeline_flags.cpp), for callers that bypass them.
  auto named = [](const char* flag, const auto& validate) {
    try {
      validate();
    } catch (const UsageError&) {
      throw;
    } catch (const Error& e) {
      const std::string m = e.what();
      throw Error(m.rfind("--", 0) == 0 ? m : std::string(flag) + ": " + m);
    }
  };
  if (c.passes && !c.passes->empty()) named("--passes", [&] { s.pipeline.passes = passes::parsePassList(*c.passes); });
  for (const auto& name : c.disabled) {
    named("--disable-pass", [&] { passes::createPass(name); });
    if (passes::isPrecisionPass(name))
      throw UsageError("--disable-pass: " + name + " follows --precision; use --precision f32");
    s.pipeline.disabled.insert(name);
  }
  if (c.precision) s.precision = parsePrecision(*c.precision, "--precision");
  if (c.memory) {
    if (*c.memory == "hidden") s.pipeline.memory = ir::MemoryForm::Hidden;
    else if (*c.memory == "kv") s.pipeline.memory = ir::MemoryForm::Kv;
    else throw Error("--memory: expected 'kv' or 'hidden', got '" + *c.memory + "'");
  }
  resolvePipeline(s);
}

}  // namespace txl::driver
