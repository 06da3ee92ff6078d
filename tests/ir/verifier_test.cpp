// tests/ir/verifier_test.cpp - the verifier names the node and the problem.
#include <catch2/catch.hpp>

#include "ir/check.h"
#include "ir/graph.h"
#include "ir/verifier.h"

using namespace txl::ir;

TEST_CASE("verifier accepts a valid graph") {
  Graph g;
  Node x = g.addInput("x", {DType::F32, {2, 3}});
  g.addOutput("y", g.add(OpKind::Relu, {x}));
  CHECK(!verify(g));
}

TEST_CASE("verifier reports a declared type that disagrees with inference") {
  Graph g;
  Node x = g.addInput("x", {DType::F32, {2, 3}});
  Node r = g.add(OpKind::Relu, {x}, {}, TensorType{DType::F32, {3, 2}});
  g.addOutput("y", r);
  auto problem = verify(g);
  REQUIRE(problem);
  CHECK(*problem == "%1 = relu(%0): declared type f32[3,2], inferred f32[2,3]");
}

TEST_CASE("verifier reports operand count, attributes, dtypes and duplicates") {
  SECTION("missing attribute") {
    Graph g;
    Node x = g.addInput("x", {DType::F32, {2, 3}});
    Node s = g.add(OpKind::Softmax, {x}, {{"axis", std::int64_t(1)}});
    g.op(s).attrs.erase("axis");
    g.addOutput("y", s);
    CHECK(verify(g).value() == "%1 = softmax(%0): missing attribute 'axis'");
  }
  SECTION("attribute of the wrong type") {
    Graph g;
    Node x = g.addInput("x", {DType::F32, {2, 3}});
    Node s = g.add(OpKind::Softmax, {x}, {{"axis", std::int64_t(1)}});
    g.op(s).attrs.set("axis", std::string("last"));
    g.addOutput("y", s);
    CHECK(verify(g).value() == "%1 = softmax(%0): attribute 'axis' must be an integer");
  }
  SECTION("wrong operand count") {
    Graph g;
    Node x = g.addInput("x", {DType::F32, {2, 3}});
    Node r = g.add(OpKind::Relu, {x});
    g.setOperands(r, {x, x});
    g.addOutput("y", r);
    CHECK(verify(g).value() == "%1 = relu(%0, %0): takes 1 operands, got 2");
  }
  SECTION("dtype mismatch") {
    Graph g;
    Node x = g.addInput("x", {DType::F32, {2, 3}});
    Node i = g.addInput("i", {DType::I64, {2, 3}});
    Node a = g.add(OpKind::Relu, {x});
    g.setOperands(a, {i});
    g.addOutput("y", a);
    CHECK(verify(g).value() == "%2 = relu(%1): expected a floating-point operand, got i64[2,3]");
  }
  SECTION("duplicate output names") {
    Graph g;
    Node x = g.addInput("x", {DType::F32, {2}});
    g.addOutput("y", x);
    g.addOutput("y", x);
    CHECK(verify(g).value() == "output(%0): duplicate output name");
  }
  SECTION("out-of-range slice") {
    Graph g;
    Node x = g.addInput("x", {DType::F32, {2, 3}});
    Node s =
        g.add(OpKind::Slice, {x}, {{"axis", std::int64_t(1)}, {"start", std::int64_t(0)}, {"end", std::int64_t(3)}});
    g.op(s).attrs.set("end", std::int64_t(4));
    g.addOutput("y", s);
    CHECK(verify(g).value() == "%1 = slice(%0): range [0, 4) outside axis 1 of f32[2,3]");
  }
}

TEST_CASE("verifyOrThrow prefixes the context") {
  Graph g;
  Node x = g.addInput("x", {DType::F32, {2, 3}});
  g.addOutput("y", g.add(OpKind::Relu, {x}, {}, TensorType{DType::F32, {1}}));
  CHECK_THROWS_WITH(verifyOrThrow(g, "after fold"),
                    "after fold: %1 = relu(%0): declared type f32[1], inferred f32[2,3]");
}
