// driver/setting.cpp - memoryForm().
#include "driver/setting.h"

#include <algorithm>

namespace txl::driver {

std::string memoryForm(const Setting& s) {
  const std::vector<std::string> selected = passes::selectedPasses(s.pipeline);
  return std::find(selected.begin(), selected.end(), "cache-projected-memory") != selected.end() ? "kv" : "hidden";
}

}  // namespace txl::driver
