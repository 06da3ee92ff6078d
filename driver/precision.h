// driver/precision.h - the arithmetic precision of a run (docs/PRECISION.md).
//
// f32 runs every op in f32. bf16 runs the matmuls of every linear layer with
// bf16 operands and f32 accumulation and results (the pass bf16-matmuls
// inserts the conversions; the oneDNN backend converts each weight once, as
// it packs it); everything else, and everything a caller reads, stays f32.
// int8 is named so that asking for it gets a clear refusal: it is not
// implemented.
//
//   Precision p = parsePrecision("bf16", "--precision");
//   checkPrecisionSupported(p, "onednn", "--precision");  // refuses bf16 without AVX512-BF16
#pragma once

#include <string>

namespace txl::driver {

enum class Precision { F32, BF16 };

std::string precisionName(Precision p);  // "f32", "bf16"
// "f32" or "bf16"; anything else (int8 included, which is not implemented)
// is a txl::Error of one line starting with `what`.
Precision parsePrecision(const std::string& name, const std::string& what);
// Why `name` cannot be the precision of a run on `backend` on this machine
// (not a precision; int8; bf16 on the oneDNN backend of a CPU whose oneDNN
// ISA lacks AVX512-BF16), or empty when it can.
std::string precisionProblem(const std::string& name, const std::string& backend);
// txl::Error (`what`: message) when precisionProblem() names one.
void checkPrecisionSupported(Precision p, const std::string& backend, const std::string& what);

}  // namespace txl::driver
