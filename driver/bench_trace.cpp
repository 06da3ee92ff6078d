// driver/bench_trace.cpp - benchTraceJson() (bench_trace.h).
#include "driver/bench_trace.h"

#include <algorithm>
#include <limits>
#include <string>

#include "driver/build_info.h"

namespace txl::driver {

nlohmann::json benchTraceJson(const std::vector<BenchReport>& reports) {
  double origin = std::numeric_limits<double>::infinity();
  for (const BenchReport& r : reports)
    for (const ProfileRun& run : r.profileRuns) origin = std::min(origin, run.startUs);
  nlohmann::json events = nlohmann::json::array();
  for (std::size_t c = 0; c < reports.size(); ++c) {
    const BenchReport& r = reports[c];
    const int pid = int(c) + 1;
    const std::string name = "batch " + std::to_string(r.batch) + ", qlen " + std::to_string(r.qlen) + ", mem_len " +
                             std::to_string(r.memLen) + ", " + std::to_string(r.threads) + " threads, " + r.precision;
    events.push_back({{"ph", "M"}, {"name", "process_name"}, {"pid", pid}, {"tid", 0}, {"args", {{"name", name}}}});
    events.push_back(
        {{"ph", "M"}, {"name", "process_sort_index"}, {"pid", pid}, {"tid", 0}, {"args", {{"sort_index", pid}}}});
    for (std::size_t k = 0; k < r.profileRuns.size(); ++k) {
      const ProfileRun& run = r.profileRuns[k];
      const double start = run.startUs - origin;
      events.push_back({{"ph", "X"},
                        {"name", "forward"},
                        {"cat", "segment"},
                        {"pid", pid},
                        {"tid", 0},
                        {"ts", start},
                        {"dur", run.wallUs},
                        {"args", {{"profiled_segment", k + 1}}}});
      double ts = start;
      for (std::size_t i = 0; i < run.stepUs.size() && i < r.profile.size(); ++i) {
        const ProfileRow& step = r.profile[i];
        if (run.stepUs[i] == 0) continue;  // a step of the thread variant this run did not take
        events.push_back({{"ph", "X"},
                          {"name", step.op + " " + step.node},
                          {"cat", step.op},
                          {"pid", pid},
                          {"tid", 0},
                          {"ts", ts},
                          {"dur", run.stepUs[i]},
                          {"args", {{"primitive", step.primitive}, {"impl", step.impl}, {"serial", step.serial}}}});
        ts += run.stepUs[i];
      }
    }
  }
  return {{"traceEvents", events}, {"displayTimeUnit", "ms"}, {"otherData", {{"build", buildJson()}}}};
}

}  // namespace txl::driver
