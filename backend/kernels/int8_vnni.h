// backend/kernels/int8_vnni.h - linear layers of many rows over int8 weights
// with int8 activations: the oneDNN executor's kernel for --precision int8
// segments on CPUs with AVX512-VNNI (docs/PRECISION.md, "The kernels").
//
// Each activation row r is quantized when the kernel runs, asymmetrically over
// the range it spans with zero: lo = min(0, min_j x[r, j]), hi = max(0, max_j
// x[r, j]), s_r = hi / 255 - lo / 255 (1 for a row of zeros), the zero point
// z_r = round-half-even(-lo / s_r) and u = clamp(round-half-even(x / s_r) + z_r,
// 0, 255), standing for s_r (u - z_r). A row of either sign gets 255 steps
// over its span, so a non-negative row (a ReLU's output) is rounded on a grid
// twice as fine as a symmetric max |x| / 127 would give it, and a symmetric
// row on the same one. vpdpbusd multiplies these unsigned bytes by the signed
// weights; the zero point's share, z_r * Σ_j q[c, j], is subtracted through
// the accumulators' start (the column sums are computed once, when the weight
// is packed). The sums are exact int32, so an output does not depend on the
// order of the products, the tiles or the number of threads; the output is
//
//   y[r, c] = fma(float(Σ_j (u[r, j] - z_r) q[c, j]), s_r * s[c], bias[c] or 0),
//
// then relu, then + residual (the int8Linear epilogue contract, Int8LinearArgs).
// A row's result depends only on that row, whatever the other rows.
//
// Why an own kernel, not oneDNN 2.6's u8s8 matmul: its output scales take a
// mask over the output channels only, so the per-row activation scales
// would need another pass over the output (and the bias, relu and residual
// after it), the dynamic u8 source another pass to quantize, and its
// compensation of the source's zero point is computed per call; here the
// quantization is one pass and the epilogue is applied from registers.
//
//   auto v = kernels::packInt8Vnni(rows, threads);   // from Int8Rows, once per model
//   kernels::int8LinearVnni(*v, {x, rows, bias, residual, relu, y, yBf16}, threads);
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "backend/kernels/int8_linear.h"

namespace txl::backend::kernels {

// A linear weight [n, k] of int8 values in the VNNI layout: blocks of 16
// channels; inside a block, groups of 4 consecutive inputs, each group 64
// bytes holding the 4 inputs of channel 0, then of channel 1, ...: element
// (c, j) at q[((c / 16) * groups + j / 4) * 64 + (c % 16) * 4 + j % 4], k padded
// to groups * 4 and n to a multiple of 16 with zeros. One 32-bit lane of a
// 64-byte load is what vpdpbusd multiplies with one activation's 4 bytes.
struct Int8Vnni {
  static constexpr std::int64_t kBlock = 16;
  std::int64_t n = 0, k = 0;
  std::shared_ptr<void> bytes;           // scales, then column sums, then the blocks
  const float* scale = nullptr;          // n + padding: s[c]
  const std::int32_t* colSum = nullptr;  // n + padding: Σ_j q[c, j]
  const std::int8_t* q = nullptr;
  std::int64_t blocks() const { return (n + kBlock - 1) / kBlock; }
  std::int64_t groups() const { return (k + 3) / 4; }
  std::size_t size() const {
    return std::size_t(blocks() * kBlock) * (sizeof(float) + sizeof(std::int32_t)) +
           std::size_t(blocks() * groups() * 64);
  }
  std::int8_t at(std::int64_t c, std::int64_t j) const {
    return q[((c / kBlock) * groups() + j / 4) * 64 + (c % kBlock) * 4 + j % 4];
  }
};

// The largest k whose sums fit int32 exactly (255 * 127 per product; the
// accumulators may wrap on the way, the final sum cannot).
constexpr std::int64_t kInt8VnniMaxK = 66000;

// The int8 rows `w` (the same values and scales) in the VNNI layout, on at most
// `threads` threads.
std::shared_ptr<Int8Vnni> packInt8Vnni(const Int8Rows& w, int threads);

// y = the quantized product above, with Int8LinearArgs' epilogue. Runs the
// AVX512-VNNI form when the CPU has it, else the portable form.
void int8LinearVnni(const Int8Vnni& w, const Int8LinearArgs& a, int threads);
// Whether int8LinearVnni runs its AVX512-VNNI form on this CPU.
bool int8LinearVnniNative();
// int8LinearVnni's portable form on one thread, whatever the CPU has: the
// same results (exact sums, same epilogue); for tests and CPUs without VNNI.
void int8LinearVnniPortable(const Int8Vnni& w, const Int8LinearArgs& a);

// Rows the AVX512-VNNI form quantizes and multiplies at a time, so that the
// calling thread's scratch of shifted activation bytes (kept across calls)
// holds one tile whatever a call's row count: a prefill of batch x mem_len
// rows would otherwise leave a buffer of that size resident. A multiple of
// the kernel's 6-row tile; each output row depends on its own input row
// only, so the tiling changes no bit.
constexpr std::int64_t kInt8VnniTileRows = 384;
// The calling thread's scratch bytes (for tests).
std::size_t int8VnniScratchBytes();

// One activation row quantized as above: u in `u`, and its scale and zero
// point. A row with a non-finite element has a NaN scale (so every output of
// it is NaN), zero point 0 and bytes 0.
struct ActivationRow {
  float scale = 1.0f;
  std::int32_t zero = 0;
};
ActivationRow quantizeActivationRow(const float* x, std::int64_t k, std::uint8_t* u);

}  // namespace txl::backend::kernels
