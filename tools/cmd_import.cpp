// tools/cmd_import.cpp - `txlc import SRC [--spec SPEC] -o DIR`: a PyTorch checkpoint as a txlc model folder.
//
// SRC is a Hugging Face model folder (config.json + pytorch_model.bin, and
// vocab.pkl or vocab.txt), a pytorch_model.bin or state dict (the spec from
// --spec or a config.json beside it), or the authors' whole-model model.pt
// (its spec read from the pickled module). The pickles are interpreted, never
// run (frontend/torch_checkpoint.h). DIR gets config.json, model.safetensors
// and vocab.txt, written atomically, with the source's tensor names and
// convention; the weights are bound against the spec before anything is
// written, so DIR is a model every command accepts. What the reader changed
// (tied copies stored once, half precision widened) is noted on stderr.
#include <iostream>

#include "frontend/checkpoint_model.h"
#include "frontend/weights.h"
#include "ir/check.h"
#include "tools/cli_checks.h"
#include "tools/command.h"
#include "tools/exit_codes.h"
#include "tools/progress.h"

namespace txl::tools {

namespace {

struct Options {
  std::string source, spec, output;
  CLI::Option* specOpt = nullptr;
  bool progress = false, noProgress = false;  // neither: phase lines when stderr is a terminal
};

int run(const Options& o) {
  std::optional<std::string> spec;
  if (o.specOpt->count()) spec = o.spec;
  PhaseLog log("import", showProgress(o.progress, o.noProgress));  // one line per phase on stderr (tools/progress.h)
  frontend::CheckpointModel m = frontend::readCheckpointModel(o.source, spec);
  log.done("read " + std::to_string(m.tensors.size()) + " tensors from " + oneLine(o.source));
  frontend::bindWeights(m.spec, frontend::tensorSource(m));  // the folder must load as a model
  log.done("bound the weights against the spec");
  frontend::writeImportedModel(m, o.output);
  log.done("wrote " + oneLine(o.output));
  for (const auto& note : m.notes) std::cerr << "txlc: note: " << note << std::endl;
  std::cerr << "txlc: imported " << m.tensors.size() << " tensors" << (m.vocabulary.empty() ? "" : " and ")
            << (m.vocabulary.empty() ? std::string() : std::to_string(m.vocabulary.size()) + " symbols") << " ("
            << frontend::semanticsName(m.spec.semantics) << " semantics) into " << o.output << std::endl;
  return kExitOk;
}

}  // namespace

void registerImport(CLI::App& app, Action& action) {
  auto o = std::make_shared<Options>();
  CLI::App* cmd =
      app.add_subcommand("import", "a PyTorch checkpoint (Hugging Face or the authors') as a txlc model folder");
  cmd->add_option("source", o->source,
                  "a Hugging Face model folder, a pytorch_model.bin or state dict, or the authors' model.pt")
      ->required();
  o->specOpt =
      cmd->add_option("--spec", o->spec, "the model's spec, for a bare state dict (or to override the source's)");
  cmd->add_option("-o,--output", o->output, "the model folder to write (new, or empty)")
      ->required()
      ->check(nonEmptyPath());
  CLI::Option* progress =
      cmd->add_flag("--progress", o->progress, "a line per phase on stderr, with its time; default on a terminal");
  cmd->add_flag("--no-progress", o->noProgress, "no phase lines, even on a terminal")->excludes(progress);
  cmd->callback([o, &action] {
    if (o->output == "-")
      throw CLI::ValidationError("-o -", "import writes a model folder, not a stream for stdout; give a folder");
    action = [o] { return run(*o); };
  });
}

}  // namespace txl::tools
