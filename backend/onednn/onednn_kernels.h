// backend/onednn/onednn_kernels.h - the own kernels of the oneDNN executor: plain
// loops for what oneDNN has no primitive for (gathers, masks, the unfused
// rel-shift) and for i64 data, which oneDNN primitives do not take.
//
// Every kernel works on raw pointers to dense row-major data unless it takes
// explicit strides (in elements). Kernels that read user data (ids, indices)
// throw txl::Error on values out of range.
#pragma once

#include <cstddef>
#include <cstdint>

#include "ir/types.h"

namespace txl::backend::kernels {

// Sinusoid table [klen, d]: row m encodes distance klen-1-m (clamped to
// clampLen when > 0): d/2 sines, then d/2 cosines of distance / 10000^(2k/d).
void posEncoding(float* out, std::int64_t klen, std::int64_t d, std::int64_t clampLen);

// [qlen, mlen + qlen], 1 where masked (see ops.def attn_mask).
void attnMask(float* out, std::int64_t qlen, std::int64_t mlen, std::int64_t memLen, bool sameLength);

// n elements of `dtype` set to value.
void fill(void* out, ir::DType dtype, std::int64_t n, double value);

// out[i, :] = table[ids[i] - lo, :] when lo <= ids[i] < lo + rows, zeros otherwise.
void embedding(const float* table, std::int64_t rows, std::int64_t dim, const std::int64_t* ids, std::int64_t n,
               std::int64_t lo, float* out);

// out = x where mask == 0, value elsewhere; mask broadcast to x's shape
// (maskStrides in x's rank, 0 on broadcast dimensions). maskDType f32 or i64.
void maskedFill(const float* x, const ir::Shape& shape, const void* mask, ir::DType maskDType,
                const std::int64_t* maskStrides, float value, float* out);

// out[o] = x[o, idx[o]] for x [outer, n].
void pick(const float* x, std::int64_t outer, std::int64_t n, const std::int64_t* idx, float* out);

// The reference _rel_shift per leading index of x [outer, q, k]: pad a zero
// column in front of the last axis, view [q, k+1] as [k+1, q], drop row 0,
// view the rest as [q, k].
void relShift(const float* x, std::int64_t outer, std::int64_t q, std::int64_t k, float* out);

// dst[i...] = src[i...] over `shape`, both strided (elements; a 0 stride in
// src broadcasts), elements of elemSize bytes.
void stridedCopy(const void* src, const std::int64_t* srcStrides, void* dst, const std::int64_t* dstStrides,
                 const ir::Shape& shape, std::size_t elemSize);

// Element-wise a (op) b for i64 over `shape`, operands strided (0 = broadcast); op 0 add, 1 sub, 2 mul.
void binaryI64(const std::int64_t* a, const std::int64_t* aStrides, const std::int64_t* b, const std::int64_t* bStrides,
               std::int64_t* out, const ir::Shape& shape, int op);

// The padding of a pad op: out [outer, before + mid + after, inner]; fills the
// before and after slabs of every outer index with value.
void padFill(void* out, ir::DType dtype, std::int64_t outer, std::int64_t before, std::int64_t mid, std::int64_t after,
             std::int64_t inner, double value);

}  // namespace txl::backend::kernels
