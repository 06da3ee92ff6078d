// driver/emit.h - `txlc compile`'s output: a model compiled to an artifact file or a standalone executable.
//
// Builds and optimizes the segment graphs of the setting's shape buckets
// (driver/compile.h buildArtifact), compiles the main one on the setting's
// executor - it must lower there, and its plan's size is reported - and
// writes the artifact (driver/artifact.h) or a standalone executable: the
// txlc binary with the artifact appended (driver/standalone.h).
//
//   nlohmann::json summary = emitCompiled(m, s, "kjv.txla", "artifact");
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "driver/model.h"
#include "driver/setting.h"

namespace txl::driver {

// Writes `output` ("artifact" or "exe" for `emit`; `txlc` is the executable
// an "exe" copies, by default the running one) and returns the summary of
// `txlc compile --json` without its "seconds": output, emit, model_id,
// batch, qlen, mem_len, graphs, main_graph_nodes, passes, main_plan_steps
// and main_plan_arena_bytes (a oneDNN plan), artifact_bytes; for an "exe"
// also libraries and library_folder (the copies beside it, driver/runtime_libraries.h).
// `phaseDone`, when given, is called as each phase ends, with what it did
// ("built 4 graphs", "planned the main graph (212 steps)", "wrote OUT").
nlohmann::json emitCompiled(const Model& m, const Setting& s, const std::string& output, const std::string& emit,
                            const std::string& txlc = "/proc/self/exe",
                            const std::function<void(const std::string&)>& phaseDone = {});

}  // namespace txl::driver
