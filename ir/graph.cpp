// ir/graph.cpp - node creation, use lists, rewrites and ordering.
#include "ir/graph.h"

#include <algorithm>
#include <map>
#include <queue>

#include "ir/check.h"
#include "ir/shape_inference.h"

namespace txl::ir {

namespace {
Node asNode(void* p) { return static_cast<Node>(p); }
void* asPtr(Node n) { return static_cast<void*>(n); }
}  // namespace

Graph::Graph(const Graph& other) : name_(other.name_), nextId_(0) {
  std::map<Node, Node> mapping;
  for (Node n : other.topologicalOrder()) {
    std::vector<Node> ops;
    for (Node o : other.operands(n)) ops.push_back(mapping.at(o));
    Node copy = add(other.kind(n), ops, other.op(n).attrs, other.op(n).type);
    g()[copy].op.id = other.op(n).id;
    mapping[n] = copy;
  }
  nextId_ = other.nextId_;
}

Graph& Graph::operator=(const Graph& other) {
  if (this != &other) {
    Graph copy(other);
    *this = std::move(copy);
  }
  return *this;
}

Node Graph::add(OpKind kind, const std::vector<Node>& operands, Attrs attrs, std::optional<TensorType> type) {
  const OpInfo& info = opInfo(kind);
  if (!type && info.hasResult) {
    std::vector<TensorType> operandTypes;
    for (Node o : operands) operandTypes.push_back(this->type(o));
    auto inferred = inferType(kind, operandTypes, attrs);
    if (!inferred.ok()) throw Error(std::string(info.name) + ": " + inferred.error);
    type = inferred.type;
  }
  NodeProps props;
  props.op.kind = kind;
  props.op.attrs = std::move(attrs);
  props.op.type = info.hasResult ? type : std::nullopt;
  props.op.id = nextId_++;
  for (Node o : operands) props.operands.push_back(asPtr(o));
  Node n = boost::add_vertex(std::move(props), g());
  addEdges(n);
  return n;
}

Node Graph::addInput(const std::string& name, TensorType type) {
  return add(OpKind::Input, {}, Attrs{{"name", name}}, std::move(type));
}
Node Graph::addWeight(const std::string& name, TensorType type) {
  return add(OpKind::Weight, {}, Attrs{{"name", name}}, std::move(type));
}
Node Graph::addOutput(const std::string& name, Node value) {
  return add(OpKind::Output, {value}, Attrs{{"name", name}});
}

const TensorType& Graph::type(Node n) const {
  TXL_CHECK(g()[n].op.type.has_value(), std::string(opInfo(kind(n)).name) + " has no result");
  return *g()[n].op.type;
}

std::vector<Node> Graph::operands(Node n) const {
  std::vector<Node> out;
  out.reserve(g()[n].operands.size());
  for (void* p : g()[n].operands) out.push_back(asNode(p));
  return out;
}

Node Graph::operand(Node n, std::size_t i) const {
  TXL_CHECK(i < g()[n].operands.size(), "operand index out of range");
  return asNode(g()[n].operands[i]);
}

std::vector<Node> Graph::users(Node n) const {
  std::vector<Node> out;
  for (auto [e, end] = boost::out_edges(n, g()); e != end; ++e) out.push_back(boost::target(*e, g()));
  std::sort(out.begin(), out.end(), [&](Node a, Node b) { return g()[a].op.id < g()[b].op.id; });
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

void Graph::addEdges(Node n) {
  const auto& ops = g()[n].operands;
  for (std::size_t i = 0; i < ops.size(); ++i) boost::add_edge(asNode(ops[i]), n, EdgeProps{int(i)}, g());
}

void Graph::removeEdges(Node n) { boost::clear_in_edges(n, g()); }

void Graph::setOperand(Node n, std::size_t i, Node value) {
  TXL_CHECK(i < g()[n].operands.size(), "operand index out of range");
  removeEdges(n);
  g()[n].operands[i] = asPtr(value);
  addEdges(n);
}

void Graph::setOperands(Node n, const std::vector<Node>& values) {
  removeEdges(n);
  g()[n].operands.clear();
  for (Node v : values) g()[n].operands.push_back(asPtr(v));
  addEdges(n);
}

void Graph::replaceAllUsesWith(Node from, Node to) {
  if (from == to) return;
  for (Node user : users(from)) {
    removeEdges(user);
    for (void*& p : g()[user].operands)
      if (asNode(p) == from) p = asPtr(to);
    addEdges(user);
  }
}

void Graph::erase(Node n) {
  TXL_CHECK(!hasUsers(n), "erasing a node that still has users");
  removeEdges(n);
  boost::remove_vertex(n, g());
}

std::vector<Node> Graph::nodes() const {
  std::vector<Node> out;
  for (auto [v, end] = boost::vertices(g()); v != end; ++v) out.push_back(*v);
  std::sort(out.begin(), out.end(), [&](Node a, Node b) { return g()[a].op.id < g()[b].op.id; });
  return out;
}

std::vector<Node> Graph::topologicalOrder() const {
  // Kahn's algorithm; among ready nodes the one created first goes first, so
  // the order (and hence the printed text) is deterministic.
  std::map<Node, std::size_t> pending;
  auto later = [&](Node a, Node b) { return g()[a].op.id > g()[b].op.id; };
  std::priority_queue<Node, std::vector<Node>, decltype(later)> ready(later);
  for (auto [v, end] = boost::vertices(g()); v != end; ++v) {
    std::size_t deg = boost::in_degree(*v, g());
    pending[*v] = deg;
    if (deg == 0) ready.push(*v);
  }
  std::vector<Node> order;
  order.reserve(pending.size());
  while (!ready.empty()) {
    Node n = ready.top();
    ready.pop();
    order.push_back(n);
    for (auto [e, end] = boost::out_edges(n, g()); e != end; ++e)
      if (--pending[boost::target(*e, g())] == 0) ready.push(boost::target(*e, g()));
  }
  TXL_CHECK(order.size() == pending.size(), "graph has a cycle");
  return order;
}

std::optional<Node> Graph::findInput(const std::string& name) const {
  for (Node n : nodesOfKind(OpKind::Input))
    if (op(n).attrs.getString("name") == name) return n;
  return std::nullopt;
}

std::optional<Node> Graph::findOutput(const std::string& name) const {
  for (Node n : nodesOfKind(OpKind::Output))
    if (op(n).attrs.getString("name") == name) return n;
  return std::nullopt;
}

std::vector<Node> Graph::nodesOfKind(OpKind k) const {
  std::vector<Node> out;
  for (Node n : nodes())
    if (kind(n) == k) out.push_back(n);
  return out;
}

}  // namespace txl::ir
