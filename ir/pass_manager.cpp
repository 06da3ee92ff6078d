// ir/pass_manager.cpp - PassManager::run.
#include "ir/pass_manager.h"

#include <chrono>
#include <cstdio>
#include <ostream>

#include "ir/check.h"
#include "ir/printer.h"
#include "ir/verifier.h"

namespace txl::ir {

std::vector<std::string> PassManager::passNames() const {
  std::vector<std::string> names;
  for (const auto& p : passes_) names.emplace_back(p->name());
  return names;
}

bool PassManager::run(Graph& g, PassContext& ctx) {
  bool anyChange = false;
  timings_.clear();
  if (options_.verifyEach) verifyOrThrow(g, "input graph is invalid");
  for (const auto& pass : passes_) {
    std::string name(pass->name());
    auto start = std::chrono::steady_clock::now();
    PassResult result = pass->run(g, ctx);
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    if (result.failed()) throw Error("pass '" + name + "' failed: " + result.error());
    if (options_.verifyEach)
      if (auto problem = verify(g)) throw Error("pass '" + name + "' broke the graph: " + *problem);
    if (ctx.segment)
      if (auto problem = verifySegment(g, *ctx.segment))
        throw Error("pass '" + name + "' broke the segment ABI: " + *problem);
    timings_.push_back({name, ms, result.isChanged()});
    anyChange |= result.isChanged();
    if (options_.log && (options_.printAfterAll || options_.printAfter.count(name)))
      *options_.log << "// ----- IR after " << name << (result.isChanged() ? "" : " (unchanged)") << " -----\n"
                    << print(g);
  }
  if (options_.log && options_.timePasses) {
    double total = 0;
    for (const auto& t : timings_) total += t.milliseconds;
    *options_.log << "===-------------------------------------===\n  pass execution timing report\n";
    for (const auto& t : timings_) {
      char line[160];
      std::snprintf(line, sizeof line, "  %9.3f ms  %5.1f%%  %s%s\n", t.milliseconds,
                    total > 0 ? 100.0 * t.milliseconds / total : 0.0, t.pass.c_str(), t.changed ? "" : " (unchanged)");
      *options_.log << line;
    }
    char line[96];
    std::snprintf(line, sizeof line, "  %9.3f ms  100.0%%  total\n", total);
    *options_.log << line;
  }
  return anyChange;
}

}  // namespace txl::ir
