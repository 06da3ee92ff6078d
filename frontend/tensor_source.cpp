// frontend/tensor_source.cpp - the non-finite check every tensor source applies.
#include "frontend/tensor_source.h"

#include <cmath>
#include <iostream>

#include "ir/check.h"

namespace txl::frontend {

void checkFinite(const std::string& source, const std::string& name, const ir::Tensor& values,
                 const ConvertOptions& options, const std::function<bool(std::size_t)>& wasFinite) {
  if (options.nonFinite == NonFinitePolicy::Allow) return;
  const auto n = static_cast<std::size_t>(values.numel());
  const float* v = values.data<float>();
  std::size_t bad = 0, first = 0;
  for (std::size_t i = 0; i < n; ++i)
    if (!std::isfinite(v[i]) && bad++ == 0) first = i;
  if (bad == 0) return;
  std::string what;
  if (std::isnan(v[first])) {
    what = "NaN";
  } else if (wasFinite && wasFinite(first)) {
    what = "out of f32 range";
  } else {
    what = v[first] > 0 ? "+Inf" : "-Inf";
  }
  std::string detail = "element " + std::to_string(first) + " is " + what;
  if (options.nonFinite == NonFinitePolicy::Refuse)
    throw Error(source + ": tensor " + quote(name) + ": " + detail + " (" + std::to_string(bad) +
                " non-finite values); non-finite weights are refused");
  std::string message =
      source + ": tensor " + quote(name) + ": " + std::to_string(bad) + " non-finite values (first: " + detail + ")";
  if (options.warn) options.warn(message);
  else std::cerr << "warning: " << message << "\n";
}

}  // namespace txl::frontend
