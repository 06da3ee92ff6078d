// driver/emit.cpp - emitCompiled().
#include "driver/emit.h"

#include <filesystem>

#include "driver/compile.h"
#include "driver/runtime_libraries.h"
#include "driver/standalone.h"
#include "ir/check.h"
#include "ir/json_io.h"

namespace txl::driver {

nlohmann::json emitCompiled(const Model& m, const Setting& s, const std::string& output, const std::string& emit,
                            const std::string& txlc) {
  if (emit != "artifact" && emit != "exe") throw Error("--emit: expected 'artifact' or 'exe', got '" + emit + "'");
  checkMemoryFits(m.spec, s, m.path);  // before anything is planned
  Artifact a = buildArtifact(m, s);
  // Compile the main graph once: it must lower on this executor.
  auto executor = makeExecutor(s.backend);
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
  std::vector<std::byte> bytes = serializeArtifact(a);
  if (emit == "exe") {
    // The libraries it needs beside it (driver/runtime_libraries.h), then the executable.
    const std::filesystem::path out(output);
    const std::string libs =
        ((out.parent_path().empty() ? std::filesystem::path(".") : out.parent_path()) / kRuntimeLibraryFolder).string();
    summary["libraries"] = bundleRuntimeLibraries(txlc, libs);
    summary["library_folder"] = libs;
    writeStandalone(output, bytes, txlc);
  } else {
    writeArtifact(output, a);
  }
  summary["artifact_bytes"] = bytes.size();
  return summary;
}

}  // namespace txl::driver
