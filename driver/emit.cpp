// driver/emit.cpp - emitCompiled().
#include "driver/emit.h"

#include <sys/stat.h>

#include <filesystem>

#include "driver/compile.h"
#include "frontend/atomic_file.h"
#include "driver/runtime_libraries.h"
#include "driver/standalone.h"
#include "ir/check.h"
#include "ir/json_io.h"

namespace txl::driver {

namespace {

// The txlc executable an --emit exe copies is one of the command's inputs.
void noteTxlcExecutable(const std::string& txlc) {
  struct stat st {};
  if (::stat(txlc.c_str(), &st) == 0) frontend::noteInputFile("the txlc executable it copies", st.st_dev, st.st_ino);
}

}  // namespace

nlohmann::json emitCompiled(const Model& m, const Setting& s, const std::string& output, const std::string& emit,
                            const std::string& txlc, const std::function<void(const std::string&)>& phaseDone) {
  const auto phase = [&](const std::string& what) {
    if (phaseDone) phaseDone(what);
  };
  if (emit != "artifact" && emit != "exe") throw Error("--emit: expected 'artifact' or 'exe', got '" + emit + "'");
  checkMemoryFits(m.spec, s, m.path);  // before anything is planned
  Artifact a = buildArtifact(m, s);
  phase("built and optimized " + std::to_string(a.graphs.size()) + " graphs");
  // Compile the main graph once: it must lower on this executor.
  auto executor = makeExecutor(s);
  ir::Graph main = ir::fromJson(a.graphs.front().graph, "main graph");
  const std::size_t mainNodes = main.size();
  auto plan = executor->compile(main, a.weights);
  nlohmann::json summary = {{"output", output},
                            {"emit", emit},
                            {"model_id", a.modelId},
                            {"batch", s.batch},
                            {"qlen", s.qlen},
                            {"mem_len", s.memLen},
                            {"graphs", a.graphs.size()},
                            {"main_graph_nodes", mainNodes},
                            {"passes", *a.setting.pipeline.passes}};
  if (plan->hasSteps()) {
    summary["main_plan_steps"] = plan->steps().size();
    summary["main_plan_arena_bytes"] = plan->arenaBytes();
  }
  phase(plan->hasSteps() ? "planned the main graph (" + std::to_string(plan->steps().size()) + " steps)"
                         : "checked the main graph");
  std::vector<std::byte> bytes = serializeArtifact(a);
  if (emit == "exe") {
    // The libraries it needs beside it (driver/runtime_libraries.h), then the
    // executable; the destination is checked first, and the libraries this
    // run added are removed again if the executable is not written.
    const std::filesystem::path out(output);
    const std::filesystem::path dir = out.parent_path().empty() ? std::filesystem::path(".") : out.parent_path();
    std::error_code ec;
    if (!std::filesystem::is_directory(dir, ec))
      throw Error(oneLine(output) + ": the folder " + oneLine(dir.string()) + " does not exist");
    noteTxlcExecutable(txlc);  // -o must not replace the executable it copies
    if (!frontend::checkOutputPath(output) && std::filesystem::exists(std::filesystem::symlink_status(out, ec)))
      throw Error(oneLine(output) + ": is not a regular file; an executable is written as a new file or over one");
    const std::string libs = (dir / kRuntimeLibraryFolder).string();
    RuntimeLibraryBundle bundle = bundleRuntimeLibraries(txlc, libs);
    summary["libraries"] = bundle.names;
    summary["library_folder"] = libs;
    writeStandalone(output, bytes, txlc);
    bundle.keep();
  } else {
    writeArtifact(output, a);
  }
  phase("wrote " + oneLine(output));
  summary["artifact_bytes"] = bytes.size();
  return summary;
}

}  // namespace txl::driver
