// ir/printer.h - the canonical text form of a graph.
//
//   graph @tiny {
//     %0 = input() {name = "x"} : f32[4,8]
//     %1 = weight() {name = "w"} : f32[16,8]
//     %2 = linear(%0, %1) : f32[4,16]
//     output(%2) {name = "y"}
//   }
//
// One op per line in a deterministic topological order, values renumbered
// from 0, attributes sorted by name, every result typed. parse(print(g))
// reproduces g, and print(parse(text)) == text for printed text.
#pragma once

#include <map>
#include <string>

#include "ir/graph.h"

namespace txl::ir {

// Value numbers as the printer assigns them.
class Numbering {
 public:
  explicit Numbering(const Graph& g);
  std::string name(Node n) const;       // "%3"
  int number(Node n) const;             // 3; -1 for a node without a value (output, mem_write)
  std::string signature(Node n) const;  // "%3 = linear(%1, %2)" or "output(%5)"

 private:
  const Graph& g_;
  std::map<Node, int> numbers_;
};

std::string print(const Graph& g);
std::string printAttrValue(const AttrValue& value);
std::string printFloat(double value);  // shortest round-trip form, always with '.', 'e', "inf" or "nan"

}  // namespace txl::ir
