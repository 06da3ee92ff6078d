// ir/parser.h - reads the canonical text form (see printer.h) back into a Graph.
//
// Accepts what the printer writes, plus `//` comments and blank lines, and
// value names in any order of first definition (a value must be defined
// before use). Result types may be omitted on computed ops (they are
// inferred), never on input, weight, constant and mem_read. Errors name the
// line and column: "<file>:3:17: expected ')', found ','".
#pragma once

#include <string>
#include <string_view>

#include "ir/graph.h"

namespace txl::ir {

// Throws txl::Error on malformed text or an ill-typed op. Does not run the
// verifier beyond type inference of ops without a declared type.
Graph parse(std::string_view text, const std::string& sourceName = "<input>");

}  // namespace txl::ir
