// tests/passes/numeric_support.cpp - seeded data and output comparison.
#include "tests/passes/numeric_support.h"

#include <cmath>
#include <limits>
#include <random>

#include "ir/bf16.h"
#include "ir/check.h"

namespace txl::testing {

using ir::DType;
using ir::Node;
using ir::OpKind;
using ir::Tensor;

namespace {

Tensor uniform(const ir::TensorType& type, std::mt19937_64& rng, double lo, double hi) {
  TXL_CHECK(type.dtype == DType::F32, "random data is f32 or i64, got " + type.str());
  Tensor t = Tensor::zeros(type);
  std::uniform_real_distribution<float> dist{float(lo), float(hi)};
  for (float& v : t.span<float>()) v = dist(rng);
  return t;
}

std::int64_t idBound(const ir::Graph& g, Node ids) {
  std::int64_t bound = std::numeric_limits<std::int64_t>::max();
  for (Node u : g.users(ids)) {
    if (g.kind(u) == OpKind::Pick) bound = std::min(bound, g.type(g.operand(u, 0)).shape.back());
    if (g.kind(u) == OpKind::LogprobPick || g.kind(u) == OpKind::LogprobPickGathered)
      bound = std::min(bound, g.op(u).attrs.getInt("classes"));
    if (g.kind(u) == OpKind::Embedding)
      bound = std::min(bound, g.op(u).attrs.getInt("lo") + g.type(g.operand(u, 0)).shape[0]);
  }
  return bound == std::numeric_limits<std::int64_t>::max() ? 8 : bound;
}

}  // namespace

ir::TensorMap randomWeights(const ir::Graph& g, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  ir::TensorMap out;
  for (Node n : g.nodesOfKind(OpKind::Weight)) {
    const std::string& name = g.op(n).attrs.getString("name");
    if (!out.count(name)) out[name] = uniform(g.type(n), rng, -0.5, 0.5);
  }
  return out;
}

ir::TensorMap randomInputs(const ir::Graph& g, std::uint64_t seed) {
  std::mt19937_64 rng(seed + 1000);
  ir::TensorMap out;
  for (Node n : g.nodes()) {
    // A mem_window is handed its state window (memory rows first), like a mem_read its memory.
    if (g.kind(n) != OpKind::Input && g.kind(n) != OpKind::MemRead && g.kind(n) != OpKind::MemWindow) continue;
    std::string name =
        g.kind(n) == OpKind::Input ? g.op(n).attrs.getString("name") : backend::memName(g.op(n).attrs.getInt("slot"));
    const ir::TensorType& type = g.type(n);
    if (type.dtype == DType::I64) {
      Tensor t = Tensor::zeros(type);
      std::uniform_int_distribution<std::int64_t> dist(0, idBound(g, n) - 1);
      for (auto& v : t.span<std::int64_t>()) v = dist(rng);
      out[name] = t;
    } else {
      out[name] = ir::convertFloat(uniform({DType::F32, type.shape}, rng, -1.0, 1.0), type.dtype);
    }
  }
  return out;
}

ir::TensorMap inputsAs(const ir::Graph& g, const ir::TensorMap& inputs) {
  ir::TensorMap out = inputs;
  for (const auto& [name, bound] : randomInputs(g, 0)) {  // what g binds, by name and type
    auto it = out.find(name);
    if (it != out.end() && it->second.dtype() != bound.dtype() && bound.dtype() != DType::I64)
      it->second = ir::convertFloat(it->second, bound.dtype());
  }
  return out;
}

ir::TensorMap runGraph(backend::Executor& exe, const ir::Graph& g, const ir::TensorMap& weights,
                       const ir::TensorMap& inputs) {
  auto plan = exe.compile(g, weights);
  ir::TensorMap out;
  for (const auto& [name, t] : plan->run(inputs)) out[name] = t.clone();
  return out;
}

std::optional<std::string> compareOutputs(const ir::TensorMap& expected, const ir::TensorMap& actual, double rtol,
                                          double atol) {
  for (const auto& [name, e] : expected) {
    auto it = actual.find(name);
    if (it == actual.end()) return "output '" + name + "' is missing";
    const Tensor& a = it->second;
    if (a.type() != e.type()) return "output '" + name + "': " + e.type().str() + " vs " + a.type().str();
    if (e.dtype() != DType::F32) continue;
    for (std::int64_t i = 0; i < e.numel(); ++i) {
      const double x = e.data<float>()[i], y = a.data<float>()[i];
      if (x == y || (std::isnan(x) && std::isnan(y))) continue;
      if (std::isfinite(x) && std::isfinite(y) && std::abs(x - y) <= rtol * std::max(std::abs(x), std::abs(y)) + atol)
        continue;
      return "output '" + name + "' element " + std::to_string(i) + ": expected " + std::to_string(x) + ", got " +
             std::to_string(y);
    }
  }
  if (actual.size() != expected.size()) return "the outputs differ in number";
  return std::nullopt;
}

}  // namespace txl::testing
