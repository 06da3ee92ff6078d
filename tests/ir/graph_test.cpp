// tests/ir/graph_test.cpp - building graphs, use lists, rewrites, ordering.
#include <catch2/catch.hpp>

#include "ir/check.h"
#include "ir/graph.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "tests/ir/sample_graphs.h"

using namespace txl::ir;

TEST_CASE("building a graph infers result types") {
  Graph g = txl::testing::mlpSample();
  REQUIRE(!verify(g));
  auto linear = g.nodesOfKind(OpKind::Linear);
  REQUIRE(linear.size() == 1);
  CHECK(g.type(linear[0]) == TensorType{DType::F32, {4, 2, 16}});
}

TEST_CASE("an ill-typed op is refused when built") {
  Graph g;
  Node x = g.addInput("x", {DType::F32, {4, 8}});
  Node w = g.addWeight("w", {DType::F32, {16, 7}});
  CHECK_THROWS_WITH(g.add(OpKind::Linear, {x, w}), "linear: input features 8 != weight columns 7");
}

TEST_CASE("users, replaceAllUsesWith and erase keep descriptors valid") {
  Graph g;
  Node x = g.addInput("x", {DType::F32, {4}});
  Node a = g.add(OpKind::Relu, {x});
  Node b = g.add(OpKind::Add, {a, a});
  Node out = g.addOutput("y", b);
  CHECK(g.users(a) == std::vector<Node>{b});
  Node c = g.add(OpKind::Scale, {x}, {{"factor", 2.0}});
  g.replaceAllUsesWith(a, c);
  CHECK(g.operands(b) == std::vector<Node>{c, c});
  CHECK(!g.hasUsers(a));
  g.erase(a);
  // b and out are still valid after erasing another node.
  CHECK(g.kind(b) == OpKind::Add);
  CHECK(g.operand(out, 0) == b);
  CHECK(g.size() == 4);
  REQUIRE(!verify(g));
  // c was created after b's original operand, but prints before b.
  CHECK(print(g) ==
        "graph @main {\n"
        "  %0 = input() {name = \"x\"} : f32[4]\n"
        "  %1 = scale(%0) {factor = 2.0} : f32[4]\n"
        "  %2 = add(%1, %1) : f32[4]\n"
        "  output(%2) {name = \"y\"}\n"
        "}\n");
}

TEST_CASE("erasing a node with users is an internal error") {
  Graph g;
  Node x = g.addInput("x", {DType::F32, {4}});
  g.addOutput("y", x);
  CHECK_THROWS_AS(g.erase(x), txl::InternalError);
}

TEST_CASE("copies are deep and independent") {
  Graph g = txl::testing::attentionSample();
  Graph copy = g;
  CHECK(print(copy) == print(g));
  auto outs = copy.nodesOfKind(OpKind::Output);
  copy.erase(outs[0]);
  CHECK(print(copy) != print(g));
  CHECK(!verify(g));
}
