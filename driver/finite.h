// driver/finite.h - no NaN or Inf is ever reported as a result.
//
// A model's outputs are finite unless its weights are (an artifact or a
// weights file changed under the run's mapping, or values that overflow in
// f32). Every output a command reports is checked; the first non-finite
// value is an error naming where it appeared.
#pragma once

#include <cstdint>
#include <string>

namespace txl::driver {

// The index of the first NaN or infinity among `n` floats, or -1.
std::int64_t firstNonFinite(const float* values, std::int64_t n);

// txl::Error "SOURCE: WHAT is NaN (or infinite); a weights file or artifact
// changed during the run, or the model overflows".
[[noreturn]] void throwNonFinite(const std::string& source, const std::string& what, float value);

// Why a value is not reported ("NaN" or "infinite"): the wording of throwNonFinite, for error fields.
std::string nonFiniteReason(float value);

}  // namespace txl::driver
