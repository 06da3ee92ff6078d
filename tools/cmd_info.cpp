// tools/cmd_info.cpp - `txlc info MODEL`: what a model, artifact or standalone executable is (driver/model_summary.h).
//
// Reads the model as every command does (weights included: the model id is
// their content hash) and prints its description; --json gives the same
// keys on stdout (docs/CLI.md).
#include <filesystem>
#include <iostream>

#include "driver/model_summary.h"
#include "driver/standalone.h"
#include "tools/cli_checks.h"
#include "frontend/file_form.h"
#include "tools/command.h"
#include "tools/exit_codes.h"
#include "tools/model_flags.h"

namespace txl::tools {

void registerInfo(CLI::App& app, Action& action) {
  struct Options {
    ModelFlags model;
    bool json = false;
  };
  auto o = std::make_shared<Options>();
  CLI::App* cmd =
      app.add_subcommand("info", "what a model, artifact or standalone executable is: spec, semantics, sizes, setting");
  addModelArgument(*cmd, o->model.model,
                   "a model directory, a spec file (with --weights), a PyTorch checkpoint or safetensors file with "
                   "config.json beside it, an artifact or a standalone executable (also -m MODEL)");
  if (!embeddedArtifact())
    o->model.weightsOpt = cmd->add_option("--weights", o->model.weights, "weights for a spec file");
  o->model.vocabOpt = cmd->add_option("--vocab", o->model.vocab, "a vocabulary file for a spec file");
  cmd->add_flag("--json", o->json, "the description as JSON on stdout");
  cmd->callback([o, &action] {
    action = [o] {
      const OpenOptions open = o->model.openOptions();
      const std::string& path = o->model.model;
      // A spec file without weights: its spec and what follows from it. Any
      // other file (a checkpoint, safetensors weights, an artifact) is opened
      // whole, or named for what it is.
      const bool specOnly = !open.weights && std::filesystem::is_regular_file(path) &&
                            frontend::sniffFile(path) == frontend::FileForm::Json;
      const nlohmann::json d =
          describeModel(specOnly ? modelFrom(openSpec(path, open), {}, path) : openModel(path, open));
      if (o->json) std::cout << d.dump(2) << std::endl;
      else std::cout << modelSummaryText(d) << std::flush;
      return kExitOk;
    };
  });
}

}  // namespace txl::tools
