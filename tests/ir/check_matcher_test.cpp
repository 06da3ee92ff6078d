// tests/ir/check_matcher_test.cpp - the CHECK-line matcher itself.
#include <catch2/catch.hpp>

#include "tests/support/check_matcher.h"

using namespace txl::testing;

namespace {
std::optional<std::string> run(const std::string& checks, const std::string& output) {
  return matchChecks(parseCheckDirectives(checks), output);
}
}  // namespace

TEST_CASE("CHECK finds lines in order") {
  CHECK(!run("// CHECK: a\n// CHECK: c\n", "a\nb\nc\n"));
  CHECK(run("// CHECK: c\n// CHECK: a\n", "a\nb\nc\n").value().find("CHECK failed") == 0);
}

TEST_CASE("CHECK-NEXT needs the very next line") {
  CHECK(!run("// CHECK: a\n// CHECK-NEXT: b\n", "a\nb\nc\n"));
  CHECK(run("// CHECK: a\n// CHECK-NEXT: c\n", "a\nb\nc\n").value().find("CHECK-NEXT failed") == 0);
}

TEST_CASE("CHECK-NOT forbids a pattern between matches and at the end") {
  CHECK(!run("// CHECK: a\n// CHECK-NOT: x\n// CHECK: c\n", "a\nb\nc\nx\n"));
  CHECK(run("// CHECK: a\n// CHECK-NOT: b\n// CHECK: c\n", "a\nb\nc\n").value().find("CHECK-NOT failed") == 0);
  CHECK(run("// CHECK-NOT: rel_shift\n", "add\nrel_shift\n").value().find("CHECK-NOT failed") == 0);
}

TEST_CASE("{{regex}} parts match regular expressions") {
  CHECK(!run("// CHECK: %{{[0-9]+}} = relu(%{{[0-9]+}})\n", "  %12 = relu(%3) : f32[2]\n"));
  CHECK(run("// CHECK: %{{[0-9]+}} = relu(%x)\n", "  %12 = relu(%3) : f32[2]\n"));
}
