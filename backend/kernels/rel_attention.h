// backend/kernels/rel_attention.h - Transformer-XL's attention of one layer in one
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
// rt[h] is the BD table [D, k] (W_r R pretransposed; in f32 or one of two
// bf16 layouts, PositionLayout).
// The [q, k] scores never exist: per key block the scores of a group of
// queries are computed in registers, softmax-ed online (running max and
// sum per query) and multiplied into the output at once. Key blocks are
// anchored at the last key, so keys masked in front (a padded warm-up plan,
// docs/MEMORY.md) leave every other key in the same block and lane: the
// result is bit for bit the unpadded one's.
//
//   RelAttentionArgs a{...};  // a.path: a path relAttentionRuns takes
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

// The ways relAttention runs a call. The oneDNN lowering chooses one per
// node (onednn::attentionPath) and passes it in RelAttentionArgs::path; the
// kernel runs that one and chooses nothing.
enum class AttentionKernel : std::uint8_t {
  Portable,  // plain loops on any CPU, with the block-wise paths' blocks and anchoring
  Blocks,    // AVX-512 key blocks in f32 (bf16 keys and values widened as they are read)
  Pairs,     // AVX-512 key blocks with AVX512-BF16 pair products (vdpbf16ps) for bf16 keys and values
  Rows,      // a query row at a time (rel_attention_rows.cpp): pair products for bf16 keys and values, FMAs for f32
};

// How the position table rt (element (h, c, p) = rt[h][c][p]) is laid out
// in RelAttentionArgs::rt, with its strides `head` and `step` in units of
// the layout's element:
enum class PositionLayout : std::uint8_t {
  F32,        // f32 (h, c, p) at h * head + c * step + p (positions contiguous)
  Bf16Pairs,  // bf16 pairs of d, (d + 1) / 2 of them: the 32-bit lane at h * head + c * step + p
              // holds (rt(h, 2c, p), rt(h, 2c + 1, p)), the last pair's second half 0 for an odd d
  Bf16Rows,   // bf16 rows of positions (any d): (h, p, c) at h * head + p * step + c holds rt(h, c, p)
  F32Rows,    // f32 rows of positions, as Bf16Rows
};

// A kernel path with the position-table layout it reads: Portable and
// Blocks read F32, Pairs F32 or Bf16Pairs, Rows Bf16Rows (bf16 keys and
// values) or F32Rows (f32 keys and values).
struct AttentionPath {
  AttentionKernel kernel = AttentionKernel::Portable;
  PositionLayout table = PositionLayout::F32;
  bool operator==(const AttentionPath&) const = default;
};

// "portable", "blocks", "pairs", "pairs-f32-table", "rows", "rows-f32" (and
// "invalid" for a kernel with a layout it does not read): the path in step
// names.
const char* attentionPathName(const AttentionPath& p);

struct PositionTable {
  const void* data = nullptr;  // laid out as AttentionPath::table says
  std::int64_t head = 0, step = 0;
  // Positions [0, same) hold position 0's values, bit for bit (relative
  // distances at or beyond clamp_len share one position vector; 0: not
  // known), so the row-wise kernel takes qv · r over them once per head and
  // the block-wise ones once per query row, for every key block whose
  // positions all lie below `same` (the same bits as the products).
  std::int64_t same = 0;
};

struct RelAttentionArgs {
  RelAttentionShape shape;
  AttentionPath path;         // must be one relAttentionRuns takes
  const float* qu = nullptr;  // [q, batch, heads, d]: the query plus u (content bias)
  const float* qv = nullptr;  // [q, batch, heads, d]: the query plus v (position bias)
  RowStrides quStrides, qvStrides;
  const void* k = nullptr;  // [k, batch, heads, d] of kvType
  const void* v = nullptr;  // [k, batch, heads, d] of kvType
  RowStrides kStrides, vStrides;
  bool kvBf16 = false;  // k and v are bf16 (a bf16 state window), else f32
  // [heads, d, k] in path.table's layout. A shorter segment's table is a
  // suffix of the longest one's, so its rows may be longer than k.
  PositionTable rt;
  const float* mask = nullptr;  // [q, k] dense, nonzero: masked
  const float* pad = nullptr;   // [batch, k] dense, nonzero: a padding key of stream b; may be null
  float scale = 1.0f;
  float* out = nullptr;  // [q, batch, heads, d]
  RowStrides outStrides;
};

// Whether the kernel takes this shape (1 <= d <= 64, positive sizes).
bool relAttentionSupports(const RelAttentionShape& s);

// Whether this CPU runs path `p` on shape `s` (relAttentionSupports) with
// keys and values in bf16 (kvBf16) or f32: Blocks needs AVX-512; Pairs
// AVX512-BF16 and bf16 keys and values; Rows at most 64 heads, and with a
// Bf16Rows table AVX512-BF16 and bf16 keys and values, with an F32Rows one
// AVX-512 and f32 keys and values; the layout one the kernel reads (above).
bool relAttentionRuns(const AttentionPath& p, const RelAttentionShape& s, bool kvBf16);

// out as above by a.path (txl::InternalError unless relAttentionRuns), on the
// OpenMP team. Pair products take qu (and qv, with a bf16 table) rounded to
// bf16: the scores then carry their rounding too.
void relAttention(const RelAttentionArgs& a);

}  // namespace txl::backend::kernels
