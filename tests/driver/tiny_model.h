// tests/driver/tiny_model.h - the small model the driver tests run: the tiny_base conformance case's spec,
// and deterministic token sequences for it.
#pragma once

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>
#include <nlohmann/json.hpp>

#include "frontend/model_spec.h"

namespace txl::testing {

inline frontend::ModelSpec tinySpec() {
  std::ifstream f(std::string(TXL_TEST_DATA_DIR) + "/conformance/tiny_base/case.json");
  return frontend::parseModelSpec(nlohmann::json::parse(f).at("config"), "case.json");
}

// n token ids below nToken; another seed gives another sequence.
inline std::vector<std::int64_t> sequence(std::int64_t n, std::int64_t nToken, std::int64_t seed = 0) {
  std::vector<std::int64_t> ids(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) ids[std::size_t(i)] = (i * 37 + 11 + seed * (11 + i * i)) % nToken;
  return ids;
}

}  // namespace txl::testing
