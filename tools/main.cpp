// tools/main.cpp - the txlc command: one subcommand per job.
//
// Exit codes are in tools/exit_codes.h. stdout carries only the result asked
// for; every message goes to stderr as one line "txlc: error: ...".
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <string>

#include "ir/check.h"
#include "tools/cli_checks.h"
#include "tools/command.h"
#include "tools/error_exit.h"
#include "tools/exit_codes.h"
#include "driver/build_info.h"
#include "driver/model.h"
#include "driver/model_summary.h"
#include "frontend/atomic_file.h"
#include "frontend/input_file.h"

int main(int argc, char** argv) {
  using namespace txl::tools;
  using txl::oneLine;
  CLI::App app{"txlc: a compiler for Transformer-XL language models on oneDNN", "txlc"};
  app.require_subcommand(1);
  app.set_version_flag("--version", [] {
    std::string text = txl::driver::versionText();
    if (!embeddedArtifact()) return text;
    // A standalone executable names the model it carries first.
    try {
      const nlohmann::json d = describeModel(openModel(kEmbeddedModelPath, {}));
      const nlohmann::json& sp = d["spec"];
      return "standalone executable of model " + d["model_id"].get<std::string>() + " (" +
             std::to_string(sp.value("n_layer", 0)) + " layers, d_model " + std::to_string(sp.value("d_model", 0)) +
             ", " + std::to_string(sp.value("n_token", 0)) + " tokens; `info` describes it)\n" + text;
    } catch (const txl::Error& e) {
      return "standalone executable whose model cannot be read: " + oneLine(e.what()) + "\n" + text;
    }
  });
  // Usage hints name the program as it was invoked: a standalone executable
  // is not called txlc.
  std::string program = argc > 0 && argv[0] ? std::filesystem::path(argv[0]).filename().string() : "";
  program = program.empty() ? "txlc" : oneLine(txl::clip(program));
  Action action;
  txl::frontend::protectInputs();     // -o never replaces a file this command reads
  txl::frontend::guardMappedFiles();  // a mapped file truncated under a run: one error line
  try {
    detectEmbeddedArtifact(argv[0]);  // a standalone executable: MODEL is the artifact it carries
  } catch (const txl::Error& e) {
    std::cerr << "txlc: error: " << oneLine(e.what()) << std::endl;
    return kExitBadInput;
  }
  registerBench(app, action);
  if (!embeddedArtifact()) registerConformance(app, action);
  if (!embeddedArtifact()) registerCompile(app, action);
  if (!embeddedArtifact()) registerInspect(app, action);
  registerScore(app, action);
  registerGenerate(app, action);
  registerServe(app, action);
  registerRun(app, action);
  if (!embeddedArtifact()) registerImport(app, action);
  registerInfo(app, action);
  if (!embeddedArtifact()) registerCompletion(app, action);
  if (!embeddedArtifact()) registerManpage(app, action);
  // An unknown command is named as such: CLI11 would only say that a
  // subcommand is required.
  if (argc > 1 && argv[1][0] != '-') {
    const std::string name = argv[1];
    const auto named = app.get_subcommands([&](CLI::App* c) { return c->check_name(name); });
    if (named.empty()) {
      std::string known;
      std::vector<std::string> names;
      for (const CLI::App* c : app.get_subcommands([](CLI::App* c) { return !c->get_group().empty(); })) {
        known += (known.empty() ? "" : ", ") + c->get_name();
        names.push_back(c->get_name());
      }
      const std::string near = closestName(name, names);
      std::cerr << "txlc: error: unknown command '" << oneLine(txl::clip(name)) << "'"
                << (near.empty() ? "" : " (did you mean '" + near + "'?)") << "; expected one of: " << known
                << " (run '" << program << " --help')" << std::endl;
      return kExitUsage;
    }
    // -m MODEL, --model MODEL, --model=MODEL (llama.cpp's spellings)
    // anywhere: MODEL becomes the first positional, so that the positionals
    // after it fill FILE, not MODEL a second time.
    for (int i = 2; i < argc && !embeddedArtifact(); ++i) {
      const std::string a = argv[i];
      if (a == "--") break;
      if ((a == "-m" || a == "--model") && i + 1 < argc) {
        char* value = argv[i + 1];
        std::rotate(argv + 2, argv + i, argv + i + 2);  // "-m MODEL" first
        argv[2] = value;                                // then MODEL alone
        std::copy(argv + 4, argv + argc, argv + 3);
        --argc;
        break;
      }
      if (a.starts_with("--model=")) {
        char* value = argv[i] + 8;
        std::rotate(argv + 2, argv + i, argv + i + 1);
        argv[2] = value;
        break;
      }
    }
    // A standalone executable's MODEL is the one it carries: -m naming
    // this executable is taken (and dropped), -m naming another is refused.
    for (int i = 2; i < argc && embeddedArtifact(); ++i) {
      const std::string a = argv[i];
      if (a == "--") break;
      const bool separate = a == "-m" || a == "--model";
      if (!separate && !a.starts_with("--model=")) continue;
      const std::string value = separate ? (i + 1 < argc ? argv[i + 1] : "") : a.substr(8);
      std::error_code ec;
      if (!value.empty() && std::filesystem::equivalent(value, "/proc/self/exe", ec)) {
        const int n = separate ? 2 : 1;
        std::copy(argv + i + n, argv + argc, argv + i);
        argc -= n;
        break;
      }
      std::cerr << "txlc: error: " << (separate ? a : std::string("--model")) << " "
                << oneLine(txl::clip(value.empty() ? "(no value)" : value)) << ": " << program
                << " runs the model it carries ('" << program
                << " info' describes it); drop -m, or run another model with txlc " << oneLine(txl::clip(name))
                << " MODEL" << std::endl;
      return kExitUsage;
    }
    // A flag the command does not take is named first, with the nearest it does take.
    if (const std::string m = unknownFlagMessage(*named.front(), 2, argc, argv); !m.empty()) {
      std::cerr << "txlc: error: " << oneLine(m) << " (run '" << program << " " << oneLine(txl::clip(name))
                << " --help')" << std::endl;
      return kExitUsage;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "txlc: error: " << oneLine(e.what()) << " (run '" << program << " --help')" << std::endl;
    return kExitUsage;
  }
  try {
    return action ? action() : kExitUsage;
  } catch (const std::exception&) {
    const auto [code, line] = describeCurrentException();
    std::cerr << "txlc: " << line << std::endl;
    return code;
  }
}
