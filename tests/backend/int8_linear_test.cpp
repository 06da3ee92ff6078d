// tests/backend/int8_linear_test.cpp - int8 rows (ir/int8.h) and the int8
// linear kernel (backend/kernels/int8_linear.h): the quantization's rounding, the
// kernel against an f64 product of the rows' values, the epilogues, the bf16
// result, and the same sums whatever the rows, threads and CPU path.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "backend/kernels/int8_linear.h"
#include "backend/onednn/packed_weights.h"
#include "ir/bf16.h"
#include "ir/int8.h"

using namespace txl;
using namespace txl::backend::kernels;

namespace {

std::vector<float> randomFloats(std::size_t n, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

Int8Rows quantized(const std::vector<float>& w, std::int64_t n, std::int64_t k) {
  Int8Rows rows = allocateInt8Rows(n, k);
  quantizeInt8Rows(w.data(), 0, n, rows, 2);
  return rows;
}

}  // namespace

TEST_CASE("int8 rows: the scale is the row's max / 127, rounding is half to even, NaN quantizes to 0", "[int8]") {
  const float row[] = {127.0f, 2.5f, -3.5f, 0.5f, -127.0f};
  REQUIRE(ir::int8RowScale(row, 5) == 1.0f);
  CHECK(ir::int8Quantize(2.5f, 1.0f) == 2);
  CHECK(ir::int8Quantize(-3.5f, 1.0f) == -4);
  CHECK(ir::int8Quantize(0.5f, 1.0f) == 0);
  CHECK(ir::int8Quantize(1000.0f, 1.0f) == 127);
  CHECK(ir::int8Quantize(-1000.0f, 1.0f) == -127);
  CHECK(ir::int8Quantize(std::numeric_limits<float>::quiet_NaN(), 1.0f) == 0);
  const float zeros[] = {0.0f, -0.0f};
  CHECK(ir::int8RowScale(zeros, 2) == 1.0f);
  const float nan[] = {1.0f, std::numeric_limits<float>::quiet_NaN()};
  CHECK(!std::isfinite(ir::int8RowScale(nan, 2)));
  // The round trip: each value within half a step of the original.
  const auto w = randomFloats(7 * 33, 3);
  ir::Tensor t = ir::Tensor::zeros({ir::DType::F32, {7, 33}});
  std::copy(w.begin(), w.end(), t.data<float>());
  const ir::Tensor r = ir::int8RoundTrip(t);
  for (std::int64_t i = 0; i < 7; ++i) {
    const float s = ir::int8RowScale(w.data() + i * 33, 33);
    for (std::int64_t j = 0; j < 33; ++j)
      CHECK(std::fabs(r.data<float>()[i * 33 + j] - w[i * 33 + j]) <= 0.5f * s * 1.0001f);
  }
}

TEST_CASE("int8 linear: the product of the rows' values, with bias, relu and residual, any shape", "[int8]") {
  for (const std::int64_t rows : {1, 2, 4, 5, 9})
    for (const std::int64_t k : {1, 15, 16, 17, 100})
      for (const std::int64_t n : {1, 3, 4, 5, 18, 33}) {
        INFO("rows " << rows << ", k " << k << ", n " << n);
        const auto w = randomFloats(std::size_t(n * k), 1), x = randomFloats(std::size_t(rows * k), 2),
                   bias = randomFloats(std::size_t(n), 3), res = randomFloats(std::size_t(rows * n), 4);
        const Int8Rows q = quantized(w, n, k);
        for (const bool epilogue : {false, true}) {
          std::vector<float> y(std::size_t(rows * n));
          Int8LinearArgs a;
          a.x = x.data();
          a.rows = rows;
          a.y = y.data();
          if (epilogue) a.bias = bias.data(), a.residual = res.data(), a.relu = true;
          int8Linear(q, a, 2);
          for (std::int64_t r = 0; r < rows; ++r)
            for (std::int64_t c = 0; c < n; ++c) {
              double sum = 0, magnitude = 0;
              for (std::int64_t j = 0; j < k; ++j) {
                const double v = double(q.scale[c]) * q.at(c, j) * x[r * k + j];
                sum += v, magnitude += std::fabs(v);
              }
              if (epilogue) sum = std::max(sum + bias[c], 0.0) + res[r * n + c];
              CHECK(std::fabs(y[r * n + c] - sum) <= 1e-6 * (magnitude + std::fabs(sum)) + 1e-30);
            }
        }
      }
}

TEST_CASE("int8 linear: every output the same sum whatever the rows, the threads and the CPU path", "[int8]") {
  const std::int64_t rows = 9, k = 70, n = 37;
  const auto w = randomFloats(std::size_t(n * k), 5), x = randomFloats(std::size_t(rows * k), 6);
  const Int8Rows q = quantized(w, n, k);
  auto run = [&](std::int64_t first, std::int64_t count, int threads, bool bf16) {
    std::vector<float> y(std::size_t(count * n));
    std::vector<std::uint16_t> y16(std::size_t(count * n));
    Int8LinearArgs a;
    a.x = x.data() + first * k;
    a.rows = count;
    a.y = bf16 ? static_cast<void*>(y16.data()) : y.data();
    a.yBf16 = bf16;
    int8Linear(q, a, threads);
    if (bf16)
      for (std::size_t i = 0; i < y.size(); ++i) y[i] = ir::bf16ToFloat(y16[i]);
    return y;
  };
  const auto all = run(0, rows, 2, false);
  CHECK(run(0, rows, 1, false) == all);
  for (std::int64_t r = 0; r < rows; ++r) {
    const auto one = run(r, 1, 1, false);
    CHECK(std::equal(one.begin(), one.end(), all.begin() + r * n));
  }
  const auto rounded = run(0, rows, 2, true);
  for (std::size_t i = 0; i < all.size(); ++i) CHECK(rounded[i] == ir::bf16ToFloat(ir::floatToBf16(all[i])));
  // The portable form (CPUs without AVX-512) computes the same sums.
  std::vector<float> portable(all.size());
  Int8LinearArgs a;
  a.x = x.data();
  a.rows = rows;
  a.y = portable.data();
  int8LinearPortable(q, a);
  for (std::size_t i = 0; i < all.size(); ++i)
    CHECK(std::fabs(portable[i] - all[i]) <= 1e-5f * std::fabs(all[i]) + 1e-6f);
}

TEST_CASE("int8 linear: one copy of a weight's rows per model, shared while a plan holds it", "[int8]") {
  backend::onednn::PackedWeights packs;
  const auto w = randomFloats(6 * 8, 7);
  auto a = packs.getInt8(w.data(), 6, 8, 1);
  auto b = packs.getInt8(w.data(), 6, 8, 1);
  CHECK(a == b);
  CHECK(packs.bytes() == a->size());
  const Int8Rows q = quantized(w, 6, 8);
  for (std::int64_t c = 0; c < 6; ++c)
    for (std::int64_t j = 0; j < 8; ++j) CHECK(a->at(c, j) == ir::int8Quantize(w[c * 8 + j], q.scale[c]));
  a.reset();
  b.reset();
  CHECK(packs.bytes() == 0);
}
