// tools/pipeline_flags.cpp - the pipeline options shared by commands.
#include <algorithm>
#include <iostream>

#include "ir/check.h"
#include "passes/registry.h"
#include "tools/cli_checks.h"
#include "tools/command.h"

namespace txl::tools {

namespace {

// Pass names as the registry knows them; a near miss is named ("did you mean").
// `list`: a comma-separated pipeline, or "none".
CLI::Validator passNames(bool list) {
  return CLI::Validator(
      [list](std::string& s) -> std::string {
        if (list && s == "none") return {};
        std::vector<std::string> known;
        for (const auto& p : passes::registeredPasses()) known.push_back(p.name);
        std::vector<std::string> names;
        if (list) {
          std::size_t from = 0;
          for (std::size_t comma; (comma = s.find(',', from)) != std::string::npos; from = comma + 1)
            names.push_back(s.substr(from, comma - from));
          names.push_back(s.substr(from));
        } else {
          names.push_back(s);
        }
        for (const std::string& n : names) {
          if (n.empty()) return "expected a comma-separated list of pass names or 'none', got '" + clip(s) + "'";
          if (std::find(known.begin(), known.end(), n) != known.end()) continue;
          const std::string near = closestName(n, known);
          std::string all;
          for (const auto& k : known) all += (all.empty() ? "" : ", ") + k;
          return "unknown pass '" + clip(n) + "'" + (near.empty() ? "" : " (did you mean '" + near + "'?)") +
                 "; known: " + all;
        }
        return {};
      },
      list ? "PASS,..." : "PASS");
}

}  // namespace

void PipelineFlags::add(CLI::App& cmd, bool withBackend) {
  if (withBackend)
    cmd.add_option("--backend", backend, "executor: onednn (default) or reference (the plain interpreter)")
        ->check(oneOf({"onednn", "reference"}, "'onednn' or 'reference'"));
  cmd.add_option("--passes", passes, "comma-separated pass pipeline, or 'none' (default: the default pipeline)")
      ->check(passNames(true));
  cmd.add_option("--disable-pass", disabled, "remove a pass from the pipeline (repeatable)")->check(passNames(false));
  cmd.add_flag("--print-after-all", printAfterAll, "print the IR after every pass (stderr)");
  cmd.add_option("--print-after", printAfter, "print the IR after the named pass (stderr, repeatable)")
      ->check(passNames(false));
  cmd.add_flag("--time-passes", timePasses, "report the time each pass takes (stderr)");
  cmd.add_option("--memory", memory,
                 "memory form: kv (remember projected keys and values, the default) or hidden (layer inputs, as "
                 "the reference)")
      ->check(oneOf({"kv", "hidden"}, "'kv' or 'hidden'"));
  cmd.add_option("--precision", precision,
                 "matmul precision: f32 (the default; an artifact's own), bf16 (bf16 weights and inputs, f32 "
                 "accumulation; needs AVX512-BF16 on the onednn backend) or int8 (int8 weights with a scale per "
                 "output channel; segments' inputs quantized per row on AVX512-VNNI, else f32); bf16 and int8 "
                 "keep keys and values in bf16 "
                 "(docs/PRECISION.md)")
      ->check(CLI::Validator(
          [list = precisionList](std::string& s) -> std::string {
            // The backend flag is parsed in command-line order, so the CPU check waits for checkSetting
            // when --backend comes later; here: the name, and the CPU for the default backend.
            if (!list) return driver::precisionProblem(s, "reference");
            std::size_t from = 0;
            for (std::size_t comma; from <= s.size(); from = comma + 1) {
              comma = std::min(s.find(',', from), s.size());
              if (std::string problem = driver::precisionProblem(s.substr(from, comma - from), "reference");
                  !problem.empty())
                return problem;
            }
            return {};
          },
          precisionList ? "f32|bf16|int8,..." : "f32|bf16|int8"));
}

SettingChoice PipelineFlags::choice() const {
  SettingChoice c;
  c.backend = backend;
  if (!passes.empty()) c.passes = passes;
  c.disabled = disabled;
  if (!memory.empty()) c.memory = memory;
  if (!precision.empty()) c.precision = precision;
  return c;
}

void PipelineFlags::applyDiagnostics(Setting& options) const {
  for (const auto& name : printAfter) {
    passes::createPass(name);
    options.pipeline.manager.printAfter.insert(name);
  }
  options.pipeline.manager.printAfterAll = printAfterAll;
  options.pipeline.manager.timePasses = timePasses;
  options.pipeline.manager.log = &std::cerr;
}

void PipelineFlags::apply(Setting& options) const {
  selectPipeline(options, choice());
  applyDiagnostics(options);
}

}  // namespace txl::tools
