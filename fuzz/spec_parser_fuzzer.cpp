// fuzz/spec_parser_fuzzer.cpp - libFuzzer target: model spec JSON.
//
// Bytes -> frontend::parseJsonText (strict: duplicate keys, nesting depth)
// -> frontend::parseModelSpec. A spec that parses must round-trip through
// toJson(), and its derived sizes must be computable without overflow traps.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "frontend/model_spec.h"
#include "fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace txl;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    frontend::ModelSpec spec = frontend::parseModelSpec(frontend::parseJsonText(text, "spec.json"), "spec.json");
    frontend::ModelSpec again = frontend::parseModelSpec(spec.toJson(), "roundtrip.json");
    fuzz::require(again.toJson() == spec.toJson(), "spec does not round-trip through toJson()");
    (void)spec.parameterCount();
    (void)spec.clusterBounds();
    for (std::int64_t i = 0; i < spec.clusterCount(); ++i) (void)spec.clusterEmbedDim(i);
  } catch (const Error& e) {
    fuzz::requireOneLine(e);
  }
  return 0;
}
