// fuzz/graph_json_fuzzer.cpp - libFuzzer target: the graph JSON importer.
//
// Bytes -> JSON (syntax errors are not the importer's business and are
// skipped) -> ir::fromJson -> ir::verify. A graph the verifier accepts must
// export and import again to the same JSON.
#include <cstddef>
#include <cstdint>

#include <nlohmann/json.hpp>

#include "fuzz/fuzz_common.h"
#include "ir/json_io.h"
#include "ir/verifier.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace txl;
  nlohmann::json j = nlohmann::json::parse(data, data + size, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return 0;
  try {
    ir::Graph g = ir::fromJson(j, "graph.json");
    if (ir::verify(g)) return 0;
    const nlohmann::json exported = ir::toJson(g);
    ir::Graph again = ir::fromJson(exported, "exported.json");
    fuzz::require(!ir::verify(again), "a verified graph's exported JSON does not verify");
    fuzz::require(ir::toJson(again) == exported, "toJson(fromJson(toJson(g))) != toJson(g)");
  } catch (const Error& e) {
    fuzz::requireOneLine(e);
  }
  return 0;
}
