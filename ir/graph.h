// ir/graph.h - the txlc graph: ops and their values on a Boost.Graph.
//
// Every node is one op; a node that is not a sink produces exactly one value,
// so a node *is* its value. Operands are ordered (node data keeps them as a
// vector); the Boost edges mirror them (producer -> consumer, one edge per
// operand slot) so that graph algorithms and use lists come for free.
// Vertices live in a std::list, so a Node descriptor stays valid when passes
// erase other nodes.
//
//   Graph g("tiny");
//   Node x = g.addInput("x", {DType::F32, {4, 8}});
//   Node w = g.addWeight("w", {DType::F32, {16, 8}});
//   Node y = g.add(OpKind::Linear, {x, w});          // type inferred: f32[4,16]
//   g.addOutput("y", y);
#pragma once

// GCC 12 at -O1 (the sanitizer build) reports the empty boost::optional
// that named_graph.hpp returns from add_vertex as used uninitialized once
// inlined: a false report inside Boost, silenced for its headers.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#if !defined(__clang__)  // clang has no -Wmaybe-uninitialized (the fuzz build)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <boost/graph/adjacency_list.hpp>
#pragma GCC diagnostic pop
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ir/op.h"

namespace txl::ir {

struct NodeProps {
  OpData op;
  std::vector<void*> operands;  // Node descriptors (void* for listS); use Graph::operands()
};
struct EdgeProps {
  int operandIndex = 0;
};

using BoostGraph = boost::adjacency_list<boost::listS, boost::listS, boost::bidirectionalS, NodeProps, EdgeProps>;
using Node = boost::graph_traits<BoostGraph>::vertex_descriptor;

class Graph {
 public:
  explicit Graph(std::string name = "main") : name_(std::move(name)) {}
  Graph(const Graph& other);
  Graph& operator=(const Graph& other);
  // Moves keep node descriptors valid (the Boost graph lives on the heap:
  // adjacency_list itself has no move, and a copy would leave operands
  // pointing at the old vertices).
  Graph(Graph&&) noexcept = default;
  Graph& operator=(Graph&&) noexcept = default;

  const std::string& name() const { return name_; }
  void setName(std::string name) { name_ = std::move(name); }

  // Adds an op. When `type` is empty and the op has a result, the type is
  // inferred from the operands (an inference failure throws txl::Error).
  Node add(OpKind kind, const std::vector<Node>& operands, Attrs attrs = {},
           std::optional<TensorType> type = std::nullopt);
  Node addInput(const std::string& name, TensorType type);
  Node addWeight(const std::string& name, TensorType type);
  Node addOutput(const std::string& name, Node value);

  const OpData& op(Node n) const { return g()[n].op; }
  OpData& op(Node n) { return g()[n].op; }
  OpKind kind(Node n) const { return g()[n].op.kind; }
  const TensorType& type(Node n) const;  // the result type (internal error for sinks)
  std::vector<Node> operands(Node n) const;
  Node operand(Node n, std::size_t i) const;
  std::size_t numOperands(Node n) const { return g()[n].operands.size(); }

  // Distinct consumers of n's value, in creation order.
  std::vector<Node> users(Node n) const;
  bool hasUsers(Node n) const { return boost::out_degree(n, g()) != 0; }

  void setOperand(Node n, std::size_t i, Node value);
  void setOperands(Node n, const std::vector<Node>& values);
  // Every use of `from` now reads `to`.
  void replaceAllUsesWith(Node from, Node to);
  // Removes a node that has no users.
  void erase(Node n);

  // All nodes in creation order / in a deterministic topological order
  // (operands first; among ready nodes, the one created first).
  std::vector<Node> nodes() const;
  std::vector<Node> topologicalOrder() const;
  std::size_t size() const { return boost::num_vertices(g()); }

  // Lookups by name among inputs, outputs, weights.
  std::optional<Node> findInput(const std::string& name) const;
  std::optional<Node> findOutput(const std::string& name) const;
  std::vector<Node> nodesOfKind(OpKind kind) const;

  const BoostGraph& boost() const { return g(); }

 private:
  void addEdges(Node n);
  void removeEdges(Node n);

  BoostGraph& g() { return *graph_; }
  const BoostGraph& g() const { return *graph_; }

  std::string name_;
  std::unique_ptr<BoostGraph> graph_ = std::make_unique<BoostGraph>();
  std::uint64_t nextId_ = 0;
};

}  // namespace txl::ir
