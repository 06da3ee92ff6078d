// fuzz/ir_parser_fuzzer.cpp - libFuzzer target: the IR's canonical text form.
//
// Bytes -> ir::parse -> ir::verify. A graph the verifier accepts must print
// to text that parses back to the same text (the round-trip promise of
// ir/printer.h).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz/fuzz_common.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/verifier.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace txl;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    ir::Graph g = ir::parse(text, "fuzz.txlir");
    if (ir::verify(g)) return 0;  // a located message: fine
    const std::string printed = ir::print(g);
    ir::Graph again = ir::parse(printed, "printed.txlir");
    fuzz::require(!ir::verify(again), "a verified graph's printed form does not verify");
    fuzz::require(ir::print(again) == printed, "print(parse(print(g))) != print(g)");
  } catch (const Error& e) {
    fuzz::requireOneLine(e);
  }
  return 0;
}
