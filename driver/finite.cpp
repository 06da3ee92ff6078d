// driver/finite.cpp - firstNonFinite(), throwNonFinite().
#include "driver/finite.h"

#include <cmath>

#include "ir/check.h"

namespace txl::driver {

std::int64_t firstNonFinite(const float* values, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i)
    if (!std::isfinite(values[i])) return i;
  return -1;
}

std::string nonFiniteReason(float value) {
  return std::string(std::isnan(value) ? "NaN" : "infinite") +
         "; a weights file or artifact changed during the run, or the model overflows";
}

void throwNonFinite(const std::string& source, const std::string& what, float value) {
  throw Error(source + ": " + what + " is " + nonFiniteReason(value));
}

}  // namespace txl::driver
