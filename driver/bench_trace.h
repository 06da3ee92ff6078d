// driver/bench_trace.h - the profiled steps of `txlc bench --profile` as a
// Chrome / Perfetto trace (`--trace FILE.json`; open it in ui.perfetto.dev or
// chrome://tracing).
//
// Trace Event Format: {"traceEvents": [...], "displayTimeUnit": "ms"}, with
// times in microseconds from the first profiled segment. Each case is a
// process (pid = its number from 1, named by an "M" process_name event with
// its setting); each profiled segment (BenchReport::profileRuns, the last
// kMaxProfileRuns of the case) is a complete ("X") event "forward" whose
// steps are nested "X" events named as the profile prints them ("op node",
// e.g. "linear %48"; cat the op; args primitive, impl, serial). A step's
// duration is its measured time (the plan waits after every step when
// profiling); the steps are laid end to end from the segment's start.
//
//   nlohmann::json t = benchTraceJson(reports);   // then frontend::AtomicFile
#pragma once

#include <vector>

#include <nlohmann/json.hpp>

#include "driver/bench.h"

namespace txl::driver {

nlohmann::json benchTraceJson(const std::vector<BenchReport>& reports);

}  // namespace txl::driver
