// ir/json_io.cpp - JSON export and import of graphs.
#include "ir/json_io.h"

#include <cmath>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>

#include "ir/check.h"

namespace txl::ir {

using nlohmann::json;

namespace {

json attrToJson(const AttrValue& value) {
  struct Visitor {
    json operator()(bool b) const { return b; }
    json operator()(std::int64_t i) const { return i; }
    json operator()(double d) const {
      if (std::isnan(d)) return json{{"float", "nan"}};
      if (std::isinf(d)) return json{{"float", d < 0 ? "-inf" : "inf"}};
      return d;
    }
    json operator()(const std::string& s) const { return s; }
    json operator()(const std::vector<std::int64_t>& v) const { return v; }
  };
  return std::visit(Visitor{}, value);
}

class Importer {
 public:
  explicit Importer(std::string source) : source_(std::move(source)) {}

  [[noreturn]] void fail(const std::string& pointer, const std::string& what) const {
    throw Error(source_ + ": " + pointer + ": " + what);
  }

  AttrValue attr(const json& v, const std::string& at) const {
    switch (v.type()) {
      case json::value_t::boolean:
        return v.get<bool>();
      case json::value_t::number_integer:
      case json::value_t::number_unsigned:
        if (v.is_number_unsigned() && v.get<std::uint64_t>() > std::uint64_t(std::numeric_limits<std::int64_t>::max()))
          fail(at, "integer out of range");
        return v.get<std::int64_t>();
      case json::value_t::number_float:
        return v.get<double>();
      case json::value_t::string:
        return v.get<std::string>();
      case json::value_t::array: {
        std::vector<std::int64_t> list;
        for (std::size_t i = 0; i < v.size(); ++i) {
          if (!v[i].is_number_integer()) fail(at + "/" + std::to_string(i), "expected an integer");
          list.push_back(v[i].get<std::int64_t>());
        }
        return list;
      }
      case json::value_t::object: {
        if (v.size() == 1 && v.contains("float") && v["float"].is_string()) {
          auto s = v["float"].get<std::string>();
          if (s == "inf") return std::numeric_limits<double>::infinity();
          if (s == "-inf") return -std::numeric_limits<double>::infinity();
          if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
        }
        fail(at, "expected {\"float\": \"inf\" | \"-inf\" | \"nan\"}");
      }
      default:
        fail(at, "expected a bool, number, string or integer list");
    }
  }

  TensorType type(const json& t, const std::string& at) const {
    if (!t.is_object()) fail(at, "expected an object");
    if (!t.contains("dtype") || !t["dtype"].is_string()) fail(at + "/dtype", "expected a dtype string");
    auto dtype = parseDType(t["dtype"].get<std::string>());
    if (!dtype) fail(at + "/dtype", "expected f32, bf16 or i64, got \"" + t["dtype"].get<std::string>() + "\"");
    if (!t.contains("shape") || !t["shape"].is_array()) fail(at + "/shape", "expected an integer list");
    Shape shape;
    std::int64_t n = 1;
    for (std::size_t i = 0; i < t["shape"].size(); ++i) {
      const json& d = t["shape"][i];
      if (!d.is_number_integer() || d.get<std::int64_t>() < 0)
        fail(at + "/shape/" + std::to_string(i), "expected a non-negative integer");
      std::int64_t dim = d.get<std::int64_t>();
      if (dim != 0 && n > std::numeric_limits<std::int64_t>::max() / 16 / dim)
        fail(at + "/shape", "tensor type too large");
      n *= dim;
      shape.push_back(dim);
    }
    return {*dtype, shape};
  }

  Graph run(const json& j) {
    if (!j.is_object()) fail("", "expected a JSON object");
    if (!j.contains("format") || j["format"] != "txlc-graph/1") fail("/format", "expected \"txlc-graph/1\"");
    if (!j.contains("name") || !j["name"].is_string()) fail("/name", "expected a string");
    if (!j.contains("nodes") || !j["nodes"].is_array()) fail("/nodes", "expected an array");
    Graph g(j["name"].get<std::string>());
    std::map<std::int64_t, Node> ids;
    for (std::size_t i = 0; i < j["nodes"].size(); ++i) {
      const json& node = j["nodes"][i];
      std::string at = "/nodes/" + std::to_string(i);
      if (!node.is_object()) fail(at, "expected an object");
      if (!node.contains("id") || !node["id"].is_number_integer()) fail(at + "/id", "expected an integer");
      std::int64_t id = node["id"].get<std::int64_t>();
      if (ids.count(id)) fail(at + "/id", "duplicate id " + std::to_string(id));
      if (!node.contains("op") || !node["op"].is_string()) fail(at + "/op", "expected an op name");
      auto kind = parseOpKind(node["op"].get<std::string>());
      if (!kind) fail(at + "/op", "unknown op \"" + node["op"].get<std::string>() + "\"");
      std::vector<Node> operands;
      if (node.contains("operands")) {
        if (!node["operands"].is_array()) fail(at + "/operands", "expected an array of ids");
        for (std::size_t k = 0; k < node["operands"].size(); ++k) {
          const json& ref = node["operands"][k];
          std::string refAt = at + "/operands/" + std::to_string(k);
          if (!ref.is_number_integer()) fail(refAt, "expected a node id");
          auto it = ids.find(ref.get<std::int64_t>());
          if (it == ids.end()) fail(refAt, "refers to an undefined or later node");
          if (!g.op(it->second).type) fail(refAt, "refers to a sink, which has no value");
          operands.push_back(it->second);
        }
      }
      Attrs attrs;
      if (node.contains("attrs")) {
        if (!node["attrs"].is_object()) fail(at + "/attrs", "expected an object");
        for (const auto& [key, value] : node["attrs"].items()) attrs.set(key, attr(value, at + "/attrs/" + key));
      }
      std::optional<TensorType> declared;
      if (node.contains("type")) declared = type(node["type"], at + "/type");
      const OpInfo& info = opInfo(*kind);
      if (info.hasResult && !declared) fail(at + "/type", "required for op " + std::string(info.name));
      if (!info.hasResult && declared) fail(at + "/type", "op " + std::string(info.name) + " has no result");
      if (int(operands.size()) < info.minOperands || (info.maxOperands >= 0 && int(operands.size()) > info.maxOperands))
        fail(at + "/operands", "wrong operand count for op " + std::string(info.name));
      try {
        ids[id] = g.add(*kind, operands, attrs, declared);
      } catch (const Error& e) {
        fail(at, e.what());
      }
    }
    return g;
  }

 private:
  std::string source_;
};

}  // namespace

json toJson(const Graph& g) {
  std::map<Node, std::int64_t> ids;
  json nodes = json::array();
  for (Node n : g.topologicalOrder()) {
    std::int64_t id = static_cast<std::int64_t>(ids.size());
    ids[n] = id;
    json node;
    node["id"] = id;
    node["op"] = std::string(opInfo(g.kind(n)).name);
    json operands = json::array();
    for (Node o : g.operands(n)) operands.push_back(ids.at(o));
    node["operands"] = operands;
    json attrs = json::object();
    for (const auto& [key, value] : g.op(n).attrs.items()) attrs[key] = attrToJson(value);
    node["attrs"] = attrs;
    if (const auto& t = g.op(n).type) node["type"] = {{"dtype", std::string(dtypeName(t->dtype))}, {"shape", t->shape}};
    nodes.push_back(std::move(node));
  }
  return {{"format", "txlc-graph/1"}, {"name", g.name()}, {"nodes", nodes}};
}

Graph fromJson(const json& j, const std::string& sourceName) { return Importer(sourceName).run(j); }

}  // namespace txl::ir
