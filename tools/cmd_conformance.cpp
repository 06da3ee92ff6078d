// tools/cmd_conformance.cpp - `txlc conformance CASE_DIR...`.
#include <iostream>
#include <nlohmann/json.hpp>

#include "tools/command.h"
#include "driver/conformance.h"
#include "tools/exit_codes.h"

namespace txl::tools {

namespace {
struct Options {
  std::vector<std::string> cases;
  bool json = false;
  PipelineFlags pipeline;
};

int run(const Options& o) {
  Setting options;  // the backend and pipeline; each case gives its model's setting
  o.pipeline.apply(options);
  bool allPassed = true;
  nlohmann::json report = nlohmann::json::array();
  for (const auto& dir : o.cases) {
    CaseResult result = runConformanceCase(dir, options);
    allPassed &= result.passed;
    if (o.json) report.push_back(caseToJson(result));
    else std::cout << formatCaseLine(result) << std::endl;
  }
  if (o.json)
    std::cout << nlohmann::json{{"backend", options.backend}, {"passed", allPassed}, {"cases", report}}.dump(2)
              << std::endl;
  return allPassed ? kExitOk : kExitCheckFailed;
}
}  // namespace

void registerConformance(CLI::App& app, Action& action) {
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("conformance", "run conformance cases against the reference's outputs");
  cmd->add_option("cases", o->cases, "case directories (each with case.json, weights and io safetensors)")
      ->required()
      ->check(CLI::ExistingDirectory);
  cmd->add_flag("--json", o->json, "machine-readable report on stdout");
  o->pipeline.add(*cmd);
  cmd->callback([o, &action] { action = [o] { return run(*o); }; });
}

}  // namespace txl::tools
