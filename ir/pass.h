// ir/pass.h - the pass interface: a name and run(graph) -> changed, unchanged or an error.
//
// A pass never prints. It reports what it did (and, for fusions, what it
// skipped and why) as remarks in the PassContext; tools decide what to show.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/graph.h"
#include "ir/segment_abi.h"

namespace txl::ir {

class TargetInfo;
class ConstantEvaluator;

class PassResult {
 public:
  enum class Status { Unchanged, Changed, Failed };
  static PassResult changed() { return PassResult(Status::Changed, {}); }
  static PassResult unchanged() { return PassResult(Status::Unchanged, {}); }
  static PassResult changedIf(bool c) { return c ? changed() : unchanged(); }
  static PassResult failure(std::string message) { return PassResult(Status::Failed, std::move(message)); }

  Status status() const { return status_; }
  bool failed() const { return status_ == Status::Failed; }
  bool isChanged() const { return status_ == Status::Changed; }
  const std::string& error() const { return error_; }

 private:
  PassResult(Status s, std::string e) : status_(s), error_(std::move(e)) {}
  Status status_;
  std::string error_;
};

// What a pass tells its user: a fusion applied, or skipped with the reason.
struct Remark {
  std::string pass;
  bool applied = true;
  std::string message;
};

struct PassContext {
  const TargetInfo* target = nullptr;  // may be null: passes then assume every lowering is fast
  // The longest klen (mlen + qlen) the model runs: fold-positions builds the
  // position tables for it and reads suffixes. Empty: each graph's own klen.
  std::optional<std::int64_t> maxKlen;
  // The segment ABI the graph must keep (ir/segment_abi.h): when set, the
  // pass manager checks it after every pass.
  std::optional<SegmentSignature> segment;
  // The dtype of the state windows once the pipeline has run: bf16 when
  // bf16-state runs last (--precision bf16, passes::runPipeline sets it). A
  // pass that weighs a lowering reading them asks about that dtype.
  DType stateDType = DType::F32;
  // Set when the graph is being compiled: the pipeline then ends with
  // fold-constants, which evaluates the constant subgraphs through it
  // (ir/constant_evaluator.h). Null: the graph keeps them (inspect, artifacts).
  ConstantEvaluator* constants = nullptr;
  std::vector<Remark> remarks;

  void applied(std::string_view pass, std::string message) {
    remarks.push_back({std::string(pass), true, std::move(message)});
  }
  void skipped(std::string_view pass, std::string message) {
    remarks.push_back({std::string(pass), false, std::move(message)});
  }
};

class Pass {
 public:
  virtual ~Pass() = default;
  virtual std::string_view name() const = 0;
  virtual PassResult run(Graph& g, PassContext& ctx) = 0;
};

}  // namespace txl::ir
