// ir/dot.cpp - toDot().
#include "ir/dot.h"

#include <map>

#include "ir/printer.h"

namespace txl::ir {

namespace {
std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\' || c == '{' || c == '}' || c == '<' || c == '>' || c == '|') out += '\\';
    out += c;
  }
  return out;
}
}  // namespace

std::string toDot(const Graph& g) {
  Numbering numbering(g);
  std::map<Node, int> index;
  std::string out = "digraph \"" + escape(g.name()) + "\" {\n  node [shape=record, fontname=\"monospace\"];\n";
  for (Node n : g.topologicalOrder()) {
    int id = static_cast<int>(index.size());
    index[n] = id;
    const OpData& op = g.op(n);
    std::string label =
        escape(numbering.name(n) == "%?" ? std::string(opInfo(op.kind).name)
                                         : numbering.name(n) + " = " + std::string(opInfo(op.kind).name));
    for (const auto& [key, value] : op.attrs.items()) label += "\\n" + escape(key + " = " + printAttrValue(value));
    if (op.type) label += "\\n" + escape(op.type->str());
    out += "  n" + std::to_string(id) + " [label=\"" + label + "\"];\n";
    auto operands = g.operands(n);
    for (std::size_t i = 0; i < operands.size(); ++i)
      out += "  n" + std::to_string(index.at(operands[i])) + " -> n" + std::to_string(id) + " [label=\"" +
             std::to_string(i) + "\"];\n";
  }
  return out + "}\n";
}

}  // namespace txl::ir
