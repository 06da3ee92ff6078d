// backend/rel_attention_keys.h - the unmasked keys of one query row of
// kernels::relAttention (rel_attention.h): shared by its block-wise path
// (rel_attention.cpp) and its row-wise path (rel_attention_rows.cpp), which
// both skip the keys outside a row's range without reading them.
#pragma once

#include <cstdint>

#include "backend/rel_attention.h"

namespace txl::backend::kernels::detail {

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

}  // namespace txl::backend::kernels::detail
