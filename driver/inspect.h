// driver/inspect.h - the segment graph of a model at a stage, or what the passes bought: what `txlc inspect` prints.
//
// The segment is qlen tokens (default: the spec's tgt_len) against mlen
// remembered positions (default: its mem_len, the steady state; 0 for
// attn_type 2), batch 1 unless asked. The input stage is the frontend's
// literal graph; the optimized stage runs the pipeline of the setting as
// compile would (driver/compile.h buildOptimizedGraph). Stats: per graph the
// node count per op, FLOPs and bytes moved per segment (driver/graph_stats.h),
// then the fusion report from the passes' remarks (docs/PASSES.md).
//
//   InspectRequest r;
//   r.format = "dot";
//   std::cout << inspectModel(spec, setting, r);
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "backend/session.h"
#include "driver/setting.h"
#include "frontend/model_spec.h"
#include "ir/segment.h"

namespace txl::driver {

struct InspectRequest {
  std::string stage = "optimized";  // "input" or "optimized"
  std::string format = "text";      // "text", "json" or "dot" (stats: text or json)
  bool stats = false;
  std::int64_t batch = 1;
  std::optional<std::int64_t> qlen, mlen;
  // The segment's outputs (--outputs): both is what `run` gives; `score`
  // asks for the NLL only, `generate` for log-probabilities, `bench`
  // without --nll for neither (the hidden states only).
  bool logprob = true, nll = true;
};

// txl::Error (one line naming the flag) for a stage, format or batch out of range.
void checkInspectRequest(const InspectRequest& r);
// Sets r.logprob and r.nll from an --outputs value: "logprob,nll" (or
// "nll,logprob"), "nll", "logprob" or "hidden"; txl::Error otherwise.
void setInspectOutputs(InspectRequest& r, const std::string& outputs);
// The choices of --outputs, for the command line's own check.
inline const char* const kInspectOutputs[] = {"logprob,nll", "nll,logprob", "nll", "logprob", "hidden"};
inline constexpr const char* kInspectOutputsExpected = "'logprob,nll', 'nll', 'logprob' or 'hidden'";
// The qlen of the segment inspect shows: --qlen, default the spec's tgt_len
// (the setting to inspect under is made with it). txl::Error naming --qlen
// or --mlen when out of range.
std::int64_t inspectQlen(const frontend::ModelSpec& spec, const InspectRequest& r);
// The segment inspect shows, and plans with --memory-plan, under `setting`:
// inspectQlen() tokens against mlen remembered positions (default: mem_len,
// the steady state; 0 for attn_type 2), the outputs asked, unpadded.
ir::Segment inspectSegment(const frontend::ModelSpec& spec, const Setting& setting, const InspectRequest& r);
// `text` with every "node <id>" (the backend's labels name nodes by
// ir::OpData::id) as the %N that `g` prints for that node: the graph
// compiled folds its constant subgraphs, so its own numbering would not
// match inspect's listing; ids survive the folding. Ids `g` lacks are kept.
std::string renumberNodes(const std::string& text, const ir::Graph& g);
// The graph (text, graph JSON or DOT) or the stats (text or JSON) of `spec`'s
// segment, under the setting `choice` resolves for the spec (batch and qlen
// those of `r`); `diagnostics` are the pass manager's (--print-after ...).
std::string inspectModel(const frontend::ModelSpec& spec, const SettingChoice& choice,
                         const ir::PassManagerOptions& diagnostics, const InspectRequest& r);

}  // namespace txl::driver
