// tests/backend/int8_linear_test.cpp - int8 rows (ir/int8.h) and the int8
// linear kernel (backend/kernels/int8_linear.h): the quantization's rounding, the
// kernel against an f64 product of the rows' values, the epilogues, the bf16
// result, and the same sums whatever the rows, threads and CPU path; the VNNI
// kernel (backend/kernels/int8_vnni.h) against a scalar reference of the same
// quantized arithmetic, bit for bit.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <random>
#include <thread>
#include <vector>

#include "backend/kernels/int8_linear.h"
#include "backend/kernels/int8_vnni.h"
#include "backend/platform.h"
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

namespace {

// An activation row's quantization as int8_vnni.h defines it, written out:
// its range with zero, 255 steps over it, the zero point, each value's step.
struct RowSteps {
  float scale = 1.0f;
  int zero = 0;
  std::vector<int> u;
};
RowSteps rowSteps(const float* x, std::int64_t k) {
  RowSteps r;
  float lo = 0.0f, hi = 0.0f;
  for (std::int64_t j = 0; j < k; ++j) lo = std::min(lo, x[j]), hi = std::max(hi, x[j]);
  if (lo != 0.0f || hi != 0.0f) {
    r.scale = hi / 255.0f - lo / 255.0f;
    r.zero = std::clamp(int(std::nearbyint(-lo / r.scale)), 0, 255);
  }
  for (std::int64_t j = 0; j < k; ++j) r.u.push_back(std::clamp(int(std::nearbyint(x[j] / r.scale)) + r.zero, 0, 255));
  return r;
}

// The quantized arithmetic of int8LinearVnni, written out: each row's steps,
// the exact integer sum, then the epilogue.
std::vector<float> vnniReference(const Int8Rows& q, const std::vector<float>& x, std::int64_t rows, const float* bias,
                                 const float* res, bool relu) {
  const std::int64_t n = q.n, k = q.k;
  std::vector<float> y(std::size_t(rows * n));
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* xr = x.data() + r * k;
    const RowSteps steps = rowSteps(xr, k);
    const float s = steps.scale;
    for (std::int64_t c = 0; c < n; ++c) {
      std::int64_t sum = 0;
      for (std::int64_t j = 0; j < k; ++j) sum += std::int64_t(steps.u[std::size_t(j)] - steps.zero) * q.at(c, j);
      float v = std::fma(float(std::int32_t(sum)), s * q.scale[c], bias ? bias[c] : 0.0f);
      if (relu) v = std::max(v, 0.0f);
      if (res) v += res[r * n + c];
      y[std::size_t(r * n + c)] = v;
    }
  }
  return y;
}

std::vector<float> runVnni(const Int8Vnni& v, const float* x, std::int64_t rows, const float* bias, const float* res,
                           bool relu, int threads, bool bf16, bool portable = false) {
  std::vector<float> y(std::size_t(rows * v.n));
  std::vector<std::uint16_t> y16(y.size());
  Int8LinearArgs a;
  a.x = x;
  a.rows = rows;
  a.bias = bias;
  a.residual = res;
  a.relu = relu;
  a.y = bf16 ? static_cast<void*>(y16.data()) : y.data();
  a.yBf16 = bf16;
  if (portable) int8LinearVnniPortable(v, a);
  else int8LinearVnni(v, a, threads);
  if (bf16)
    for (std::size_t i = 0; i < y.size(); ++i) y[i] = ir::bf16ToFloat(y16[i]);
  return y;
}

}  // namespace

TEST_CASE("int8 vnni: activations quantized per row, 255 steps over the range with zero", "[int8]") {
  std::vector<std::uint8_t> u(4);
  auto bytes = [&] { return std::vector<int>(u.begin(), u.end()); };
  // Non-negative: no zero point, the full 0..255 (ties to even).
  const float relu[] = {0.0f, 1.0f, 2.5f, 255.0f};
  ActivationRow q = quantizeActivationRow(relu, 4, u.data());
  CHECK(q.scale == 1.0f);
  CHECK(q.zero == 0);
  CHECK(bytes() == std::vector<int>{0, 1, 2, 255});
  // Symmetric: zero point 128, the top clamped.
  const float both[] = {-127.5f, 127.5f, 0.0f, 1.5f};
  q = quantizeActivationRow(both, 4, u.data());
  CHECK(q.scale == 1.0f);
  CHECK(q.zero == 128);
  CHECK(bytes() == std::vector<int>{0, 255, 128, 130});
  // Non-positive: zero point 255.
  const float neg[] = {-255.0f, -1.0f, 0.0f, -0.5f};
  q = quantizeActivationRow(neg, 4, u.data());
  CHECK(q.scale == 1.0f);
  CHECK(q.zero == 255);
  CHECK(bytes() == std::vector<int>{0, 254, 255, 255});
  // Zeros: scale 1, zero point 0; a non-finite element: a NaN scale.
  const float zeros[] = {0.0f, -0.0f, 0.0f, 0.0f};
  q = quantizeActivationRow(zeros, 4, u.data());
  CHECK((q.scale == 1.0f && q.zero == 0 && bytes() == std::vector<int>{0, 0, 0, 0}));
  for (const float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
    const float row[] = {1.0f, bad, -2.0f, 0.0f};
    q = quantizeActivationRow(row, 4, u.data());
    CHECK(std::isnan(q.scale));
    CHECK(q.zero == 0);
  }
  // Any row: the written-out definition, each value within half a step.
  for (const std::int64_t k : {1, 5, 16, 33}) {
    for (const float shift : {0.0f, 3.0f}) {
      auto x = randomFloats(std::size_t(k), 11);
      for (float& v : x) v = shift > 0 ? std::fabs(v) + shift : v;
      std::vector<std::uint8_t> got(static_cast<std::size_t>(k));
      q = quantizeActivationRow(x.data(), k, got.data());
      const RowSteps want = rowSteps(x.data(), k);
      CHECK(q.scale == want.scale);
      CHECK(q.zero == want.zero);
      for (std::int64_t j = 0; j < k; ++j) {
        CHECK(int(got[std::size_t(j)]) == want.u[std::size_t(j)]);
        CHECK(std::fabs(q.scale * float(int(got[std::size_t(j)]) - q.zero) - x[std::size_t(j)]) <= 0.5001f * q.scale);
      }
    }
  }
}

TEST_CASE("int8 vnni: exact sums, bit for bit the scalar reference, any shape and epilogue", "[int8]") {
  INFO("AVX512-VNNI form: " << int8LinearVnniNative());
  for (const std::int64_t k : {1, 3, 4, 7, 17, 64, 130})
    for (const std::int64_t n : {1, 5, 16, 17, 33, 70, 130}) {
      const auto w = randomFloats(std::size_t(n * k), 21);
      const Int8Rows q = quantized(w, n, k);
      const auto v = packInt8Vnni(q, 2);
      for (std::int64_t c = 0; c < n; ++c)
        for (std::int64_t j = 0; j < k; ++j) REQUIRE(v->at(c, j) == q.at(c, j));
      for (std::int64_t rows = 1; rows <= 20; rows += (rows < 8 ? 1 : 5)) {
        INFO("rows " << rows << ", k " << k << ", n " << n);
        auto x = randomFloats(std::size_t(rows * k), std::uint32_t(22 + rows));
        if (rows > 2)
          for (std::int64_t j = 0; j < k; ++j) x[std::size_t(2 * k + j)] = 0.0f;  // a row of zeros
        if (rows > 3)  // a non-negative row (a ReLU's output) and a non-positive one
          for (std::int64_t j = 0; j < k; ++j) x[std::size_t(3 * k + j)] = std::fabs(x[std::size_t(3 * k + j)]);
        if (rows > 4)
          for (std::int64_t j = 0; j < k; ++j) x[std::size_t(4 * k + j)] = -std::fabs(x[std::size_t(4 * k + j)]);
        const auto bias = randomFloats(std::size_t(n), 23), res = randomFloats(std::size_t(rows * n), 24);
        for (const bool epilogue : {false, true}) {
          const float* b = epilogue ? bias.data() : nullptr;
          const float* r = epilogue ? res.data() : nullptr;
          const auto want = vnniReference(q, x, rows, b, r, epilogue);
          CHECK(runVnni(*v, x.data(), rows, b, r, epilogue, 2, false) == want);
          CHECK(runVnni(*v, x.data(), rows, b, r, epilogue, 1, false, true) == want);
          const auto rounded = runVnni(*v, x.data(), rows, b, r, epilogue, 2, true);
          for (std::size_t i = 0; i < want.size(); ++i) CHECK(rounded[i] == ir::bf16ToFloat(ir::floatToBf16(want[i])));
          // Within the quantization's error of the f64 product of the weights' values.
          if (!epilogue)
            for (std::int64_t row = 0; row < rows; ++row)
              for (std::int64_t c = 0; c < n; ++c) {
                // Each input moves by at most half its row's step.
                const double step = rowSteps(x.data() + row * k, k).scale;
                double sum = 0, bound = 0;
                for (std::int64_t j = 0; j < k; ++j) {
                  const double wj = double(q.scale[c]) * q.at(c, j);
                  sum += wj * x[std::size_t(row * k + j)], bound += std::fabs(wj) * step * 0.5;
                }
                CHECK(std::fabs(want[std::size_t(row * n + c)] - sum) <= bound * 1.001 + 1e-6 * std::fabs(sum));
              }
        }
      }
    }
}

TEST_CASE("int8 vnni: a call of many rows runs a tile at a time: the reference's bits, one tile of scratch", "[int8]") {
  const std::int64_t rows = 2 * kInt8VnniTileRows + 77, k = 130, n = 70;
  const std::int64_t stride = (k + 3) / 4 * 4;
  const auto w = randomFloats(std::size_t(n * k), 41), x = randomFloats(std::size_t(rows * k), 42);
  const auto bias = randomFloats(std::size_t(n), 43), res = randomFloats(std::size_t(rows * n), 44);
  const Int8Rows q = quantized(w, n, k);
  const auto v = packInt8Vnni(q, 2);
  const auto want = vnniReference(q, x, rows, bias.data(), res.data(), true);
  // On a thread of its own, whose scratch starts empty.
  std::vector<float> got, rounded;
  std::size_t scratchBytes = 0;
  std::thread([&] {
    got = runVnni(*v, x.data(), rows, bias.data(), res.data(), true, 2, false);
    rounded = runVnni(*v, x.data(), rows, bias.data(), res.data(), true, 2, true);
    scratchBytes = int8VnniScratchBytes();
  }).join();
  CHECK(got == want);
  for (std::size_t i = 0; i < want.size(); ++i) CHECK(rounded[i] == ir::bf16ToFloat(ir::floatToBf16(want[i])));
  if (int8LinearVnniNative())
    CHECK(scratchBytes <= std::size_t(kInt8VnniTileRows * (stride + std::int64_t(sizeof(ActivationRow)))));
}

TEST_CASE("int8 vnni: a row's result does not depend on the threads or the other rows", "[int8]") {
  const std::int64_t rows = 23, k = 259, n = 150;
  const auto w = randomFloats(std::size_t(n * k), 31), x = randomFloats(std::size_t(rows * k), 32);
  const auto v = packInt8Vnni(quantized(w, n, k), 2);
  const auto all = runVnni(*v, x.data(), rows, nullptr, nullptr, false, 2, false);
  CHECK(runVnni(*v, x.data(), rows, nullptr, nullptr, false, 1, false) == all);
  CHECK(runVnni(*v, x.data(), rows, nullptr, nullptr, false, 3, false) == all);
  for (std::int64_t first : {0, 5, 17}) {
    const std::int64_t count = std::min<std::int64_t>(7, rows - first);
    const auto part = runVnni(*v, x.data() + first * k, count, nullptr, nullptr, false, 2, false);
    CHECK(std::equal(part.begin(), part.end(), all.begin() + first * n));
  }
}

TEST_CASE("int8 vnni: one copy of a weight's VNNI layout per model, made from its int8 rows", "[int8]") {
  backend::onednn::PackedWeights packs;
  const auto w = randomFloats(20 * 9, 41);
  auto a = packs.getInt8Vnni(w.data(), 20, 9, 1);
  CHECK(packs.getInt8Vnni(w.data(), 20, 9, 1) == a);
  CHECK(packs.bytes() == a->size());  // the rows it was made from are not held
  const Int8Rows q = quantized(w, 20, 9);
  for (std::int64_t c = 0; c < 20; ++c) {
    CHECK(a->scale[c] == q.scale[c]);
    std::int32_t sum = 0;
    for (std::int64_t j = 0; j < 9; ++j) {
      CHECK(a->at(c, j) == q.at(c, j));
      sum += q.at(c, j);
    }
    CHECK(a->colSum[c] == sum);
  }
  a.reset();
  CHECK(packs.bytes() == 0);
}

// Not run by ctest (hidden): the two kernels by row count, the weights in
// cache. `txl_backend_tests "[.int8bench]"`.
TEST_CASE("int8 vnni: time against the widening kernel by rows", "[.int8bench]") {
  for (const auto& [n, k] : {std::pair<std::int64_t, std::int64_t>{2048, 512}, {512, 2048}, {1536, 512}}) {
    const auto w = randomFloats(std::size_t(n * k), 51);
    const Int8Rows q = quantized(w, n, k);
    const auto v = packInt8Vnni(q, 2);
    for (const std::int64_t rows : {1, 2, 3, 4, 6, 8, 12, 16, 32, 64, 80}) {
      const auto x = randomFloats(std::size_t(rows * k), 52);
      std::vector<float> y(std::size_t(rows * n));
      Int8LinearArgs a;
      a.x = x.data();
      a.rows = rows;
      a.y = y.data();
      auto best = [&](auto run) {
        double b = 1e30;
        for (int rep = 0; rep < 7; ++rep) {
          const auto t0 = std::chrono::steady_clock::now();
          for (int i = 0; i < 20; ++i) run();
          b = std::min(b,
                       std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / 20);
        }
        return b;
      };
      const double widened = best([&] { int8Linear(q, a, 2); }), vnni = best([&] { int8LinearVnni(*v, a, 2); });
      WARN("n " << n << " k " << k << " rows " << rows << ": widened " << widened << " us, vnni " << vnni << " us");
    }
  }
}
