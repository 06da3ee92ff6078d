// backend/kernels/gemv.h - matmuls with one row per batch index whose B is read
// along its rows (matrix-vector products), an own kernel of the oneDNN
// executor.
//
// One generated token attends to every remembered position with products of
// one query row per head: q · Kᵀ over the keys (AC), q · (W_r R) (BD) and
// p · V (attention). They read megabytes of keys, values and position table
// to do two FLOPs per float read, so memory bandwidth bounds them. For the
// two whose B has unit stride along n, BD's table [H, D, klen] and V (rows of
// the memory window), gemv() streams B's rows in memory order, scaled by
// a[k] and summed into a block of outputs that stays in registers / L1: the
// threads split (batch index, blocks of n), and each output is a sum in
// increasing k, so keys masked to exact zeros in front (a padded warm-up
// plan) leave the result bit for bit what the unpadded plan computes.
// Both beat oneDNN's one-row products on these operands (brg:avx512_core for
// BD, gemm:jit on the strided V): `txlc bench bench/enwik8_base.json
// --random-weights --prefill --qlen 1 --profile`; figures in docs/LOG.md.
// AC, whose Kᵀ has unit stride along k, stays on oneDNN: a dot product per
// key needs a horizontal sum each, which does not beat gemm:jit.
//
//   GemvLayout l{batch, k, n, aOffsets, bOffsets, cOffsets, aK, bK};
//   if (gemvSupports(l)) kernels::gemv(a, b, c, l, threads);  // c[i, n] = Σ_k a[i, k] · B[i, k, n]
#pragma once

#include <cstdint>
#include <vector>

namespace txl::backend::kernels {

// Element offsets and strides of c[i, n] = Σ_k a[i, k] · B[i, k, n], B with
// unit stride along n, c's rows dense.
struct GemvLayout {
  std::int64_t batch = 1, k = 1, n = 1;
  std::vector<std::int64_t> a, b, c;  // per batch index i: the offset of a[i, 0], B[i, 0, 0], c[i, 0]
  std::int64_t aK = 1;                // a's stride along k
  std::int64_t bK = 1;                // B's stride along k
};

// Whether the layout is complete (one offset of each operand per batch index, positive sizes).
bool gemvSupports(const GemvLayout& l);

// c[i, n] = Σ_k a[i, k] · B[i, k, n] for every batch index i, on at most
// `threads` OpenMP threads.
void gemv(const float* a, const float* b, float* c, const GemvLayout& l, int threads);

}  // namespace txl::backend::kernels
