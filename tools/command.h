// tools/command.h - how a txlc subcommand plugs into main().
//
// Each tools/cmd_<name>.cpp defines one register function: it adds its
// subcommand and options to the app, and when CLI11 selects it, stores the
// action main() runs. Actions return an exit code (tools/exit_codes.h) and
// may throw txl::Error for bad input. A command is a thin layer over the
// driver (driver/compile.h): it turns flags into a driver::Setting and calls it.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

#include "driver/setting.h"

namespace txl::tools {

using namespace txl::driver;  // the commands are written against the driver's API

using Action = std::function<int()>;

void registerConformance(CLI::App& app, Action& action);
void registerInspect(CLI::App& app, Action& action);  // cmd_inspect.cpp
void registerBench(CLI::App& app, Action& action);    // cmd_bench.cpp: bench, bench-probe
void registerCompile(CLI::App& app, Action& action);
void registerScore(CLI::App& app, Action& action);
void registerGenerate(CLI::App& app, Action& action);
void registerServe(CLI::App& app, Action& action);  // cmd_serve.cpp
void registerRun(CLI::App& app, Action& action);
void registerImport(CLI::App& app, Action& action);      // cmd_import.cpp
void registerInfo(CLI::App& app, Action& action);        // cmd_info.cpp
void registerCompletion(CLI::App& app, Action& action);  // cmd_completion.cpp: after the commands it lists
void registerManpage(CLI::App& app, Action& action);     // cmd_manpage.cpp: hidden, after the commands it describes

// Options every command that builds graphs shares: --backend, --passes,
// --disable-pass, --print-after-all, --print-after, --time-passes.
struct PipelineFlags {
  std::string backend = "onednn";
  std::string passes;
  std::vector<std::string> disabled;
  bool printAfterAll = false;
  std::vector<std::string> printAfter;
  bool timePasses = false;
  std::string memory;          // --memory kv|hidden; empty: the form the passes make (kv for the default pipeline)
  std::string precision;       // --precision f32|bf16; empty: the model's own (an artifact's), else f32
  bool precisionList = false;  // set before add(): --precision takes a comma-separated list (bench's sweep)

  void add(CLI::App& cmd, bool withBackend = true);
  // Sets the backend and the pipeline of `s`; validates pass names (txl::Error).
  void apply(Setting& s) const;
  // The backend and pass selection (driver::selectPipeline applies it).
  SettingChoice choice() const;
  // The pass manager's printing and timing (--print-after-all, --print-after, --time-passes).
  void applyDiagnostics(Setting& s) const;
};

}  // namespace txl::tools
