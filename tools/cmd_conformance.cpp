// tools/cmd_conformance.cpp - `txlc conformance CASE_DIR...`.
//
// One line per case, then the summary "N passed, M failed" (with --json, a
// report whose "summary" holds the counts). Exit 0 when every case passed,
// 3 when a case could not be read (not a case folder, a bad file), else 1.
#include <iostream>
#include <nlohmann/json.hpp>

#include "tools/cli_checks.h"
#include "tools/command.h"
#include "driver/compile.h"
#include "driver/conformance.h"
#include "ir/check.h"
#include "tools/exit_codes.h"

namespace txl::tools {

namespace {
struct Options {
  std::vector<std::string> cases;
  bool json = false;
  int threads = defaultThreads();
  PipelineFlags pipeline;
};

int run(const Options& o) {
  Setting options;  // the flags resolved once, up front: a contradiction is refused before any case runs
  o.pipeline.apply(options);
  SettingChoice choice = o.pipeline.choice();  // each case applies it to its model's own setting
  choice.threads = o.threads;
  applyThreads(o.threads);
  int passed = 0, failed = 0, unreadable = 0;
  nlohmann::json report = nlohmann::json::array();
  for (const auto& dir : o.cases) {
    CaseResult result = runConformanceCase(dir, choice, options.pipeline.manager);
    if (result.passed) ++passed;
    else ++failed;
    if (!result.passed && !result.error.empty()) {
      ++unreadable;
      // The report keeps its FAIL line; the reason is an error like any bad input's.
      std::cerr << "txlc: error: " << oneLine(result.error) << std::endl;
    }
    if (o.json) report.push_back(caseToJson(result));
    else std::cout << formatCaseLine(result) << std::endl;
  }
  if (o.json)
    std::cout << nlohmann::json{{"backend", options.backend},
                                {"precision", precisionName(options.precision)},
                                {"passed", failed == 0},
                                {"summary", {{"passed", passed}, {"failed", failed}, {"unreadable", unreadable}}},
                                {"cases", report}}
                     .dump(2)
              << std::endl;
  else
    std::cout << passed << " passed, " << failed << " failed"
              << (unreadable ? " (" + std::to_string(unreadable) + " could not be read)" : "") << std::endl;
  return unreadable ? kExitBadInput : failed ? kExitCheckFailed : kExitOk;
}
}  // namespace

void registerConformance(CLI::App& app, Action& action) {
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("conformance", "run conformance cases against the reference's outputs");
  cmd->add_option("cases", o->cases, "case directories (each with case.json, weights and io safetensors)")
      ->required()
      ->check(CLI::ExistingDirectory);
  cmd->add_flag("--json", o->json, "machine-readable report on stdout");
  cmd->add_option("-t,--threads", o->threads,
                  "OpenMP threads for the oneDNN backend (default: the machine's physical cores; 0: OpenMP's "
                  "default)")
      ->check(threadCountCheck());
  o->pipeline.add(*cmd);
  cmd->callback([o, &action] { action = [o] { return run(*o); }; });
}

}  // namespace txl::tools
