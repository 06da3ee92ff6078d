// tests/passes/pass_file_test.cpp - runs every tests/passes/**/*.ir file.
//
// A test file is IR text (ir/parser.h) with directives in `//` comments:
//   // RUN: pass1,pass2          the passes to run, in order (required)
//   // MAX-KLEN: 12              PassContext::maxKlen
//   // TARGET: slow <op>         a target that reports every <op> as a slow path
//   // EXPECT-ERROR: text        the pipeline must fail with a message containing text
//   // EXPECT-UNCHANGED          the printed graph after the passes equals the input's
//   // REMARK: text              some remark of the passes contains text
//   // NO-NUMERIC: why           skip the numeric check (a memory-form pass changes what a
//                                slot holds, so the runs before and after are not comparable)
//   // NUMERIC-TOLERANCE: t       the numeric check's relative and absolute tolerance
//                                (a precision pass rounds; default 1e-5 relative)
//   // CHECK / CHECK-NEXT / CHECK-NOT   matched against the printed result
// Unless an error is expected, the reference interpreter also runs the graph
// before and after the passes on seeded random weights, inputs and memories
// (ids in range); every output must agree within 1e-5 relative.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "backend/reference/reference_interpreter.h"
#include "ir/check.h"
#include "ir/parser.h"
#include "ir/pass_manager.h"
#include "ir/printer.h"
#include "ir/target_info.h"
#include "passes/registry.h"
#include "tests/passes/numeric_support.h"
#include "tests/support/check_matcher.h"

namespace {

namespace fs = std::filesystem;
using namespace txl;

struct TestFile {
  std::string path, text;
  std::vector<std::string> passes;
  std::optional<std::int64_t> maxKlen;
  std::optional<std::string> slowOp, expectError;
  std::vector<std::string> remarks;
  bool expectUnchanged = false;
  bool numeric = true;
  double tolerance = 1e-5;  // NUMERIC-TOLERANCE: relative and absolute
};

std::optional<std::string> directive(const std::string& line, const std::string& name) {
  const std::string key = "// " + name;
  auto at = line.find(key);
  if (at == std::string::npos) return std::nullopt;
  std::string rest = line.substr(at + key.size());
  if (!rest.empty() && rest[0] == ':') rest = rest.substr(1);
  auto b = rest.find_first_not_of(' ');
  return b == std::string::npos ? std::string() : rest.substr(b);
}

TestFile readTestFile(const fs::path& path) {
  TestFile t;
  t.path = path.string();
  std::ifstream in(path);
  std::stringstream buf;
  buf << in.rdbuf();
  t.text = buf.str();
  std::stringstream lines(t.text);
  for (std::string line; std::getline(lines, line);) {
    if (auto v = directive(line, "RUN")) {
      std::stringstream names(*v);
      for (std::string n; std::getline(names, n, ',');) t.passes.push_back(n);
    }
    if (auto v = directive(line, "MAX-KLEN")) t.maxKlen = std::stoll(*v);
    if (auto v = directive(line, "TARGET: slow")) t.slowOp = *v;
    if (auto v = directive(line, "EXPECT-ERROR")) t.expectError = *v;
    if (auto v = directive(line, "REMARK")) t.remarks.push_back(*v);
    if (directive(line, "EXPECT-UNCHANGED")) t.expectUnchanged = true;
    if (directive(line, "NO-NUMERIC")) t.numeric = false;
    if (auto v = directive(line, "NUMERIC-TOLERANCE")) t.tolerance = std::stod(*v);
  }
  return t;
}

// A target on which every op of one kind would run on a `ref` implementation.
class SlowTarget final : public ir::TargetInfo {
 public:
  explicit SlowTarget(std::string op) : op_(std::move(op)) {}
  std::string name() const override { return "test-slow"; }
  std::optional<std::string> slowPathReason(const ir::Graph& g, ir::Node n) const override {
    if (ir::opInfo(g.kind(n)).name != op_) return std::nullopt;
    return "the lowering would pick a ref implementation (test target)";
  }

 private:
  std::string op_;
};

std::vector<fs::path> testFiles() {
  std::vector<fs::path> files;
  for (const auto& e : fs::recursive_directory_iterator(TXL_PASS_TEST_DIR))
    if (e.is_regular_file() && e.path().extension() == ".ir") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  return files;
}

void runTestFile(const TestFile& t) {
  REQUIRE_FALSE(t.passes.empty());
  ir::Graph before = ir::parse(t.text, t.path);
  ir::Graph after = before;
  ir::PassManager pm;
  for (const auto& name : t.passes) pm.add(passes::createPass(name));
  ir::PassContext ctx;
  ctx.maxKlen = t.maxKlen;
  std::optional<SlowTarget> target;
  if (t.slowOp) ctx.target = &target.emplace(*t.slowOp);
  try {
    pm.run(after, ctx);
  } catch (const Error& e) {
    INFO("error: " << e.what());
    REQUIRE(t.expectError);
    CHECK(std::string(e.what()).find(*t.expectError) != std::string::npos);
    return;
  }
  REQUIRE_FALSE(t.expectError);
  const std::string printed = ir::print(after);
  INFO("after the passes:\n" << printed);
  if (t.expectUnchanged) CHECK(printed == ir::print(before));
  auto checks = testing::parseCheckDirectives(t.text);
  if (auto failure = testing::matchChecks(checks, printed)) FAIL(*failure);
  for (const auto& want : t.remarks) {
    bool found = false;
    for (const auto& r : ctx.remarks) found |= (r.pass + ": " + r.message).find(want) != std::string::npos;
    INFO("remark wanted: " << want);
    CHECK(found);
  }
  // Numerics: the same outputs before and after on the reference interpreter.
  if (!t.numeric) return;
  auto exe = backend::makeReferenceExecutor();
  for (std::uint64_t seed : {1u, 2u}) {
    auto weights = testing::randomWeights(before, seed);
    auto inputs = testing::randomInputs(before, seed);
    auto expected = testing::runGraph(*exe, before, weights, inputs);
    auto actual = testing::runGraph(*exe, after, weights, testing::inputsAs(after, inputs));
    auto diff = t.tolerance == 1e-5 ? testing::compareOutputs(expected, actual, 1e-5)
                                    : testing::compareOutputs(expected, actual, t.tolerance, t.tolerance);
    if (diff) FAIL("seed " << seed << ": " << *diff);
  }
}

}  // namespace

TEST_CASE("pass text tests") {
  auto files = testFiles();
  REQUIRE(files.size() >= 24);  // a positive, a must-not-fire and an error case for each of eight passes
  for (const auto& path : files) {
    DYNAMIC_SECTION(fs::relative(path, TXL_PASS_TEST_DIR).string()) { runTestFile(readTestFile(path)); }
  }
}
