// tools/cmd_compile.cpp - `txlc compile MODEL -o OUT`: a compiled artifact or a standalone executable.
//
// Builds and optimizes the segment graphs of the setting's shape buckets
// (docs/ARTIFACT.md), compiles the main one on the executor to check it and
// to record its memory plan, and writes the artifact or a standalone
// executable (driver/emit.h). A summary goes to stderr; --json prints it on
// stdout.
#include <chrono>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "ir/check.h"
#include "ir/json_io.h"
#include "passes/pipeline.h"
#include "tools/cli_checks.h"
#include "driver/content_hash.h"
#include "tools/exit_codes.h"
#include "driver/compile.h"
#include "tools/model_flags.h"
#include "driver/emit.h"
#include "frontend/atomic_file.h"
#include "tools/progress.h"

namespace txl::tools {

namespace {

struct Options {
  ModelFlags model;
  bool randomWeights = false;
  std::uint64_t seed = 0;
  std::string output, emit = "artifact";
  bool json = false;
  bool progress = false, noProgress = false;  // neither: phase lines when stderr is a terminal
};

int run(const Options& o) {
  const auto start = std::chrono::steady_clock::now();
  applyThreads(o.model.threads);
  OpenOptions so = o.model.openOptions();
  so.randomWeights = o.randomWeights;
  so.seed = o.seed;
  PhaseLog log("compile", showProgress(o.progress, o.noProgress));  // one line per phase on stderr (tools/progress.h)
  Model m = openModel(o.model.model, so);
  log.done("read " + oneLine(m.path) + " (" + m.form + ")");
  const Setting setting = o.model.setting(m, /*run=*/false);  // recompiling an artifact: its passes unless --passes
  checkMemoryFits(m.spec, setting, m.path);                   // before anything is planned
  // After the setting and the output are checked: a bad setting or output (-o the artifact itself) is the one
  // error line.
  if (m.artifact) {
    frontend::checkOutputPath(o.output);
    std::cerr << "txlc: note: recompiling " << m.path << " from its stored spec and weights" << std::endl;
  }

  nlohmann::json summary =
      emitCompiled(m, setting, o.output, o.emit, "/proc/self/exe", [&](const std::string& what) { log.done(what); });
  summary["random_weights"] = o.randomWeights;
  summary["seconds"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (o.json) std::cout << summary.dump(2) << std::endl;
  if (o.emit == "exe")
    std::cerr << "txlc: copied the libraries the executable needs beyond the C library to "
              << summary["library_folder"].get<std::string>() << "/ (keep it beside " << o.output << ")" << std::endl;
  std::cerr << "txlc: wrote " << o.output << " (" << (o.emit == "exe" ? "standalone executable, " : "") << "artifact "
            << summary["artifact_bytes"] << " bytes; " << summary["graphs"] << " graphs for batch " << setting.batch
            << ", qlen " << setting.qlen << ", mem_len " << setting.memLen << "; main graph "
            << summary["main_graph_nodes"] << " nodes)" << std::endl;
  return kExitOk;
}

}  // namespace

void registerCompile(CLI::App& app, Action& action) {
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("compile", "compile a model to an artifact (or a standalone executable)");
  o->model.add(*cmd);
  CLI::Option* random =
      cmd->add_flag("--random-weights", o->randomWeights, "deterministic random weights instead of a file");
  if (o->model.weightsOpt) random->excludes(o->model.weightsOpt);
  cmd->add_option("--seed", o->seed, "seed of --random-weights (default 0)");
  cmd->add_option("-o,--output", o->output, "the file to write")->required()->check(nonEmptyPath());
  cmd->add_option("--emit", o->emit, "artifact (default) or exe (a standalone executable)")
      ->check(CLI::IsMember({"artifact", "exe"}));
  cmd->add_flag("--json", o->json, "print a summary as JSON on stdout");
  CLI::Option* progress =
      cmd->add_flag("--progress", o->progress, "a line per phase on stderr, with its time; default on a terminal");
  cmd->add_flag("--no-progress", o->noProgress, "no phase lines, even on a terminal")->excludes(progress);
  cmd->callback([o, &action] {
    if (o->output == "-")
      throw CLI::ValidationError("-o -", "an artifact or executable is a file, not a stream for stdout; give a file");
    action = [o] { return run(*o); };
  });
}

}  // namespace txl::tools
