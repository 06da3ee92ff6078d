// ir/op.cpp - the op table and attribute accessors.
#include "ir/op.h"

#include "ir/check.h"

namespace txl::ir {

const std::vector<OpInfo>& allOps() {
  static const std::vector<OpInfo> table = {
#define TXL_OP(kind, name, minOps, maxOps, hasResult, effects, doc) \
  OpInfo{OpKind::kind, name, minOps, maxOps, hasResult, Effects::effects, doc},
#include "ir/ops.def"
#undef TXL_OP
  };
  return table;
}

const OpInfo& opInfo(OpKind kind) { return allOps()[static_cast<std::size_t>(kind)]; }

std::optional<OpKind> parseOpKind(std::string_view name) {
  for (const auto& info : allOps())
    if (info.name == name) return info.kind;
  return std::nullopt;
}

namespace {
template <typename T>
const T& getAs(const std::map<std::string, AttrValue>& map, const std::string& key, const char* what) {
  auto it = map.find(key);
  TXL_CHECK(it != map.end(), "missing attribute " + key);
  const T* value = std::get_if<T>(&it->second);
  TXL_CHECK(value != nullptr, "attribute " + key + " is not " + what);
  return *value;
}
}  // namespace

std::int64_t Attrs::getInt(const std::string& key) const { return getAs<std::int64_t>(map_, key, "an integer"); }
std::int64_t Attrs::getInt(const std::string& key, std::int64_t fallback) const {
  return has(key) ? getInt(key) : fallback;
}
double Attrs::getFloat(const std::string& key) const {
  auto it = map_.find(key);
  TXL_CHECK(it != map_.end(), "missing attribute " + key);
  if (auto* i = std::get_if<std::int64_t>(&it->second)) return static_cast<double>(*i);
  return getAs<double>(map_, key, "a float");
}
double Attrs::getFloat(const std::string& key, double fallback) const { return has(key) ? getFloat(key) : fallback; }
bool Attrs::getBool(const std::string& key, bool fallback) const {
  return has(key) ? getAs<bool>(map_, key, "a bool") : fallback;
}
const std::string& Attrs::getString(const std::string& key) const { return getAs<std::string>(map_, key, "a string"); }
const std::vector<std::int64_t>& Attrs::getInts(const std::string& key) const {
  return getAs<std::vector<std::int64_t>>(map_, key, "an integer list");
}

}  // namespace txl::ir
