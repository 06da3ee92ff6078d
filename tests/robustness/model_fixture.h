// tests/robustness/model_fixture.h - a conformance case's model, compiled, and token streams for it.
#pragma once

#include <cstdint>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "frontend/model_spec.h"
#include "frontend/safetensors.h"
#include "frontend/weights.h"
#include "driver/compile.h"

namespace txl::test {

// The model of tests/conformance/<name>, with its weights, compiled for
// `backend` with the default pipeline (or the literal graph: `literal`).
inline std::shared_ptr<backend::CompiledModel> conformanceModel(const std::string& name, const std::string& backend,
                                                                std::int64_t batch = 1, bool literal = false) {
  const std::string dir = std::string(TXL_TEST_DATA_DIR) + "/conformance/" + name;
  std::ifstream f(dir + "/case.json");
  std::stringstream text;
  text << f.rdbuf();
  frontend::ModelSpec spec = frontend::parseModelSpec(nlohmann::json::parse(text.str())["config"], dir + "/case.json");
  auto file = frontend::SafetensorsFile::open(dir + "/weights.safetensors");
  frontend::WeightMap weights = frontend::bindWeights(spec, file);
  const driver::Model model = driver::modelFrom(spec, weights);
  driver::Setting setting = driver::defaultSetting(model);
  setting.batch = batch;
  setting.backend = backend;
  if (literal) setting.pipeline.passes = std::vector<std::string>{};
  driver::resolvePipeline(setting);
  return driver::compile(model, setting);
}

// `segments` segments of i64[qlen, batch] token ids in [0, nToken), seeded.
inline std::vector<ir::Tensor> tokenStream(std::uint64_t seed, int segments, std::int64_t qlen, std::int64_t batch,
                                           std::int64_t nToken) {
  std::mt19937_64 rng(seed);
  std::vector<ir::Tensor> out;
  for (int s = 0; s < segments; ++s) {
    ir::Tensor t = ir::Tensor::zeros(ir::TensorType{ir::DType::I64, {qlen, batch}});
    for (auto& v : t.span<std::int64_t>()) v = std::int64_t(rng() % std::uint64_t(nToken));
    out.push_back(std::move(t));
  }
  return out;
}

// The bytes of a tensor, for bit-for-bit comparison.
inline std::string bytesOf(const ir::Tensor* t) {
  return t ? std::string(static_cast<const char*>(t->raw()), t->bytes()) : std::string();
}

}  // namespace txl::test
