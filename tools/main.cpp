// tools/main.cpp - the txlc command: one subcommand per job.
//
// Exit codes are in tools/exit_codes.h. stdout carries only the result asked
// for; every message goes to stderr as one line "txlc: error: ...".
#include <iostream>

#include "ir/check.h"
#include "tools/command.h"
#include "tools/exit_codes.h"
#include "tools/model_source.h"

int main(int argc, char** argv) {
  using namespace txl::tools;
  CLI::App app{"txlc: a compiler for Transformer-XL language models on oneDNN", "txlc"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "txlc 0.1.0");
  Action action;
  registerBench(app, action);
  detectEmbeddedArtifact();  // a standalone executable: MODEL is the artifact it carries
  if (!embeddedArtifact()) registerConformance(app, action);
  if (!embeddedArtifact()) registerCompile(app, action);
  if (!embeddedArtifact()) registerInspect(app, action);
  registerScore(app, action);
  registerGenerate(app, action);
  registerRun(app, action);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "txlc: error: " << e.what() << " (run 'txlc --help')" << std::endl;
    return kExitUsage;
  }
  try {
    return action ? action() : kExitUsage;
  } catch (const txl::Error& e) {
    std::cerr << "txlc: error: " << e.what() << std::endl;
    return kExitBadInput;
  } catch (const txl::InternalError& e) {
    std::cerr << "txlc: " << e.what() << std::endl;
    return kExitInternal;
  } catch (const std::bad_alloc&) {
    std::cerr << "txlc: error: out of memory" << std::endl;
    return kExitBadInput;
  } catch (const std::exception& e) {
    std::cerr << "txlc: internal error: " << e.what() << std::endl;
    return kExitInternal;
  }
}
