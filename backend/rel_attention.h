// backend/rel_attention.h - Transformer-XL's attention of one layer in one
// pass (flash-attention style, with the relative shift): an own kernel of
// the oneDNN executor for the `rel_attention` op (passes/fuse_attention.cpp).
//
// Per (batch b, head h) and query i, over the keys j < k:
//
//   s[j]  = -inf                                        where mask[i, j] != 0 or pad[b, j] != 0
//         = scale · (qu_i · k_j + qv_i · rt[:, j + q - 1 - i])   (the rt term 0 when j + q - 1 - i >= k)
//   out_i = Σ_j softmax(s)[j] · v_j                     (NaN when every key is masked, as PyTorch)
//
// qu_i, qv_i, k_j, v_j and out_i are the D-vectors at [i or j, b, h, :]
// (k and v f32 or bf16, widened to f32 as they are read; everything else f32),
// rt[h] is the BD table [D, k] (W_r R pretransposed, positions contiguous;
// a shorter segment's table is a suffix of the longest one's, so rows may
// be longer than k).
// The [q, k] scores never exist: per key block the scores of a group of
// queries are computed in registers, softmax-ed online (running max and
// sum per query) and multiplied into the output at once. Key blocks are
// anchored at the last key, so keys masked in front (a padded warm-up plan,
// docs/MEMORY.md) leave every other key in the same block and lane: the
// result is bit for bit the unpadded one's.
//
//   RelAttentionArgs a{...};
//   if (relAttentionSupports(a.shape)) kernels::relAttention(a);
#pragma once

#include <cstdint>

namespace txl::backend::kernels {

struct RelAttentionShape {
  std::int64_t batch = 1, heads = 1, q = 1, k = 1, d = 1;
};

// Element strides of a [positions, batch, heads, d] operand whose d has unit stride.
struct RowStrides {
  std::int64_t pos = 0, batch = 0, head = 0;
};

struct RelAttentionArgs {
  RelAttentionShape shape;
  const float* qu = nullptr;  // [q, batch, heads, d]: the query plus u (content bias)
  const float* qv = nullptr;  // [q, batch, heads, d]: the query plus v (position bias)
  RowStrides quStrides, qvStrides;
  const void* k = nullptr;  // [k, batch, heads, d] of kvType
  const void* v = nullptr;  // [k, batch, heads, d] of kvType
  RowStrides kStrides, vStrides;
  bool kvBf16 = false;        // k and v are bf16 (a bf16 state window), else f32
  const float* rt = nullptr;  // [heads, d, k], positions contiguous: element (h, c, p) at h * rtHead + c * rtDim + p
  std::int64_t rtHead = 0, rtDim = 0;
  // Optionally rt in bf16 pairs of d (even d): the 32-bit lane (h, c, p)
  // at h * rt2Head + c * rt2Dim + p holds (rt(h, 2c, p), rt(h, 2c + 1, p)).
  // The bf16-key path (relAttentionPairs) then reads it instead of rt.
  const std::uint32_t* rt2 = nullptr;
  std::int64_t rt2Head = 0, rt2Dim = 0;
  // Optionally rt in bf16 rows of positions (any d): element (h, p, c) at
  // h * rtRowsHead + p * rtRowsPos + c holds rt(h, c, p). With bf16 keys the
  // row-wise path (relAttentionRowwise) reads it instead of rt.
  const std::uint16_t* rtRows = nullptr;
  std::int64_t rtRowsHead = 0, rtRowsPos = 0;
  const float* mask = nullptr;  // [q, k] dense, nonzero: masked
  const float* pad = nullptr;   // [batch, k] dense, nonzero: a padding key of stream b; may be null
  float scale = 1.0f;
  float* out = nullptr;  // [q, batch, heads, d]
  RowStrides outStrides;
};

// Whether the kernel takes this shape (1 <= d <= 64, positive sizes).
// bf16 keys on a CPU with AVX512-BF16 take its dot products (vdpbf16ps)
// against qu rounded to bf16: the scores then carry qu's rounding too.
bool relAttentionSupports(const RelAttentionShape& s);

// out as above, on the OpenMP team (tasks: batch × heads × query blocks).
void relAttention(const RelAttentionArgs& a);

// Whether relAttention takes bf16 pair products for bf16 keys of shape `s`
// (a CPU with AVX512-BF16 where they pay: on one with AMX only for fewer than
// four query rows, see rel_attention.cpp), and so reads RelAttentionArgs::rt2
// when given.
bool relAttentionPairs(const RelAttentionShape& s);

// Whether relAttention takes the row-wise path for bf16 keys of shape `s`
// when RelAttentionArgs::rtRows is given (rel_attention_rows.cpp): a CPU
// with AVX512-BF16 and a single query row (a generated token), where every
// key, value and position row is read once, so the block-wise path's
// transposes and its position table's one stream per pair of d are pure
// overhead on a memory-bound call.
bool relAttentionRowwise(const RelAttentionShape& s);

namespace detail {

// The row-wise path for any q (bf16 keys and values, rtRows given, a CPU
// with AVX512-BF16): for tests, and for relAttention where it applies.
void relAttentionRows(const RelAttentionArgs& a);

// relAttention on the portable path (plain loops, same block anchoring and
// arithmetic order), whatever the CPU: for tests.
void relAttentionPortable(const RelAttentionArgs& a);
// relAttention on the AVX-512 path with bf16 keys widened to f32 (as on a CPU
// without AVX512-BF16), whatever the CPU has beyond AVX-512: for tests.
void relAttentionWidened(const RelAttentionArgs& a);
// relAttention on the bf16 pair path for bf16 keys on any CPU with
// AVX512-BF16 (AMX or not), else the widened path: for tests.
void relAttentionPaired(const RelAttentionArgs& a);

}  // namespace detail

}  // namespace txl::backend::kernels
