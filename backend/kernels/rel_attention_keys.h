// backend/kernels/rel_attention_keys.h - what kernels::relAttention's block-wise
// paths (rel_attention.cpp) and its row-wise path (rel_attention_rows.cpp)
// share: the unmasked keys of one query row, which both skip without
// reading them, and the row-wise kernel's entry and limits.
#pragma once

#include <cstdint>

#include "backend/kernels/rel_attention.h"

namespace txl::backend::kernels::detail {

// The row-wise kernel (AttentionKernel::Rows) keeps per-head state of every
// head of a stream in registers and on its stack: at most this many heads.
constexpr std::int64_t kRowsMaxHeads = 64;

// Unmasked keys of one query row lie in [first, last] (first > last: none).
// band: the mask is 0 on every key of [first, last] (only pad may mask one
// there), so a block's lanes follow from the range and pad without reading
// the mask (the causal and same-length masks: each row a band).
struct KeyRange {
  std::int64_t first, last;
  bool band = false;
};

// Row i's range from a.mask and a.pad (the stream's pad row, already offset
// to it): an AVX-512 scan where the CPU has it, else a plain one. The two
// give the same range; only the AVX-512 scan tells a band.
KeyRange unmaskedKeyRange(const RelAttentionArgs& a, std::int64_t i);

// relAttention's Rows kernel (AttentionKernel::Rows).
void relAttentionRows(const RelAttentionArgs& a);

}  // namespace txl::backend::kernels::detail
