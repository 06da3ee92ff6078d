// driver/precision.cpp - precision names and what this machine supports.
#include "driver/precision.h"

#include "backend/platform.h"
#include "ir/check.h"

namespace txl::driver {

std::string precisionName(Precision p) {
  switch (p) {
    case Precision::F32:
      return "f32";
    case Precision::BF16:
      return "bf16";
    case Precision::Int8:
      return "int8";
  }
  return "f32";
}

std::string precisionProblem(const std::string& name, const std::string& backend) {
  if (name != "f32" && name != "bf16" && name != "int8") return "expected f32, bf16 or int8, got '" + clip(name) + "'";
  if (name == "bf16" && backend == "onednn" && !backend::platform().bf16Matmuls)
    return "bf16 needs a CPU with AVX512-BF16; oneDNN runs on " + backend::platform().onednnIsa +
           " here (use --precision f32, or --backend reference)";
  return {};
}

Precision parsePrecision(const std::string& name, const std::string& what) {
  if (name == "f32") return Precision::F32;
  if (name == "bf16") return Precision::BF16;
  if (name == "int8") return Precision::Int8;
  throw Error(what + ": " + precisionProblem(name, "reference"));
}

void checkPrecisionSupported(Precision p, const std::string& backend, const std::string& what) {
  if (std::string problem = precisionProblem(precisionName(p), backend); !problem.empty())
    throw Error(what + ": " + problem);
}

}  // namespace txl::driver
