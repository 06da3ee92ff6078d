// ir/segment_abi.cpp - memorySlots() and verifySegment().
#include "ir/segment_abi.h"

#include <algorithm>
#include <map>
#include <set>

#include "ir/check.h"

namespace txl::ir {

std::string memoryName(std::int64_t slot) { return "mem." + std::to_string(slot); }

const char* memoryFormName(MemoryForm form) { return form == MemoryForm::Kv ? "kv" : "hidden"; }

std::vector<MemorySlot> memorySlots(const Graph& g) {
  std::map<std::int64_t, MemorySlot> slots;
  auto note = [&](std::int64_t slot, const TensorType& type, bool windowed) {
    TXL_CHECK(type.rank() >= 1, "memory of rank 0");
    MemorySlot layout{slot, Shape(type.shape.begin() + 1, type.shape.end()), windowed, type.dtype};
    auto [it, fresh] = slots.emplace(slot, layout);
    TXL_CHECK(fresh || it->second == layout, "memory slot " + std::to_string(slot) + " used inconsistently");
  };
  for (Node n : g.nodes()) {
    const OpData& op = g.op(n);
    switch (op.kind) {
      case OpKind::MemRead:
        note(op.attrs.getInt("slot"), *op.type, false);
        break;
      case OpKind::MemWrite:
        note(op.attrs.getInt("slot"), g.type(g.operand(n, 0)), false);
        break;
      case OpKind::MemWindow:
        note(op.attrs.getInt("slot"), *op.type, true);
        break;
      default:
        break;
    }
  }
  std::vector<MemorySlot> out;
  for (auto& [slot, layout] : slots) out.push_back(layout);
  return out;
}

namespace {

std::string slotsStr(const std::vector<MemorySlot>& slots) {
  std::string s;
  for (const MemorySlot& m : slots)
    s += (s.empty() ? "" : ", ") + std::to_string(m.slot) + (m.windowed ? " windowed " : " ") +
         std::string(dtypeName(m.dtype)) + shapeStr(m.rowShape);
  return "[" + s + "]";
}

std::optional<std::string> check(const Graph& g, const SegmentSignature& sig) {
  const Segment& s = sig.segment;
  std::map<std::string, TensorType> inputs, outputs;
  inputs[kTokens] = {DType::I64, {s.qlen, s.batch}};
  if (s.nll) inputs[kTargets] = {DType::I64, {s.qlen, s.batch}};
  if (s.padded) inputs[kPadMask] = {DType::F32, {s.batch, 1, 1, s.klen()}};
  outputs[kHidden] = {DType::F32, {s.qlen, s.batch, sig.dModel}};
  if (s.logprob) outputs[kLogprob] = {DType::F32, {s.qlen, s.batch, sig.nToken}};
  if (s.nll) outputs[kNll] = {DType::F32, {s.qlen, s.batch}};
  std::set<std::string> seenIn, seenOut;
  const std::int64_t kept = s.kept();
  for (Node n : g.nodes()) {
    const OpData& op = g.op(n);
    switch (op.kind) {
      case OpKind::Input:
      case OpKind::Output: {
        const bool in = op.kind == OpKind::Input;
        const std::string& name = op.attrs.getString("name");
        auto& want = in ? inputs : outputs;
        auto it = want.find(name);
        if (it == want.end())
          return std::string(in ? "input" : "output") + " '" + clip(name) + "' is not in the signature";
        const TensorType& got = in ? *op.type : g.type(g.operand(n, 0));
        if (got != it->second)
          return std::string(in ? "input" : "output") + " '" + name + "': expected " + it->second.str() + ", got " +
                 got.str();
        (in ? seenIn : seenOut).insert(name);
        break;
      }
      case OpKind::MemRead:
        if (op.type->rank() < 1 || op.type->shape[0] != s.mlen)
          return "mem_read of slot " + std::to_string(op.attrs.getInt("slot")) + ": expected " +
                 std::to_string(s.mlen) + " rows (mlen), got " + op.type->str();
        break;
      case OpKind::MemWrite: {
        const TensorType& t = g.type(g.operand(n, 0));
        if (t.rank() < 1 || t.shape[0] != kept)
          return "mem_write of slot " + std::to_string(op.attrs.getInt("slot")) + ": expected " + std::to_string(kept) +
                 " rows (min(mem_len, mlen + qlen)), got " + t.str();
        break;
      }
      case OpKind::MemWindow:
        if (op.attrs.getInt("mlen") != s.mlen || op.attrs.getInt("keep") != kept)
          return "mem_window of slot " + std::to_string(op.attrs.getInt("slot")) + ": expected mlen " +
                 std::to_string(s.mlen) + " and keep " + std::to_string(kept) + ", got mlen " +
                 std::to_string(op.attrs.getInt("mlen")) + " and keep " + std::to_string(op.attrs.getInt("keep"));
        break;
      default:
        break;
    }
  }
  for (const auto& [name, type] : inputs)
    if (!seenIn.count(name)) return "input '" + name + "' " + type.str() + " is missing";
  for (const auto& [name, type] : outputs)
    if (!seenOut.count(name)) return "output '" + name + "' " + type.str() + " is missing";
  if (sig.memory && s.mlen > 0) {
    std::vector<MemorySlot> got = memorySlots(g);
    if (got != *sig.memory) return "memory slots " + slotsStr(got) + ", expected the model's " + slotsStr(*sig.memory);
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> verifySegment(const Graph& g, const SegmentSignature& s) {
  try {
    return check(g, s);
  } catch (const InternalError& e) {
    return std::string(e.what());
  }
}

void verifySegmentOrThrow(const Graph& g, const SegmentSignature& s, const std::string& context) {
  if (auto problem = verifySegment(g, s)) throw Error(context + ": " + *problem);
}

}  // namespace txl::ir
