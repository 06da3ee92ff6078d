// passes/registry.cpp - createPass() from passes.def.
#include "passes/registry.h"

#include "ir/check.h"
#include "passes/all_passes.h"

namespace txl::passes {

const std::vector<PassDescription>& registeredPasses() {
  static const std::vector<PassDescription> table = {
#define TXL_PASS(cls, name, summary) {name, summary},
#include "passes/passes.def"
#undef TXL_PASS
  };
  return table;
}

std::unique_ptr<ir::Pass> createPass(const std::string& name) {
#define TXL_PASS(cls, passName, summary) \
  if (name == passName) return std::make_unique<cls>();
#include "passes/passes.def"
#undef TXL_PASS
  std::string known;
  for (const auto& p : registeredPasses()) known += (known.empty() ? "" : ", ") + p.name;
  throw Error("unknown pass '" + clip(name) + "' (known: " + known + ")");
}

}  // namespace txl::passes
