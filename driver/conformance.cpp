// driver/conformance.cpp - runConformanceCase().
#include "driver/conformance.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "driver/compile.h"
#include "frontend/model_spec.h"
#include "frontend/safetensors.h"
#include "frontend/weights.h"
#include "frontend/input_file.h"
#include "ir/check.h"
#include "passes/pipeline.h"

namespace txl::driver {

namespace {

// bf16's unit roundoff: 8 significand bits, so a rounded value is within
// a relative 2^-8 of the exact one.
constexpr double kBf16Roundoff = 1.0 / 256;
// The conformance bounds at --precision bf16 (docs/PRECISION.md, "Tolerances").
constexpr double kBf16RelL2Bound = 8 * kBf16Roundoff;
constexpr double kBf16ElementBound = 128 * kBf16Roundoff;
// int8's quantization step: a weight row's values are multiples of its
// max |w| / 127, each within half a step of the exact one.
constexpr double kInt8Step = 1.0 / 127;
// The conformance bounds at --precision int8 (docs/PRECISION.md, "Tolerances").
constexpr double kInt8RelL2Bound = 8 * kInt8Step;
constexpr double kInt8ElementBound = 128 * kInt8Step;

TensorComparison compare(const std::string& name, const ir::Tensor& got, const ir::Tensor& want, double atol,
                         double rtol, double relL2Bound) {
  TensorComparison c;
  c.name = name;
  if (got.shape() != want.shape())
    throw Error(name + ": expected shape " + ir::shapeStr(want.shape()) + ", got " + ir::shapeStr(got.shape()));
  auto g = got.span<float>();
  auto w = want.span<float>();
  double diff2 = 0, want2 = 0;
  for (std::size_t i = 0; i < w.size(); ++i) {
    double d = std::abs(double(g[i]) - double(w[i]));
    if (std::isnan(d)) d = INFINITY;
    c.maxAbsError = std::max(c.maxAbsError, d);
    c.maxViolation = std::max(c.maxViolation, d / (atol + rtol * std::abs(double(w[i]))));
    diff2 += d * d;
    want2 += double(w[i]) * double(w[i]);
  }
  c.relL2 = want2 > 0 ? std::sqrt(diff2 / want2) : std::sqrt(diff2);
  c.passed = c.maxViolation <= 1.0 && c.relL2 <= relL2Bound;
  return c;
}

double badness(const TensorComparison& c, const CaseResult& r) {
  return std::max(c.maxViolation, r.relL2 > 0 ? c.relL2 / r.relL2 : 0.0);
}

// The fields of case.json, each checked for its kind: a missing or
// mistyped field is one line naming the file, the field's JSON pointer, what
// it should be and (quoted, clipped) what it is.
class CaseFields {
 public:
  CaseFields(const nlohmann::json& c, std::string file) : c_(c), file_(std::move(file)) {}

  const nlohmann::json* find(const std::string& ptr) const {
    const nlohmann::json::json_pointer p(ptr);
    return c_.contains(p) ? &c_.at(p) : nullptr;
  }
  [[noreturn]] void fail(const std::string& ptr, const std::string& expected) const {
    const nlohmann::json* v = find(ptr);
    if (!v) throw Error(file_ + ": " + ptr + ": expected " + expected + ", got nothing (the field is missing)");
    std::string shown = v->is_string() ? quote(v->get<std::string>()) : v->dump();
    if (shown.size() > kMaxQuoted) shown = shown.substr(0, kMaxQuoted) + "…";
    throw Error(file_ + ": " + ptr + ": expected " + expected + ", got " +
                (v->is_null() ? "null" : std::string("a ") + v->type_name() + " " + shown));
  }
  double number(const std::string& ptr) const {
    const nlohmann::json* v = find(ptr);
    if (!v || !v->is_number() || !std::isfinite(v->get<double>())) fail(ptr, "a finite number");
    return v->get<double>();
  }
  std::int64_t integer(const std::string& ptr) const {
    const nlohmann::json* v = find(ptr);
    if (!v || !v->is_number_integer()) fail(ptr, "an integer");
    return v->get<std::int64_t>();
  }
  std::string string(const std::string& ptr, const std::string& fallback) const {
    const nlohmann::json* v = find(ptr);
    if (!v) return fallback;
    if (!v->is_string()) fail(ptr, "a string");
    return v->get<std::string>();
  }
  // A well-formed field that disagrees with the rest of the case.
  [[noreturn]] void disagrees(const std::string& ptr, const std::string& expected, std::int64_t got) const {
    throw Error(file_ + ": " + ptr + ": expected " + expected + ", got " + std::to_string(got));
  }
  const nlohmann::json& array(const std::string& ptr) const {
    const nlohmann::json* v = find(ptr);
    if (!v || !v->is_array()) fail(ptr, "an array");
    return *v;
  }

 private:
  const nlohmann::json& c_;
  std::string file_;
};

void run(const std::string& dir, const SettingChoice& base, const ir::PassManagerOptions& diagnostics,
         CaseResult& result) {
  const std::string casePath = dir + (dir.ends_with('/') ? "" : "/") + "case.json";
  nlohmann::json c =
      frontend::parseJsonText(frontend::readInputFile(casePath, frontend::kMaxSpecBytes, "a case JSON file"), casePath);
  if (!c.is_object()) throw Error(casePath + ": expected a JSON object, got a JSON " + std::string(c.type_name()));
  const CaseFields f(c, casePath);
  const std::string format = f.string("/format", "");
  if (format != "txl-conformance/1" && format != "txl-conformance-hf/1")
    f.fail("/format", "\"txl-conformance/1\" or \"txl-conformance-hf/1\"");
  result.name = f.string("/name", dir);
  result.atol = f.number("/tolerance/atol");
  result.rtol = f.number("/tolerance/rtol");
  result.relL2 = f.number("/tolerance/rel_l2");
  const Precision precision = base.precision ? parsePrecision(*base.precision, "--precision") : Precision::F32;
  if (precision != Precision::F32) {
    // The case's tolerance is f32's; bf16 operands carry a relative rounding
    // error of up to u = 2^-8 each, int8 weights one of up to half a step of
    // their row's max / 127 (docs/PRECISION.md derives these bounds).
    const bool int8 = precision == Precision::Int8;
    const double element = int8 ? kInt8ElementBound : kBf16ElementBound;
    result.atol = std::max(result.atol, element);
    result.rtol = std::max(result.rtol, element);
    result.relL2 = std::max(result.relL2, int8 ? kInt8RelL2Bound : kBf16RelL2Bound);
  }

  // The case states its convention; the config's key style does not decide it.
  // txl-conformance/1 (the authors' PyTorch code): an inline config, the
  // authors' semantics, an empty first memory. txl-conformance-hf/1 (Hugging
  // Face's code): a config.json file, Hugging Face's semantics, and the
  // initial memory the case names.
  const bool hf = format == "txl-conformance-hf/1";
  frontend::ModelSpec spec;
  frontend::InitialMemory initialMemory = frontend::InitialMemory::Empty;
  if (hf) {
    const std::string config = f.string("/config", "");
    if (config.empty()) f.fail("/config", "the name of the case's config.json");
    spec = frontend::loadModelSpec(dir + "/" + config);
    spec.semantics = frontend::Semantics::HuggingFace;
    initialMemory = frontend::parseInitialMemory(f.string("/initial_memory", ""), casePath + ": /initial_memory");
  } else {
    if (!f.find("/config") || !f.find("/config")->is_object())
      f.fail("/config", "the model's configuration (an object)");
    spec = frontend::parseModelSpec(c.at("config"), casePath);
    spec.semantics = frontend::Semantics::Authors;
  }
  auto weightsFile = frontend::SafetensorsFile::open(
      dir + "/" + f.string("/weights", hf ? "model.safetensors" : "weights.safetensors"));
  auto io = frontend::SafetensorsFile::open(dir + "/" + f.string("/io", "io.safetensors"));
  const Model m = modelFrom(spec, frontend::bindWeights(spec, weightsFile), casePath);
  SettingChoice choice = base;
  choice.batch = f.integer("/batch");
  choice.initialMemory = frontend::initialMemoryName(initialMemory);
  {
    // The case's own field is named (checkSetting would name --batch, a flag the user did not give).
    Setting sized = defaultSetting(m);
    sized.batch = *choice.batch;
    if (auto p = settingSizeProblem(spec, sized, /*quoteValues=*/false); p && p->field == "batch")
      throw Error(casePath + ": /batch: " + p->message);
  }
  Setting setting = resolveSetting(m, choice);
  setting.pipeline.manager = diagnostics;
  backend::Session session(compile(m, setting));
  result.memoryCompared = setting.resolved.memory == ir::MemoryForm::Hidden;

  const auto& segments = f.array("/segments");
  for (std::size_t k = 0; k < segments.size(); ++k) {
    const std::string seg = "seg" + std::to_string(k), at = "/segments/" + std::to_string(k);
    const std::int64_t qlen = f.integer(at + "/qlen"), mlen = f.integer(at + "/mlen");
    if (session.mlen() != mlen)
      f.disagrees(at + "/mlen", std::to_string(session.mlen()) + " (the positions remembered before " + seg + ")",
                  mlen);
    ir::Tensor tokens = io.toI64(seg + ".input");
    if (tokens.shape().empty() || tokens.shape()[0] != qlen)
      f.disagrees(at + "/qlen",
                  (tokens.shape().empty() ? std::string("0") : std::to_string(tokens.shape()[0])) + " (the rows of " +
                      seg + ".input)",
                  qlen);
    ir::Tensor targets = io.toI64(seg + ".target");
    bool wantLogprob = io.contains(seg + ".logprob");
    auto out = session.forward(tokens, &targets, wantLogprob);
    auto check = [&](const std::string& name, const ir::Tensor& got) {
      result.tensors.push_back(compare(name, got, io.toF32(name), result.atol, result.rtol, result.relL2));
    };
    check(seg + ".hidden", *out.hidden);
    check(seg + ".nll", *out.nll);
    if (wantLogprob) check(seg + ".logprob", *out.logprob);
    for (std::int64_t l = 0; result.memoryCompared && l <= spec.n_layer; ++l) {
      std::string name = seg + ".mem" + std::to_string(l);
      if (io.contains(name)) check(name, session.memory(l));
    }
  }
  result.passed = true;
  for (const auto& t : result.tensors) result.passed &= t.passed;
}

}  // namespace

const TensorComparison* CaseResult::worst() const {
  const TensorComparison* w = nullptr;
  for (const auto& t : tensors)
    if (!w || badness(t, *this) > badness(*w, *this)) w = &t;
  return w;
}

CaseResult runConformanceCase(const std::string& dir, const SettingChoice& base,
                              const ir::PassManagerOptions& diagnostics) {
  CaseResult result;
  result.dir = dir;
  result.name = dir;
  try {
    run(dir, base, diagnostics, result);
  } catch (const std::exception& e) {
    result.passed = false;
    result.error = e.what();
  }
  return result;
}

std::string formatCaseLine(const CaseResult& r) {
  char line[512];
  if (!r.error.empty()) {
    std::snprintf(line, sizeof line, "FAIL %-18s %s", r.name.c_str(), r.error.c_str());
    return line;
  }
  const TensorComparison* w = r.worst();
  std::snprintf(line, sizeof line,
                "%s %-18s %3zu tensors; worst %-14s max_abs %.3g (%.2f of bound), rel_l2 %.3g (%.2f of %.0e)%s",
                r.passed ? "ok  " : "FAIL", r.name.c_str(), r.tensors.size(), w ? w->name.c_str() : "-",
                w ? w->maxAbsError : 0.0, w ? w->maxViolation : 0.0, w ? w->relL2 : 0.0,
                w && r.relL2 > 0 ? w->relL2 / r.relL2 : 0.0, r.relL2,
                r.memoryCompared ? "" : "; memory: kv form, not compared");
  return line;
}

nlohmann::json caseToJson(const CaseResult& r) {
  nlohmann::json j = {{"name", r.name}, {"dir", r.dir}, {"passed", r.passed}};
  if (!r.error.empty()) j["error"] = r.error;
  j["tolerance"] = {{"atol", r.atol}, {"rtol", r.rtol}, {"rel_l2", r.relL2}};
  j["memory_compared"] = r.memoryCompared;
  nlohmann::json tensors = nlohmann::json::array();
  for (const auto& t : r.tensors)
    tensors.push_back({{"name", t.name},
                       {"max_abs_error", t.maxAbsError},
                       {"max_violation", t.maxViolation},
                       {"rel_l2", t.relL2},
                       {"passed", t.passed}});
  j["tensors"] = tensors;
  if (const auto* w = r.worst()) j["worst"] = w->name;
  return j;
}

}  // namespace txl::driver
