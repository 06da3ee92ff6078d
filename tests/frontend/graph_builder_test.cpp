// tests/frontend/graph_builder_test.cpp - the literal segment graph: golden text
// of a tiny model, and a verified graph for every segment of every conformance case.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "frontend/graph_builder.h"
#include "frontend/model_spec.h"
#include "ir/check.h"
#include "ir/json_io.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/verifier.h"

using namespace txl;

namespace {
std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}
}  // namespace

TEST_CASE("the literal graph of a tiny model matches its golden text") {
  // Regenerate after a deliberate change of the builder with TXL_UPDATE_GOLDEN=1.
  nlohmann::json j = {{"n_token", 10}, {"n_layer", 1}, {"n_head", 2},  {"d_model", 4},        {"d_head", 2},
                      {"d_inner", 8},  {"tgt_len", 2}, {"mem_len", 2}, {"same_length", true}, {"clamp_len", 2}};
  frontend::ModelSpec spec = frontend::parseModelSpec(j, "tiny.json");
  ir::Graph g = frontend::buildSegmentGraph(spec, frontend::defaultSegment(spec, 1, 2, 1));
  std::string text = ir::print(g);
  const std::string golden = std::string(TXL_TEST_DATA_DIR) + "/frontend/data/tiny_graph.golden.ir";
  if (std::getenv("TXL_UPDATE_GOLDEN")) std::ofstream(golden) << text;
  CHECK(text == readFile(golden));
  CHECK(ir::print(ir::parse(text)) == text);
  CHECK(ir::print(ir::fromJson(ir::toJson(g))) == text);
}

TEST_CASE("every segment of every conformance case builds a verified graph") {
  int graphs = 0;
  for (const auto& entry : std::filesystem::directory_iterator(std::string(TXL_TEST_DATA_DIR) + "/conformance")) {
    if (!std::filesystem::exists(entry.path() / "case.json")) continue;
    INFO(entry.path());
    nlohmann::json c = nlohmann::json::parse(readFile((entry.path() / "case.json").string()));
    frontend::ModelSpec spec = frontend::parseModelSpec(c["config"], "case.json");
    for (const auto& seg : c["segments"]) {
      ir::Graph g = frontend::buildSegmentGraph(
          spec, frontend::defaultSegment(spec, c["batch"].get<std::int64_t>(), seg["qlen"].get<std::int64_t>(),
                                         seg["mlen"].get<std::int64_t>()));
      CHECK(!ir::verify(g));
      CHECK(ir::print(ir::parse(ir::print(g))) == ir::print(g));
      ++graphs;
    }
  }
  CHECK(graphs >= 30);
}

TEST_CASE("a segment shape the spec cannot take is one clear error") {
  nlohmann::json j = {{"n_token", 10}, {"n_layer", 1}, {"n_head", 2},  {"d_model", 4},
                      {"d_head", 2},   {"d_inner", 8}, {"tgt_len", 2}, {"mem_len", 2}};
  frontend::ModelSpec spec = frontend::parseModelSpec(j, "tiny.json");
  CHECK_THROWS_WITH(frontend::buildSegmentGraph(spec, frontend::defaultSegment(spec, 1, 2, 3)),
                    "tiny.json: cannot build a segment: mlen must be in [0, mem_len 2], got 3");
  CHECK_THROWS_WITH(frontend::buildSegmentGraph(spec, frontend::defaultSegment(spec, 1, 0, 0)),
                    "tiny.json: cannot build a segment: qlen must be at least 1, got 0");
}
