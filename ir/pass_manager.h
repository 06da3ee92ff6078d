// ir/pass_manager.h - runs a pipeline of passes over a graph.
//
// After every pass the verifier runs, and the segment ABI check when the
// context carries a signature (PassContext::segment); a pass that breaks the
// graph is named in the error ("pass 'fuse-rel-shift' broke the graph: %12 = ..."). The manager
// can print the IR after every pass or after chosen ones, and times each pass.
//
//   PassManager pm(options);
//   pm.add(std::make_unique<DeadCodeElimination>());
//   pm.run(graph, ctx);   // throws txl::Error on failure
#pragma once

#include <iosfwd>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "ir/pass.h"

namespace txl::ir {

struct PassManagerOptions {
  bool verifyEach = true;
  bool printAfterAll = false;
  std::set<std::string> printAfter;  // pass names
  bool timePasses = false;
  std::ostream* log = nullptr;  // where IR dumps and timings go (tools pass std::cerr)
};

struct PassTiming {
  std::string pass;
  double milliseconds = 0;
  bool changed = false;
};

class PassManager {
 public:
  explicit PassManager(PassManagerOptions options = {}) : options_(std::move(options)) {}

  void add(std::unique_ptr<Pass> pass) { passes_.push_back(std::move(pass)); }
  std::vector<std::string> passNames() const;

  // Runs every pass in order. Returns whether any pass changed the graph.
  bool run(Graph& g, PassContext& ctx);
  const std::vector<PassTiming>& timings() const { return timings_; }

 private:
  PassManagerOptions options_;
  std::vector<std::unique_ptr<Pass>> passes_;
  std::vector<PassTiming> timings_;
};

}  // namespace txl::ir
