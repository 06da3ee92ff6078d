// passes/registry.h - create passes by name, list them, build pipelines.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ir/pass.h"

namespace txl::passes {

struct PassDescription {
  std::string name;
  std::string summary;
};

const std::vector<PassDescription>& registeredPasses();
// Throws txl::Error listing the known names when `name` is unknown.
std::unique_ptr<ir::Pass> createPass(const std::string& name);

}  // namespace txl::passes
