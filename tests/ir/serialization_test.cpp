// tests/ir/serialization_test.cpp - text and JSON round trips, parse errors, DOT.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "ir/check.h"
#include "ir/dot.h"
#include "ir/json_io.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "tests/ir/sample_graphs.h"

using namespace txl::ir;

TEST_CASE("every sample graph round-trips through text and JSON") {
  for (const auto& sample : txl::testing::allSamples()) {
    INFO(sample.name);
    Graph g = sample.build();
    REQUIRE(!verify(g));
    std::string text = print(g);
    Graph parsed = parse(text);
    CHECK(!verify(parsed));
    CHECK(print(parsed) == text);
    nlohmann::json j = toJson(g);
    Graph imported = fromJson(nlohmann::json::parse(j.dump()));
    CHECK(print(imported) == text);
    CHECK(toJson(imported) == j);
  }
}

TEST_CASE("attributes of every kind print and parse back") {
  const char* text =
      "graph @attrs {\n"
      "  %0 = input() {name = \"a \\\"quoted\\\" name\"} : f32[2,3]\n"
      "  %1 = masked_fill(%0, %0) {value = -inf} : f32[2,3]\n"
      "  %2 = scale(%1) {factor = 1e-05} : f32[2,3]\n"
      "  %3 = scale(%2) {factor = 0.125} : f32[2,3]\n"
      "  %4 = reshape(%3) {shape = [3, 2]} : f32[3,2]\n"
      "  %5 = attn_mask() {mem_len = 2, mlen = 0, qlen = 3, same_length = true} : f32[3,3]\n"
      "  output(%4) {name = \"y\"}\n"
      "  output(%5) {name = \"m\"}\n"
      "}\n";
  Graph g = parse(text);
  CHECK(print(g) == text);
  CHECK(print(fromJson(toJson(g))) == text);
}

TEST_CASE("the parser infers omitted result types and accepts comments") {
  Graph g = parse(
      "// a comment\n"
      "graph @g {\n"
      "  %0 = input() {name = \"x\"} : f32[2,3]   // trailing comment\n"
      "  %7 = relu(%0)\n"
      "  output(%7) {name = \"y\"}\n"
      "}\n");
  CHECK(
      print(g) ==
      "graph @g {\n  %0 = input() {name = \"x\"} : f32[2,3]\n  %1 = relu(%0) : f32[2,3]\n  output(%1) {name = \"y\"}\n}\n");
}

TEST_CASE("parse errors name line, column, expectation and what was found") {
  auto err = [](const char* text) {
    try {
      parse(text, "t.ir");
    } catch (const txl::Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK(err("graph @g {\n  %0 = frobnicate()\n}") == "t.ir:2:8: unknown op 'frobnicate', found 'frobnicate()'");
  CHECK(err("graph @g {\n  %1 = relu(%0)\n}") == "t.ir:2:13: use of undefined value %0, found '%0)'");
  CHECK(err("graph @g {\n  %0 = input() {name = \"x\"} : f33[2]\n}") ==
        "t.ir:2:31: expected a dtype (f32, bf16, i64), found 'f33[2]'");
  CHECK(verify(parse("graph @g {\n  %0 = input() : f32[2]\n}")).value() == "%0 = input(): missing attribute 'name'");
  CHECK(err("graph @g {\n  %0 = input() {name = \"x\"}\n}") == "t.ir:2: input: input needs a declared type");
  CHECK(err("graph @g {\n  output(%0)") == "t.ir:2:10: use of undefined value %0, found '%0)'");
  CHECK(err("graph @g {\n  %0 = input() {name = \"x\"} : f32[2]\n  %0 = relu(%0)\n}") ==
        "t.ir:4:1: value %0 is defined twice, found '}'");
  CHECK(err("graph @g {") == "t.ir:1:11: expected an op or '}', found end of input");
  // Optional attributes of the wrong kind are located errors too, never internal ones.
  const std::string two = "graph @g {\n  %0 = input() {name = \"a\"} : f32[2,2]\n";
  CHECK(err((two + "  %1 = matmul(%0, %0) {transpose_b = \"yes\"}\n}").c_str()) ==
        "t.ir:3: matmul: attribute 'transpose_b' must be a bool");
  CHECK(err((two + "  %1 = matmul(%0, %0) {transpose_a = 1}\n}").c_str()) ==
        "t.ir:3: matmul: attribute 'transpose_a' must be a bool");
}

TEST_CASE("JSON import errors name the JSON pointer") {
  auto err = [](const std::string& text) {
    try {
      fromJson(nlohmann::json::parse(text), "g.json");
    } catch (const txl::Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK(err(R"({"format": "txlc-graph/2", "name": "g", "nodes": []})") == "g.json: /format: expected \"txlc-graph/1\"");
  CHECK(err(R"({"format": "txlc-graph/1", "name": "g", "nodes": [{"id": 0, "op": "relu", "operands": [3],
             "type": {"dtype": "f32", "shape": [2]}}]})") ==
        "g.json: /nodes/0/operands/0: refers to an undefined or later node");
  CHECK(err(R"({"format": "txlc-graph/1", "name": "g", "nodes": [{"id": 0, "op": "input", "attrs": {"name": "x"},
             "type": {"dtype": "f32", "shape": [-2]}}]})") ==
        "g.json: /nodes/0/type/shape/0: expected a non-negative integer");
}

TEST_CASE("DOT output has one node per op and one labelled edge per operand") {
  Graph g = txl::testing::mlpSample();
  std::string dot = toDot(g);
  CHECK(dot.rfind("digraph \"mlp\" {", 0) == 0);
  CHECK(dot.find("n0 [label=\"%0 = input\\nname = \\\"x\\\"\\nf32[4,2,8]\"];") != std::string::npos);
  CHECK(dot.find("n0 -> n3 [label=\"0\"];") != std::string::npos);
  CHECK(dot.find("n1 -> n3 [label=\"1\"];") != std::string::npos);
  std::size_t nodes = 0, edges = 0;
  for (std::size_t p = dot.find("[label="); p != std::string::npos; p = dot.find("[label=", p + 1))
    ++(dot.rfind("->", p) != std::string::npos && dot.rfind("->", p) > dot.rfind('\n', p) ? edges : nodes);
  CHECK(nodes == g.size());
  CHECK(edges == 7);
}

TEST_CASE("oneLine escapes control characters and keeps the rest") {
  CHECK(txl::oneLine("a\nb\tc\rd") == "a\\nb\\tc\\rd");
  CHECK(txl::oneLine(std::string("x\x01y\x7f", 4)) == "x\\x01y\\x7f");
  CHECK(txl::oneLine("plain path/é.txt") == "plain path/é.txt");
  // Bounded: a 5 MB name gives a line of about kMaxLine bytes, cut between characters.
  std::string huge;
  for (int i = 0; i < 1000000; ++i) huge += "é\x1b";
  const std::string line = txl::oneLine(huge);
  CHECK(line.size() < txl::kMaxLine + 40);
  CHECK(line.find("\u2026 (" + std::to_string(huge.size()) + " bytes)") != std::string::npos);
  CHECK(txl::oneLine(std::string(txl::kMaxLine, 'a')) == std::string(txl::kMaxLine, 'a'));
}
