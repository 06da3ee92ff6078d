// driver/precision.h - the arithmetic precision of a run (docs/PRECISION.md).
//
// f32 runs every op in f32. bf16 runs the matmuls of every linear layer with
// bf16 operands and f32 accumulation and results (the pass bf16-matmuls
// inserts the conversions; the oneDNN backend converts each weight once, as
// it packs it). int8 stores the weights of every linear layer as int8 rows
// with a scale per output channel (the pass int8-matmuls; the oneDNN backend
// quantizes each weight once, as it packs it) and multiplies them with f32
// activations. Both keep the recurrent state (keys and values) in bf16
// (bf16-state); everything else, and everything a caller reads, stays f32.
//
//   Precision p = parsePrecision("bf16", "--precision");
//   checkPrecisionSupported(p, "onednn", "--precision");  // refuses bf16 without AVX512-BF16
#pragma once

#include <string>
#include <vector>

#include "passes/pipeline.h"

namespace txl::driver {

using Precision = passes::Precision;  // F32, BF16, Int8

std::string precisionName(Precision p);  // "f32", "bf16", "int8"
// "f32", "bf16" or "int8"; anything else is a txl::Error of one line starting with `what`.
Precision parsePrecision(const std::string& name, const std::string& what);
// Why `name` cannot be the precision of a run on `backend` on this machine
// (not a precision; bf16 on the oneDNN backend of a CPU whose oneDNN ISA
// lacks AVX512-BF16), or empty when it can. int8 runs everywhere: its own
// kernel has a portable form, and its bf16 state is widened in software
// where the CPU lacks AVX512-BF16.
std::string precisionProblem(const std::string& name, const std::string& backend);
// txl::Error (`what`: message) when precisionProblem() names one.
void checkPrecisionSupported(Precision p, const std::string& backend, const std::string& what);

}  // namespace txl::driver
