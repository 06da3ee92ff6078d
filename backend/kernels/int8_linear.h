// backend/kernels/int8_linear.h - linear layers over int8 weight rows: the oneDNN
// executor's own kernel for --precision int8 (docs/PRECISION.md).
//
// A linear weight [n, k] is quantized once per model into int8 rows with one
// f32 scale per row (output channel), exactly as the quantize op defines
// (ir/int8.h). The kernel widens the int8 weights to f32 in registers and
// multiplies them with the f32 activations, accumulating in f32; activations
// are never quantized. One generated token reads every weight byte once, so
// a quarter of the f32 bytes is what bounds it. oneDNN 2.6 has no matmul of
// f32 activations with int8 weights (it quantizes both operands).
//
// Every output is the same sum whatever the number of rows and threads: the
// products of a (row, channel) pair are accumulated in increasing k, each a
// fused multiply-add, then scaled (s[c] · sum) and finished by the epilogue.
// So a padded warm-up plan agrees bit for bit with the unpadded plans, as
// the other kernels do (backend/kernels/gemv.h).
//
//   auto w = kernels::quantizeInt8Rows(weight, n, k, threads);
//   kernels::int8Linear(*w, {x, rows, bias, residual, relu, y, yBf16}, threads);
#pragma once

#include <cstdint>
#include <memory>

namespace txl::backend::kernels {

// A linear weight [n, k] as int8 rows and f32 scales (one per row). The rows
// are stored in blocks of 16 channels, k-major inside a block: element
// (c, j) at q[((c / 16) * k + j) * 16 + c % 16], so one 16-byte load holds
// input j of 16 channels (n is padded to a multiple of 16 with zero rows).
struct Int8Rows {
  static constexpr std::int64_t kBlock = 16;
  std::int64_t n = 0, k = 0;
  std::shared_ptr<void> bytes;  // the scales (n floats), then the blocks
  const float* scale = nullptr;
  const std::int8_t* q = nullptr;
  std::int64_t blocks() const { return (n + kBlock - 1) / kBlock; }
  std::size_t size() const { return std::size_t(n) * sizeof(float) + std::size_t(blocks() * kBlock * k); }
  std::int8_t at(std::int64_t c, std::int64_t j) const { return q[((c / kBlock) * k + j) * kBlock + c % kBlock]; }
};

// Rows [first, first + count) of the f32 weight w [n, k] quantized into `into`
// (allocated by allocateInt8Rows), on at most `threads` OpenMP threads.
void quantizeInt8Rows(const float* w, std::int64_t first, std::int64_t count, Int8Rows& into, int threads);
// Storage for a weight [n, k]; its rows are written by quantizeInt8Rows.
Int8Rows allocateInt8Rows(std::int64_t n, std::int64_t k);

// y [rows, n] = x [rows, k] · (s ⊙ q)ᵀ, then + bias [n] when given, relu when
// asked, then + residual [rows, n] when given; y is f32, or bf16 (rounded to
// nearest even) with yBf16. Every pointer is to dense row-major data.
struct Int8LinearArgs {
  const float* x = nullptr;
  std::int64_t rows = 0;
  const float* bias = nullptr;
  const float* residual = nullptr;
  bool relu = false;
  void* y = nullptr;
  bool yBf16 = false;
};
void int8Linear(const Int8Rows& w, const Int8LinearArgs& a, int threads);

// Whether int8Linear runs its AVX-512 form on this CPU (else a portable loop).
bool int8LinearAvx512();
// int8Linear's portable form on one thread, whatever the CPU has: for tests.
void int8LinearPortable(const Int8Rows& w, const Int8LinearArgs& a);

}  // namespace txl::backend::kernels
