// tests/driver/inspect_test.cpp - renumberNodes: the backend's "node <id>"
// labels as the %N names `txlc inspect` prints.
#include <catch2/catch.hpp>

#include <string>

#include "driver/inspect.h"
#include "ir/graph.h"
#include "ir/printer.h"

using namespace txl;
using driver::renumberNodes;

TEST_CASE("renumberNodes: each \"node <id>\" of the graph becomes its %N; other ids and text stay") {
  ir::Graph g;
  const ir::Node a = g.addInput("a", {ir::DType::F32, {2}});
  const ir::Node r = g.add(ir::OpKind::Relu, {g.add(ir::OpKind::Relu, {a})});
  g.addOutput("y", r);
  const ir::Numbering numbers(g);
  const std::string id = std::to_string(g.op(r).id), name = numbers.name(r);
  REQUIRE(name.front() == '%');
  CHECK(renumberNodes("node " + id, g) == name);
  CHECK(renumberNodes("the arena of node " + id + ", subnode " + id + "; node node " + id + "!", g) ==
        "the arena of " + name + ", sub" + name + "; node " + name + "!");
  // An id the graph lacks, one past 2^64 and a word without digits are kept.
  const std::string kept = "node 4242424, node 99999999999999999999999, node , node";
  CHECK(renumberNodes(kept, g) == kept);
  CHECK(renumberNodes("", g).empty());
  CHECK(renumberNodes("node " + id + "0", g) == "node " + id + "0");
}
