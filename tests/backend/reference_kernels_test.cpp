// tests/backend/reference_kernels_test.cpp - every reference kernel against numbers worked out by hand,
// and the reference interpreter on a small graph.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <vector>

#include "backend/reference/reference_interpreter.h"
#include "backend/reference/reference_kernels.h"
#include "ir/check.h"
#include "ir/graph.h"

using namespace txl;
using ir::DType;
using ir::Shape;
using ir::Tensor;

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

Tensor f32(Shape shape, const std::vector<float>& values) {
  Tensor t = Tensor::zeros({DType::F32, std::move(shape)});
  REQUIRE(std::size_t(t.numel()) == values.size());
  std::copy(values.begin(), values.end(), t.data<float>());
  return t;
}

Tensor i64(Shape shape, const std::vector<std::int64_t>& values) {
  Tensor t = Tensor::zeros({DType::I64, std::move(shape)});
  REQUIRE(std::size_t(t.numel()) == values.size());
  std::copy(values.begin(), values.end(), t.data<std::int64_t>());
  return t;
}

// `got` has type f32`shape` and each element is within `tol` of `want`
// (infinities and NaN must match exactly). Names the first bad element.
void expectF32(const Tensor& got, const Shape& shape, const std::vector<float>& want, float tol = 1e-6f) {
  REQUIRE(got.type() == ir::TensorType{DType::F32, shape});
  REQUIRE(std::size_t(got.numel()) == want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    float g = got.data<float>()[i], w = want[i];
    INFO("element " << i << ": got " << g << ", want " << w);
    if (std::isnan(w)) CHECK(std::isnan(g));
    else if (std::isinf(w)) CHECK(g == w);
    else CHECK(std::fabs(g - w) <= tol);
  }
}

std::vector<std::int64_t> valuesI64(const Tensor& t) {
  REQUIRE(t.dtype() == DType::I64);
  return {t.data<std::int64_t>(), t.data<std::int64_t>() + t.numel()};
}

}  // namespace

using namespace txl::backend;

TEST_CASE("add, sub and mul broadcast numpy-style", "[reference]") {
  Tensor a = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  expectF32(ref::add(a, f32({3}, {10, 20, 30})), {2, 3}, {11, 22, 33, 14, 25, 36});
  expectF32(ref::add(a, f32({2, 1}, {100, 200})), {2, 3}, {101, 102, 103, 204, 205, 206});
  expectF32(ref::sub(f32({2, 1}, {100, 200}), f32({3}, {1, 2, 3})), {2, 3}, {99, 98, 97, 199, 198, 197});
  expectF32(ref::mul(a, f32({1}, {-2})), {2, 3}, {-2, -4, -6, -8, -10, -12});
  Tensor sum = ref::add(i64({2}, {1, 2}), i64({2, 1}, {10, 20}));
  CHECK(sum.shape() == Shape{2, 2});
  CHECK(valuesI64(sum) == std::vector<std::int64_t>{11, 12, 21, 22});
  CHECK_THROWS_AS(ref::add(a, i64({3}, {1, 2, 3})), txl::Error);
}

TEST_CASE("scale and relu", "[reference]") {
  expectF32(ref::scale(f32({3}, {1, -2, 0.5f}), 0.25), {3}, {0.25f, -0.5f, 0.125f});
  float nan = std::numeric_limits<float>::quiet_NaN();
  expectF32(ref::relu(f32({5}, {-1, 0, 2.5f, nan, -kInf})), {5}, {0, 0, 2.5f, nan, 0});
  CHECK_THROWS_AS(ref::relu(i64({1}, {1})), txl::Error);
}

TEST_CASE("masked_fill broadcasts the mask over leading dimensions", "[reference]") {
  Tensor x = f32({2, 2, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
  Tensor mask = f32({2, 3}, {0, 1, 0, 1, 0, 0});
  expectF32(ref::maskedFill(x, mask, -INFINITY), {2, 2, 3}, {1, -kInf, 3, -kInf, 5, 6, 7, -kInf, 9, -kInf, 11, 12});
  // A [Q, K, 1, 1] mask over [Q, K, B, H] scores, as the reference lays them out.
  Tensor scores = f32({2, 2, 1, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  Tensor causal = i64({2, 2, 1, 1}, {0, 1, 0, 0});
  expectF32(ref::maskedFill(scores, causal, -1.0), {2, 2, 1, 2}, {1, 2, -1, -1, 5, 6, 7, 8});
}

TEST_CASE("concat, slice, pad", "[reference]") {
  expectF32(ref::concat({f32({2, 1}, {1, 2}), f32({2, 2}, {3, 4, 5, 6})}, 1), {2, 3}, {1, 3, 4, 2, 5, 6});
  expectF32(ref::concat({f32({1, 2}, {1, 2}), f32({2, 2}, {3, 4, 5, 6})}, 0), {3, 2}, {1, 2, 3, 4, 5, 6});
  expectF32(ref::concat({f32({2, 1}, {1, 2}), f32({2, 1}, {3, 4})}, -1), {2, 2}, {1, 3, 2, 4});
  Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  expectF32(ref::slice(x, 1, 1, 3), {2, 2}, {2, 3, 5, 6});
  expectF32(ref::slice(x, 0, 1, 2), {1, 3}, {4, 5, 6});
  expectF32(ref::slice(x, -1, 2, 2), {2, 0}, {});
  expectF32(ref::pad(f32({2, 2}, {1, 2, 3, 4}), 0, 1, 2, 7), {5, 2}, {7, 7, 1, 2, 3, 4, 7, 7, 7, 7});
  expectF32(ref::pad(f32({2, 1}, {1, 2}), 1, 1, 0, 0), {2, 2}, {0, 1, 0, 2});
  CHECK(valuesI64(ref::pad(i64({2}, {5, 6}), 0, 0, 1, -3)) == std::vector<std::int64_t>{5, 6, -3});
}

TEST_CASE("reshape is a view, permute moves dimensions", "[reference]") {
  Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor r = ref::reshape(x, {3, 2});
  CHECK(r.shape() == Shape{3, 2});
  CHECK(r.raw() == x.raw());
  expectF32(ref::permute(x, {1, 0}), {3, 2}, {1, 4, 2, 5, 3, 6});
  // x[a, b, c] = 12a + 4b + c; y = permute(x, [2, 0, 1]) so y[i, j, k] = x[j, k, i] = 12j + 4k + i.
  std::vector<float> iota(24);
  for (int i = 0; i < 24; ++i) iota[i] = float(i);
  Tensor y = ref::permute(f32({2, 3, 4}, iota), {2, 0, 1});
  REQUIRE(y.shape() == Shape{4, 2, 3});
  CHECK(y.data<float>()[0 * 6 + 1 * 3 + 2] == 12 + 8 + 0);  // y[0,1,2]
  CHECK(y.data<float>()[3 * 6 + 0 * 3 + 1] == 0 + 4 + 3);   // y[3,0,1]
  CHECK(y.data<float>()[2 * 6 + 1 * 3 + 0] == 12 + 0 + 2);  // y[2,1,0]
}

TEST_CASE("embedding gathers rows at id - lo and gives zeros outside the table", "[reference]") {
  Tensor table = f32({3, 2}, {1, 2, 3, 4, 5, 6});  // rows for ids 10, 11, 12
  expectF32(ref::embedding(table, i64({2, 2}, {10, 12, 9, 13}), 10), {2, 2, 2}, {1, 2, 5, 6, 0, 0, 0, 0});
  expectF32(ref::embedding(table, i64({1}, {1}), 0), {1, 2}, {3, 4});
  CHECK_THROWS_AS(ref::embedding(table, f32({1}, {1}), 0), txl::Error);
}

TEST_CASE("linear computes x w^T + bias", "[reference]") {
  Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor w = f32({2, 3}, {1, 0, -1, 0.5f, 0.5f, 0.5f});
  Tensor b = f32({2}, {10, 20});
  expectF32(ref::linear(x, w, &b), {2, 2}, {8, 23, 8, 27.5f});
  expectF32(ref::linear(x.reshaped({1, 2, 3}), w), {1, 2, 2}, {-2, 3, -2, 7.5f});
}

TEST_CASE("matmul with transposes and broadcast batch dimensions", "[reference]") {
  Tensor a = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor b = f32({3, 2}, {7, 8, 9, 10, 11, 12});
  const std::vector<float> ab = {58, 64, 139, 154};
  expectF32(ref::matmul(a, b, false, false), {2, 2}, ab);
  Tensor aT = f32({3, 2}, {1, 4, 2, 5, 3, 6});
  Tensor bT = f32({2, 3}, {7, 9, 11, 8, 10, 12});
  expectF32(ref::matmul(aT, b, true, false), {2, 2}, ab);
  expectF32(ref::matmul(a, bT, false, true), {2, 2}, ab);
  expectF32(ref::matmul(aT, bT, true, true), {2, 2}, ab);
  // b broadcast over a's batch [2, 1]; the second a is 2a.
  Tensor a2 = f32({2, 1, 2, 3}, {1, 2, 3, 4, 5, 6, 2, 4, 6, 8, 10, 12});
  expectF32(ref::matmul(a2, b, false, false), {2, 1, 2, 2}, {58, 64, 139, 154, 116, 128, 278, 308});
  // a broadcast over b's batch [2]; the second b picks columns 0 and 1 of a.
  Tensor b2 = f32({2, 3, 2}, {7, 8, 9, 10, 11, 12, 1, 0, 0, 1, 0, 0});
  expectF32(ref::matmul(a, b2, false, false), {2, 2, 2}, {58, 64, 139, 154, 1, 2, 4, 5});
  // batch [2, 1] against [3]: result batch [2, 3].
  Tensor ones = f32({3, 1, 1}, {1, 2, 3});
  Tensor col = f32({2, 1, 1, 1}, {10, 20});
  expectF32(ref::matmul(col, ones, false, false), {2, 3, 1, 1}, {10, 20, 30, 20, 40, 60});
}

TEST_CASE("layer_norm uses the biased variance and eps", "[reference]") {
  // mean 2.5, biased variance 1.25, 1/sqrt(1.25) = 0.894427191.
  Tensor x = f32({1, 4}, {1, 2, 3, 4});
  expectF32(ref::layerNorm(x, f32({4}, {1, 1, 2, 2}), f32({4}, {0, 0, 0, 1}), 0.0), {1, 4},
            {-1.3416408f, -0.4472136f, 0.8944272f, 3.6832816f});
  // mean 2, variance 1, eps 1: divide by sqrt(2).
  expectF32(ref::layerNorm(f32({2, 2}, {1, 3, 5, 5}), f32({2}, {1, 1}), f32({2}, {0, 0}), 1.0), {2, 2},
            {-0.70710678f, 0.70710678f, 0, 0});
}

TEST_CASE("softmax and log_softmax", "[reference]") {
  float ln3 = std::log(3.0f);
  float nan = std::numeric_limits<float>::quiet_NaN();
  // Rows: [0, ln 3] -> [1/4, 3/4]; [-inf, 0] -> [0, 1]; large equal values; all -inf -> NaN (as PyTorch).
  Tensor x = f32({4, 2}, {0, ln3, -kInf, 0, 1000, 1000, -kInf, -kInf});
  expectF32(ref::softmax(x, -1), {4, 2}, {0.25f, 0.75f, 0, 1, 0.5f, 0.5f, nan, nan});
  expectF32(ref::logSoftmax(x, 1), {4, 2}, {-1.3862944f, -0.2876821f, -kInf, 0, -0.6931472f, -0.6931472f, nan, nan});
  // Over axis 0: columns [0, ln 3] and [0, 0].
  expectF32(ref::softmax(f32({2, 2}, {0, 0, ln3, 0}), 0), {2, 2}, {0.25f, 0.5f, 0.75f, 0.5f});
}

TEST_CASE("rel_shift reproduces the reference's pad-reshape-drop, leftovers included", "[reference]") {
  // x[i, j] = 10 (i + 1) + (j + 1). Padded [3, 6]:  0 11 12 13 14 15 | 0 21 .. 25 | 0 31 .. 35.
  // Dropping the first 3 values and reading 15 as [3, 5]:
  //   13 14 15  0 21 | 22 23 24 25  0 | 31 32 33 34 35
  // y[i, j] = x[i, j + 2 - i] for j <= 2 + i; the rest are leftovers.
  std::vector<float> x, want = {13, 14, 15, 0, 21, 22, 23, 24, 25, 0, 31, 32, 33, 34, 35};
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 5; ++j) x.push_back(float(10 * (i + 1) + j + 1));
  expectF32(ref::relShift(f32({3, 5}, x)), {3, 5}, want);
  // Per leading index: a second matrix of x + 100 shifts the same way; the padded zeros stay zero.
  std::vector<float> x2 = x, want2 = want;
  for (float v : x) x2.push_back(v + 100);
  for (float v : want) want2.push_back(v == 0 ? 0 : v + 100);
  expectF32(ref::relShift(f32({2, 1, 3, 5}, x2)), {2, 1, 3, 5}, want2);
  // Q == K: y[i, j] = x[i, j + 1 - i] for j <= i.   x = [[1, 2], [3, 4]], padded 0 1 2 0 3 4.
  expectF32(ref::relShift(f32({2, 2}, {1, 2, 3, 4})), {2, 2}, {2, 0, 3, 4});
}

TEST_CASE("pick takes one element of the last axis per row", "[reference]") {
  Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  expectF32(ref::pick(x, i64({2}, {2, 0})), {2}, {3, 4});
  CHECK_THROWS_AS(ref::pick(x, i64({2}, {3, 0})), txl::Error);
  CHECK_THROWS_AS(ref::pick(x, i64({2}, {0, -1})), txl::Error);
}

TEST_CASE("pos_encoding rows: sines then cosines of the distance klen-1-m", "[reference]") {
  // d = 4: inv_freq = [1, 1/100]. Distances 2, 1, 0.
  expectF32(ref::posEncoding(3, 4, -1), {3, 4},
            {0.9092974f, 0.0199987f, -0.4161468f, 0.9998000f,  //
             0.8414710f, 0.0099998f, 0.5403023f, 0.9999500f,   //
             0, 0, 1, 1});
  // clamp_len 1: distance 2 becomes 1.
  expectF32(ref::posEncoding(3, 4, 1), {3, 4},
            {0.8414710f, 0.0099998f, 0.5403023f, 0.9999500f,  //
             0.8414710f, 0.0099998f, 0.5403023f, 0.9999500f,  //
             0, 0, 1, 1});
  // d = 2: a single frequency 1.
  expectF32(ref::posEncoding(2, 2, 0), {2, 2}, {0.8414710f, 0.5403023f, 0, 1});
}

TEST_CASE("attn_mask: causal, and same_length", "[reference]") {
  // qlen 3, mlen 2: key j is masked when j > 2 + i.
  expectF32(ref::attnMask(3, 2, 2, false), {3, 5}, {0, 0, 0, 1, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0});
  // same_length, mem_len 2: L = 5 - 2 = 3, t = 0, so also masked when j <= i:
  // triu(ones(3, 5), 3) + tril(ones(3, 5), 0).
  expectF32(ref::attnMask(3, 2, 2, true), {3, 5}, {1, 0, 0, 1, 1, 1, 1, 0, 0, 1, 1, 1, 1, 0, 0});
  // same_length with L = 3 - 5 <= 0: t = qlen, nothing more than causal.
  expectF32(ref::attnMask(3, 0, 5, true), {3, 3}, {0, 1, 1, 0, 0, 1, 0, 0, 0});
}

TEST_CASE("constant and bf16 conversion", "[reference]") {
  expectF32(ref::constant({DType::F32, {2}}, -kInf), {2}, {-kInf, -kInf});
  CHECK(valuesI64(ref::constant({DType::I64, {3}}, 7)) == std::vector<std::int64_t>{7, 7, 7});
  CHECK_THROWS_AS(ref::constant({DType::I64, {1}}, 0.5), txl::Error);
  Tensor half = ref::constant({DType::BF16, {1}}, 1.5);
  CHECK(half.data<std::uint16_t>()[0] == 0x3fc0);
  // 1 + 2^-8 and 1 + 3 * 2^-8 are ties: round to the even neighbour.
  CHECK(ref::floatToBf16(1.0f + 1.0f / 256) == 0x3f80);
  CHECK(ref::floatToBf16(1.0f + 3.0f / 256) == 0x3f82);
  CHECK(std::isnan(ref::bf16ToFloat(ref::floatToBf16(std::numeric_limits<float>::quiet_NaN()))));
  CHECK(ref::bf16ToFloat(0xc000) == -2.0f);
}

TEST_CASE("the reference interpreter runs a graph with memory", "[reference][interpreter]") {
  // y = relu(linear(x, w, b)); mem.0 <- the last two rows of [mem; y]; nll = -log_softmax(y)[target].
  ir::Graph g("tiny");
  ir::Node x = g.addInput("x", {DType::F32, {2, 3}});
  ir::Node target = g.addInput("target", {DType::I64, {2}});
  ir::Node w = g.addWeight("w", {DType::F32, {2, 3}});
  ir::Node b = g.addWeight("b", {DType::F32, {2}});
  ir::Node mem = g.add(ir::OpKind::MemRead, {}, {{"slot", std::int64_t{0}}}, ir::TensorType{DType::F32, {1, 2}});
  ir::Node y = g.add(ir::OpKind::Relu, {g.add(ir::OpKind::Linear, {x, w, b})});
  ir::Node cat = g.add(ir::OpKind::Concat, {mem, y}, {{"axis", std::int64_t{0}}});
  g.add(ir::OpKind::MemWrite,
        {g.add(ir::OpKind::Slice, {cat},
               {{"axis", std::int64_t{0}}, {"start", std::int64_t{1}}, {"end", std::int64_t{3}}})},
        {{"slot", std::int64_t{0}}});
  ir::Node logp = g.add(ir::OpKind::LogSoftmax, {y}, {{"axis", std::int64_t{-1}}});
  ir::Node nll = g.add(ir::OpKind::Scale, {g.add(ir::OpKind::Pick, {logp, target})}, {{"factor", -1.0}});
  g.addOutput("y", y);
  g.addOutput("nll", nll);

  ir::TensorMap weights = {{"w", f32({2, 3}, {1, 0, -1, 0.5f, 0.5f, 0.5f})}, {"b", f32({2}, {10, -20})}};
  auto exe = makeReferenceExecutor();
  CHECK(exe->name() == "reference");
  auto plan = exe->compile(g, weights);

  Tensor xs = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  ir::TensorMap inputs = {{"x", xs}, {"target", i64({2}, {0, 1})}, {"mem.0", f32({1, 2}, {-1, -2})}};
  const ir::TensorMap& out = plan->run(inputs);
  // linear: [8, -17, 8, -12.5]; relu: [8, 0, 8, 0]. log_softmax([8, 0]) = [-log(1 + e^-8), -8 - log(1 + e^-8)].
  REQUIRE(out.size() == 3);
  expectF32(out.at("y"), {2, 2}, {8, 0, 8, 0});
  expectF32(out.at("mem.0"), {2, 2}, {8, 0, 8, 0});
  float l = float(std::log1p(std::exp(-8.0)));
  expectF32(out.at("nll"), {2}, {l, 8 + l});

  // A second run with other inputs gives fresh results.
  inputs["mem.0"] = f32({1, 2}, {5, 6});
  inputs["x"] = f32({2, 3}, {0, 0, 0, 0, 0, 0});
  const ir::TensorMap& again = plan->run(inputs);
  expectF32(again.at("mem.0"), {2, 2}, {10, 0, 10, 0});

  SECTION("a missing or mistyped input is an error, not a crash") {
    ir::TensorMap missing = inputs;
    missing.erase("mem.0");
    CHECK_THROWS_AS(plan->run(missing), txl::Error);
    ir::TensorMap mistyped = inputs;
    mistyped["x"] = f32({3, 2}, {0, 0, 0, 0, 0, 0});
    CHECK_THROWS_AS(plan->run(mistyped), txl::Error);
  }
  SECTION("a target outside the vocabulary names the node") {
    ir::TensorMap bad = inputs;
    bad["target"] = i64({2}, {0, 2});
    CHECK_THROWS_WITH(plan->run(bad), Catch::Contains("pick(") && Catch::Contains("outside [0, 2)"));
  }
  SECTION("a missing weight is an error at compile time") {
    ir::TensorMap partial = {{"w", weights.at("w")}};
    CHECK_THROWS_AS(exe->compile(g, partial), txl::Error);
  }
}

TEST_CASE("bf16 operands are widened, bf16 results rounded", "[reference]") {
  auto bf16 = [](Shape shape, const std::vector<float>& values) {
    Tensor t = Tensor::zeros({DType::BF16, std::move(shape)});
    for (std::size_t i = 0; i < values.size(); ++i) t.data<std::uint16_t>()[i] = ref::floatToBf16(values[i]);
    return t;
  };
  // f32 activations against bf16 weights give f32 (the values are exact in bf16).
  Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  expectF32(ref::linear(x, bf16({2, 3}, {1, 0, -1, 0.5f, 0.5f, 0.5f})), {2, 2}, {-2, 3, -2, 7.5f});
  // bf16 + bf16 is bf16: 1 + 2^-8 rounds back to 1 (a tie, to even).
  Tensor sum = ref::add(bf16({2}, {1, 2}), bf16({2}, {1.0f / 256, 0.5f}));
  REQUIRE(sum.type() == ir::TensorType{DType::BF16, {2}});
  CHECK(ref::bf16ToFloat(sum.data<std::uint16_t>()[0]) == 1.0f);
  CHECK(ref::bf16ToFloat(sum.data<std::uint16_t>()[1]) == 2.5f);
  // Data movement keeps the dtype.
  Tensor moved = ref::permute(bf16({1, 2}, {3, 4}), {1, 0});
  CHECK(moved.type() == ir::TensorType{DType::BF16, {2, 1}});
  CHECK(ref::bf16ToFloat(moved.data<std::uint16_t>()[1]) == 4.0f);
}
