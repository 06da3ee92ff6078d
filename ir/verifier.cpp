// ir/verifier.cpp - verify(): infer every node's type and compare.
#include "ir/verifier.h"

#include <set>

#include "ir/check.h"
#include "ir/printer.h"
#include "ir/shape_inference.h"

namespace txl::ir {

std::optional<std::string> verify(const Graph& g) {
  Numbering numbering(g);
  std::set<std::string> inputs, outputs, weights;
  std::set<std::int64_t> memReads, memWrites;
  auto where = [&](Node n) { return numbering.signature(n) + ": "; };
  for (Node n : g.topologicalOrder()) {
    const OpData& op = g.op(n);
    std::vector<TensorType> operandTypes;
    for (Node o : g.operands(n)) {
      if (!g.op(o).type) return where(n) + "operand " + numbering.name(o) + " is a sink and has no value";
      operandTypes.push_back(*g.op(o).type);
    }
    Inferred inferred = inferType(op.kind, operandTypes, op.attrs, op.type);
    if (!inferred.ok()) return where(n) + inferred.error;
    if (inferred.type != op.type)
      return where(n) + "declared type " + (op.type ? op.type->str() : "none") + ", inferred " +
             (inferred.type ? inferred.type->str() : "none");
    auto unique = [&](auto& set, const auto& key, const char* what) -> std::optional<std::string> {
      if (!set.insert(key).second) return where(n) + "duplicate " + what;
      return std::nullopt;
    };
    std::optional<std::string> dup;
    switch (op.kind) {
      case OpKind::Input:
        dup = unique(inputs, op.attrs.getString("name"), "input name");
        break;
      case OpKind::Output:
        dup = unique(outputs, op.attrs.getString("name"), "output name");
        break;
      case OpKind::MemRead:
        dup = unique(memReads, op.attrs.getInt("slot"), "mem_read slot");
        break;
      case OpKind::MemWrite:
        dup = unique(memWrites, op.attrs.getInt("slot"), "mem_write slot");
        break;
      case OpKind::MemWindow:
        dup = unique(memReads, op.attrs.getInt("slot"), "memory slot (mem_window)");
        if (!dup) dup = unique(memWrites, op.attrs.getInt("slot"), "memory slot (mem_window)");
        break;
      default:
        break;
    }
    if (dup) return dup;
  }
  return std::nullopt;
}

void verifyOrThrow(const Graph& g, const std::string& context) {
  if (auto problem = verify(g)) throw Error(context + ": " + *problem);
}

}  // namespace txl::ir
