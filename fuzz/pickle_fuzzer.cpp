// fuzz/pickle_fuzzer.cpp - libFuzzer target: the pickle opcode interpreter.
//
// Bytes -> frontend::pickle::parse under a policy that allows every rule kind
// (dict and set containers, recorded calls, classes, names, skipped objects)
// and keeps persistent ids, then a bounded walk over the tree it built (the
// memo may make it a graph with cycles: the walk counts visits, it does not
// recurse without end). Every byte read must lie inside the input (ASan), and
// nothing may escape but a one-line txl::Error.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "frontend/pickle.h"
#include "fuzz/fuzz_common.h"

namespace {

const txl::frontend::pickle::Policy& policy() {
  using namespace txl::frontend::pickle;
  static const Policy p = [] {
    Policy q;
    q.rules = {{"collections.OrderedDict", GlobalRule::Dict},
               {"collections.Counter", GlobalRule::Dict},
               {"builtins.set", GlobalRule::Set},
               {"__builtin__.set", GlobalRule::Set},
               {"torch._utils._rebuild_tensor_v2", GlobalRule::Call},
               {"torch._utils._rebuild_parameter", GlobalRule::Call},
               {"torch.FloatStorage", GlobalRule::Name},
               {"torch.nn.modules.*", GlobalRule::Class},
               {"mem_transformer.*", GlobalRule::Class},
               {"sacremoses.*", GlobalRule::Skip},
               {"re._compile", GlobalRule::Skip}};
    q.allowedSummary = "the fuzz policy";
    q.limits.maxCells = 1u << 22;
    q.persistentLoad = [](Value* pid, std::size_t) { return pid; };
    return q;
  }();
  return p;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace txl::frontend::pickle;
  std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  try {
    Pickle p = parse(bytes, "f.pkl", policy());
    txl::fuzz::require(p.root != nullptr, "parse returned no root");
    txl::fuzz::require(p.end >= 1 && p.end <= size, "parse consumed more bytes than it was given");
    // A breadth-first walk over at most 100000 values.
    std::vector<const Value*> queue{p.root};
    for (std::size_t k = 0; k < queue.size() && queue.size() < 100000; ++k) {
      const Value* v = queue[k];
      (void)describe(v);
      for (const Value* item : v->items) queue.push_back(item);
      for (const auto& [key, value] : v->entries) {
        queue.push_back(key);
        queue.push_back(value);
      }
      if (v->args) queue.push_back(v->args);
      if (v->state) queue.push_back(v->state);
      (void)v->get("idx2sym");
    }
  } catch (const txl::Error& e) {
    txl::fuzz::requireOneLine(e);
  }
  return 0;
}
