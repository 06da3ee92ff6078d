// driver/conformance.h - run a conformance case through one session and
// compare every segment. Two formats: txl-conformance/1 (tests/conformance/*,
// computed by the authors' PyTorch code) and txl-conformance-hf/1
// (tests/conformance-hf/*, computed by Hugging Face's TransfoXLLMHeadModel);
// each case states its convention (tests/conformance-hf/FORMAT.md).
//
// For each segment: hidden, nll, logprob (where the case has it) and the
// memory of every slot after the segment, each against the case's tolerance:
// every element within atol + rtol * |want|, and rel_l2 = |got - want|_2 /
// |want|_2 within rel_l2.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "driver/setting.h"

namespace txl::driver {

struct TensorComparison {
  std::string name;  // "seg1.hidden", "seg0.mem2"
  double maxAbsError = 0;
  double maxViolation = 0;  // max |got - want| / (atol + rtol |want|); <= 1 passes
  double relL2 = 0;
  bool passed = true;
};

struct CaseResult {
  std::string name;
  std::string dir;
  bool passed = false;
  std::string error;  // a failure that stopped the case (bad file, ...)
  std::vector<TensorComparison> tensors;
  double atol = 0, rtol = 0, relL2 = 0;   // the case's tolerance
  bool memoryCompared = true;             // false in the kv memory form (the state is not hidden states)
  const TensorComparison* worst() const;  // the tensor closest to (or furthest past) its bound
};

// Never throws for a bad case: the error is reported in the result.
// The setting is the case model's own with `base` applied (backend, passes,
// precision, threads; a contradiction among them is refused before any case
// by resolving them: selectPipeline), then the case's batch and initial
// memory; `diagnostics` are the pass manager's (--print-after ...).
CaseResult runConformanceCase(const std::string& dir, const SettingChoice& base,
                              const ir::PassManagerOptions& diagnostics = {});

std::string formatCaseLine(const CaseResult& result);  // one line per case
nlohmann::json caseToJson(const CaseResult& result);

}  // namespace txl::driver
