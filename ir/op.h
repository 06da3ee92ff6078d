// ir/op.h - op kinds (from ops.def), attributes and the data of one node.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "ir/types.h"

namespace txl::ir {

enum class OpKind {
#define TXL_OP(kind, name, minOps, maxOps, hasResult, effects, doc) kind,
#include "ir/ops.def"
#undef TXL_OP
};

// What running an op does besides computing its value (the Effects column of ops.def).
enum class Effects {
  Pure,         // nothing: removable when unused, mergeable, foldable when its operands are constant
  ReadsState,   // its value is the caller's (input) or a memory slot's (mem_read), bound at every run
  WritesState,  // updates a memory slot (mem_write, mem_window): never removed
  Output,       // hands its operand to the caller (output): never removed
};

struct OpInfo {
  OpKind kind;
  std::string_view name;
  int minOperands;
  int maxOperands;  // -1: variadic
  bool hasResult;
  Effects effects;
  std::string_view doc;
};

const OpInfo& opInfo(OpKind kind);
std::optional<OpKind> parseOpKind(std::string_view name);
const std::vector<OpInfo>& allOps();

// An attribute value. Lists are integer lists (shapes, permutations).
using AttrValue = std::variant<bool, std::int64_t, double, std::string, std::vector<std::int64_t>>;

// Attributes sorted by name (std::map), so printing is canonical.
class Attrs {
 public:
  Attrs() = default;
  Attrs(std::initializer_list<std::pair<const std::string, AttrValue>> init) : map_(init) {}

  bool has(const std::string& key) const { return map_.count(key) != 0; }
  void set(const std::string& key, AttrValue value) { map_[key] = std::move(value); }
  void erase(const std::string& key) { map_.erase(key); }

  // Typed getters; the verifier guarantees presence and type of required
  // attributes, so a mismatch here is an internal error.
  std::int64_t getInt(const std::string& key) const;
  std::int64_t getInt(const std::string& key, std::int64_t fallback) const;
  double getFloat(const std::string& key) const;  // accepts an int too
  double getFloat(const std::string& key, double fallback) const;
  bool getBool(const std::string& key, bool fallback = false) const;
  const std::string& getString(const std::string& key) const;
  const std::vector<std::int64_t>& getInts(const std::string& key) const;

  const std::map<std::string, AttrValue>& items() const { return map_; }
  friend bool operator==(const Attrs&, const Attrs&) = default;

 private:
  std::map<std::string, AttrValue> map_;
};

// The payload of a graph node: one op and, unless it is a sink, its result type.
struct OpData {
  OpKind kind = OpKind::Constant;
  Attrs attrs;
  std::optional<TensorType> type;  // the result type; empty for sinks
  std::uint64_t id = 0;            // creation order; stable across erasures
};

}  // namespace txl::ir
