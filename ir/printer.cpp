// ir/printer.cpp - print(): the canonical text form.
#include "ir/printer.h"

#include <charconv>
#include <cmath>

namespace txl::ir {

Numbering::Numbering(const Graph& g) : g_(g) {
  int next = 0;
  for (Node n : g.topologicalOrder())
    if (g.op(n).type) numbers_[n] = next++;
}

std::string Numbering::name(Node n) const {
  auto it = numbers_.find(n);
  if (it == numbers_.end()) return "%?";
  std::string s = "%";
  s += std::to_string(it->second);  // (not "%" + ...: GCC 12 warns falsely, PR 105329)
  return s;
}

int Numbering::number(Node n) const {
  auto it = numbers_.find(n);
  return it == numbers_.end() ? -1 : it->second;
}

std::string Numbering::signature(Node n) const {
  std::string s;
  if (g_.op(n).type) s = name(n) + " = ";
  s += opInfo(g_.kind(n)).name;
  s += '(';
  auto operands = g_.operands(n);
  for (std::size_t i = 0; i < operands.size(); ++i) s += (i ? ", " : "") + name(operands[i]);
  return s + ')';
}

std::string printFloat(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value < 0 ? "-inf" : "inf";
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value);
  std::string s(buf, end);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

namespace {
std::string quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\', out += c;
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out + '"';
}
}  // namespace

std::string printAttrValue(const AttrValue& value) {
  struct Visitor {
    std::string operator()(bool b) const { return b ? "true" : "false"; }
    std::string operator()(std::int64_t i) const { return std::to_string(i); }
    std::string operator()(double d) const { return printFloat(d); }
    std::string operator()(const std::string& s) const { return quote(s); }
    std::string operator()(const std::vector<std::int64_t>& v) const {
      std::string s = "[";
      for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
      return s + "]";
    }
  };
  return std::visit(Visitor{}, value);
}

std::string print(const Graph& g) {
  Numbering numbering(g);
  std::string out = "graph @" + g.name() + " {\n";
  for (Node n : g.topologicalOrder()) {
    const OpData& op = g.op(n);
    out += "  " + numbering.signature(n);
    if (!op.attrs.items().empty()) {
      out += " {";
      bool first = true;
      for (const auto& [key, value] : op.attrs.items()) {
        out += (first ? "" : ", ") + key + " = " + printAttrValue(value);
        first = false;
      }
      out += '}';
    }
    if (op.type) out += " : " + op.type->str();
    out += '\n';
  }
  return out + "}\n";
}

}  // namespace txl::ir
