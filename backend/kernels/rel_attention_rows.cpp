// backend/kernels/rel_attention_rows.cpp - relAttention's row-wise path
// (rel_attention.h): a query row at a time, AttentionKernel::Rows, which the
// lowering chooses for a single query row (a generated token,
// onednn::attentionPath), in two forms of one algorithm:
//   - bf16 keys and values with the position table packed as bf16 rows
//     (PositionLayout::Bf16Rows), on a CPU with AVX512-BF16: products of
//     bf16 pairs (vdpbf16ps), probabilities rounded to bf16;
//   - f32 keys and values with the table packed as f32 rows
//     (PositionLayout::F32Rows), on a CPU with AVX-512: FMAs, every
//     product and probability in f32.
//
// Why: with one query row every key, value and position row is used once,
// so the call is a stream of 3 x d x 2 (bf16) or 3 x d x 4 (f32) bytes per
// key and head (enwik8 base: 78 or 155 MB per token over 12 layers) and
// should run at memory speed. The
// block-wise path is built for many rows: it transposes each key block and
// interleaves each value block into L1 tiles (work that pays once the tiles
// serve many rows), and reads the position table as pairs of d in
// [d / 2, positions] rows, one stream per pair (32 streams of 256 bytes per
// block), which the prefetchers do not follow.
//
// Algorithm, per query row i, on the OpenMP team: tasks of (chunk of 128
// keys of the row's range [first, last], rel_attention_keys.h, block of up
// to 4 streams) run phases 1 and 2 on their chunk one after the other, so
// that phase 2 reads the value rows while the chunk's lines are still in
// cache (a key's value rows sit beside its key rows in the window); then
// phase 3 per (stream, head). Within a phase the streams of a block take
// turns per group of keys, and within a group every key's rows of every head
// in turn, the order the window holds them ([positions, batch, heads, d]),
// so that a task reads long runs in address order, which the hardware
// prefetchers follow (with software prefetches a few keys ahead):
//   1. Scores, per group of 32 keys, 16 (key, head) items at a time: per
//      item one accumulator of qu_i · k_j + qv_i · r_p, p = j + q - 1 - i
//      (the relative shift as an index; r_p = 0 for p >= k), straight from
//      the rows in memory: a row of d <= 64 is up to two zmm of bf16 pairs,
//      vdpbf16ps's operand (qu_i, qv_i rounded to bf16 pairs once), or up to
//      four zmm of f32, FMA's. The 16 accumulators reduce to one vector of
//      16 scores (reduce16; the items are loaded in the order that leaves
//      item n in lane n). Scale; masked keys and pad to -inf; stored key by
//      key in the call's score buffer ([batch, keys, heads], the calling
//      thread's Scratch). Then the chunk's max per head. Where the table's
//      first positions hold one row (rt.same: distances clamped at
//      clamp_len), a group wholly below it reads no position row: qv_i · r
//      is taken once per (stream, head) and added to the reduced qu_i · k_j.
//   2. Per group of 32 keys: p = exp(s - max) per (key, head), with the
//      head's max over the chunk (0 where masked), l += p key by key; then,
//      four heads at a time with their O in registers, O += p V. In bf16, p
//      is rounded to bf16 pairs of keys (2m, 2m + 1) and taken key pair by
//      key pair as pair products against two value rows interleaved by
//      16-bit unpacks; the unpacks permute d within each 128-bit lane, the
//      same way for every key: O stays in that order. In f32, key by key,
//      p broadcast into FMAs with the value row. The chunk's l and O per
//      head go to the buffer.
//   3. Per (stream, head): l and O summed over the chunks in order, each
//      chunk's scaled by exp(its max - the row's max) (the online softmax's
//      merge), O put back in d's order, out_i = O / l, or NaN where every
//      key is masked.
// Chunks have a fixed size, so the sums' order, and the result, do not
// depend on the thread count or on the other streams of the batch.
//
// Groups of 32 keys start at the row's first unmasked key, so keys
// prepended with pad = 1 (a padded warm-up plan) change no bit of the result,
// and keys before it are never read (their V may hold NaN). The bf16 form's
// roundings are those of the block-wise pair path (qu, qv, the position
// table and the probabilities in bf16; sums in f32), the f32 form's those of
// f32; both sum in another order than the block-wise paths.
#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <new>
#include <type_traits>
#include <vector>

#include "backend/platform.h"
#include "backend/kernels/rel_attention.h"
#include "backend/kernels/rel_attention_keys.h"
#include "backend/kernels/vector_exp.h"
#include "ir/check.h"

// GCC 12's AVX-512 intrinsics start from _mm512_undefined_ps(), which its
// -Wuninitialized reports once inlined (GCC bug 105593): silenced for them.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace txl::backend::kernels {

namespace {

using I = std::int64_t;
using detail::KeyRange;

constexpr I kMaxD = 64;
constexpr I kMaxHeads = detail::kRowsMaxHeads;

// Keys per group of phase 1 (a whole number of 16 items for any head
// count): long runs of each stream's rows, which the hardware prefetchers
// follow (software prefetches fill the miss buffers the loads need).
constexpr I kGroupKeys = 32;
constexpr I kChunk =
    128;  // keys per task of a phase: a multiple of 32, fixed (the sums' order does not depend on the threads)
// Streams whose chunks one task of a phase takes in turn, per group of keys:
// a window holds key j of every stream side by side ([positions, batch,
// heads, d]), so a task that reads one stream's rows alone reads one part
// in every `batch` (1 KB in 8 KB at enwik8's batch 8), a stride the
// hardware prefetchers do not follow across pages; taking the group's rows
// of several streams in turn reads them in address order.
constexpr I kStreamsPerTask = 4;
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

#define TXL_ROWS __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx512bf16,fma")))
#define TXL_ROWS_INLINE \
  __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx512bf16,fma"), always_inline)) inline

// The element of a call's keys, values and position table: bf16 (its bits)
// or f32.
using Bf16 = std::uint16_t;
template <class T>
constexpr bool kIsF32 = std::is_same_v<T, float>;

inline __mmask16 laneMask(I n) {  // lanes [0, n) of 16, clamped
  n = std::clamp<I>(n, 0, 16);
  return static_cast<__mmask16>((1u << n) - 1u);
}

inline __mmask32 wordMask(I n) {  // words [0, n) of 32, clamped
  n = std::clamp<I>(n, 0, 32);
  return n == 32 ? ~__mmask32(0) : static_cast<__mmask32>((1u << n) - 1u);
}

// The fixed facts of one call: pointers and strides in elements of the
// call's element type (keys, values and position table alike).
struct Call {
  const RelAttentionArgs* a;
  I batch, heads, q, keys, d;
  __mmask32 cols[4];  // the elements of d in each zmm of a row: 32 words (bf16) or 16 lanes (f32)
};

Call callOf(const RelAttentionArgs& a) {
  const RelAttentionShape& s = a.shape;
  Call c{&a, s.batch, s.heads, s.q, s.k, s.d, {}};
  for (int z = 0; z < 4; ++z) c.cols[z] = a.kvBf16 ? wordMask(s.d - 32 * z) : laneMask(s.d - 16 * z);
  return c;
}

// A row of d <= 64 in registers, 0 beyond d: Vecs zmm of bf16 pairs (up to
// two) or of f32 (up to four).
using Row = __m512[4];

template <class T, int Vecs>
TXL_ROWS_INLINE void loadRow(const Call& c, const T* row, Row& x) {
  for (int z = 0; z < Vecs; ++z) {
    if constexpr (kIsF32<T>) x[z] = _mm512_maskz_loadu_ps(static_cast<__mmask16>(c.cols[z]), row + 16 * z);
    else x[z] = _mm512_castsi512_ps(_mm512_maskz_loadu_epi16(c.cols[z], row + 32 * z));
  }
}

// How far ahead (in keys) phases 1 and 2 prefetch the key, position and
// value rows of the (key, head) they read: the hardware prefetchers alone
// leave the loads waiting, on every one of the three streams (docs/LOG.md
// has the measurements).
constexpr I kPrefetchKeys = 4;

// Prefetches the cache lines of a row (bf16: 2 per 64 elements; f32: 4).
template <class T, int Vecs>
TXL_ROWS_INLINE void prefetchRow(const T* row) {
  for (int z = 0; z < Vecs; ++z) _mm_prefetch(reinterpret_cast<const char*>(row) + 64 * z, _MM_HINT_T0);
}

// An f32 row of d elements as the products take it: bf16 pairs or f32.
template <class T, int Vecs>
TXL_ROWS_INLINE void queryRow(const float* row, I d, Row& x) {
  for (int z = 0; z < Vecs; ++z) {
    if constexpr (kIsF32<T>) {
      x[z] = _mm512_maskz_loadu_ps(laneMask(d - 16 * z), row + 16 * z);
    } else {
      const __m512 lo = _mm512_maskz_loadu_ps(laneMask(d - 32 * z), row + 32 * z);
      const __m512 hi = _mm512_maskz_loadu_ps(laneMask(d - 32 * z - 16), row + 32 * z + 16);
      x[z] = (__m512)_mm512_cvtne2ps_pbh(hi, lo);
    }
  }
}

// acc plus the lane-wise products of q and x: pair products (vdpbf16ps,
// two per lane) or FMAs.
template <class T, int Vecs>
TXL_ROWS_INLINE __m512 multiplyAdd(__m512 acc, const Row& q, const Row& x) {
  for (int z = 0; z < Vecs; ++z) {
    if constexpr (kIsF32<T>) acc = _mm512_fmadd_ps(q[z], x[z], acc);
    else acc = _mm512_dpbf16_ps(acc, (__m512bh)q[z], (__m512bh)x[z]);
  }
  return acc;
}

// The key that slot s of reduce16's input holds so that lane n of its
// result is key n: slot 4x + m ends in lane 4m + x.
constexpr I keyOfSlot(int s) { return 4 * (s % 4) + s / 4; }

// Lane n = the sum of the 16 lanes of a[s] for the slot s of key n
// (keyOfSlot): 15 adds and 30 shuffles for 16 horizontal sums.
TXL_ROWS_INLINE __m512 reduce16(const __m512 (&a)[16]) {
  __m512 b[8], c[4];
  for (int i = 0; i < 8; ++i)  // b[i]: a[2i]'s halves summed in chunks 0-1, a[2i+1]'s in 2-3
    b[i] = _mm512_add_ps(_mm512_shuffle_f32x4(a[2 * i], a[2 * i + 1], 0x44),
                         _mm512_shuffle_f32x4(a[2 * i], a[2 * i + 1], 0xee));
  for (int i = 0; i < 4; ++i)  // c[i]: chunk m holds 4 partial sums of a[4i + m]
    c[i] = _mm512_add_ps(_mm512_shuffle_f32x4(b[2 * i], b[2 * i + 1], 0x88),
                         _mm512_shuffle_f32x4(b[2 * i], b[2 * i + 1], 0xdd));
  const __m512 d0 = _mm512_add_ps(_mm512_unpacklo_ps(c[0], c[1]), _mm512_unpackhi_ps(c[0], c[1]));
  const __m512 d1 = _mm512_add_ps(_mm512_unpacklo_ps(c[2], c[3]), _mm512_unpackhi_ps(c[2], c[3]));
  const __m512d e0 = _mm512_castps_pd(d0), e1 = _mm512_castps_pd(d1);
  return _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(e0, e1)), _mm512_castpd_ps(_mm512_unpackhi_pd(e0, e1)));
}

// One head's O over a chunk's keys in phase 2: in f32, o[z] holds d = 16 z
// + lane; in bf16, in the unpacks' order (accumulatePair), o[2 half] the lo
// unpacks of half `half`, o[2 half + 1] the hi ones.
struct HeadO {
  __m512 o[4];
};

// std::allocator of a vector type is not sure to align it in a translation
// unit compiled without AVX-512 (its alignment is an attribute that a
// template argument may lose): the scratch's vectors of zmm use this one.
template <class T>
struct Aligned64 {
  using value_type = T;
  Aligned64() = default;
  template <class U>
  Aligned64(const Aligned64<U>&) {}
  T* allocate(std::size_t n) { return static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t(64))); }
  void deallocate(T* p, std::size_t) { ::operator delete(p, std::align_val_t(64)); }
  bool operator==(const Aligned64&) const { return true; }
};
template <class T>
using AlignedVector = std::vector<T, Aligned64<T>>;

// The q rows of one (stream, head) as the products take them (queryRow):
// qu, then qv.
struct QueryRows {
  Row u, v;
};

// Phase 2's running max and sum of one stream over a chunk, per head.
struct StreamSums {
  float m[kMaxHeads], l[kMaxHeads];
};

// Per call, in the calling thread's scratch (the team shares it): per
// stream b its row's key range, its row's scores of those keys key by key
// ([key, head]: the order the window holds them), and per (b, head, chunk)
// the chunk's max, sum and O; per item of a group of keys (item t is head
// t % heads of key t / heads) the key and head it reads.
struct Scratch {
  std::vector<KeyRange> range;         // [batch]
  AlignedVector<QueryRows> query;      // [batch, heads]
  std::vector<float> sameScore;        // [batch, heads]: qv · r of the positions below rt.same
  std::vector<float> scores;           // [batch, stride, heads]
  std::vector<float> chunkMax;         // [batch, heads, chunks]
  std::vector<float> chunkSum;         // [batch, heads, chunks]
  std::vector<float> chunkO;           // [batch, heads, chunks, 4 x 16]: O as HeadO holds it
  AlignedVector<HeadO> o;              // [tasks, streams per task, heads]: phase 2's running O
  std::vector<StreamSums> sums;        // [tasks, streams per task]: phase 2's max and running sum
  std::vector<std::int32_t> itemKey;   // [items + 16]: the key of item t in its group, from 0
  std::vector<std::int32_t> itemHead;  // [items + 16]: the head of item t
  std::vector<I> keyOffset;            // [items]: item t's key row from the group's first (elements)
  std::vector<I> tableOffset;          // [items]: item t's position row from the group's first (elements)
  I stride = 0, chunks = 0, blocks = 0, heads = 0;

  void size(I batch, I h, I keys) {
    stride = (keys + 31) / 32 * 32;
    chunks = (keys + kChunk - 1) / kChunk;
    blocks = (batch + kStreamsPerTask - 1) / kStreamsPerTask;
    const auto grow = [](auto& v, I n) {
      if (v.size() < static_cast<std::size_t>(n)) v.resize(static_cast<std::size_t>(n));
    };
    grow(range, batch);
    grow(query, batch * h);
    grow(sameScore, batch * h);
    grow(scores, batch * stride * h);
    grow(chunkMax, batch * h * chunks);
    grow(chunkSum, batch * h * chunks);
    grow(chunkO, batch * h * chunks * 64);
    grow(o, chunks * blocks * kStreamsPerTask * h);
    grow(sums, chunks * blocks * kStreamsPerTask);
    if (h != heads) {
      heads = h;
      itemKey.assign(static_cast<std::size_t>(kGroupKeys * h + 16), 0);
      itemHead.assign(static_cast<std::size_t>(kGroupKeys * h + 16), 0);
      for (I t = 0; t < kGroupKeys * h; ++t) {
        itemKey[static_cast<std::size_t>(t)] = static_cast<std::int32_t>(t / h);
        itemHead[static_cast<std::size_t>(t)] = static_cast<std::int32_t>(t % h);
      }
    }
  }

  // The items' row offsets for a call's strides.
  void offsets(const RelAttentionArgs& a) {
    keyOffset.resize(static_cast<std::size_t>(kGroupKeys * heads));
    tableOffset.resize(static_cast<std::size_t>(kGroupKeys * heads));
    for (std::size_t t = 0; t < keyOffset.size(); ++t) {
      keyOffset[t] = itemKey[t] * a.kStrides.pos + itemHead[t] * a.kStrides.head;
      tableOffset[t] = itemKey[t] * a.rt.step + itemHead[t] * a.rt.head;
    }
  }
};

// Keys [j1, j2) of stream b within its range, for every head: what one task
// of a phase reads (a chunk: rows of all heads, contiguous in memory).
struct Chunk {
  I b, index, j1, j2;
};

// The chunks of a range (0 for none).
I chunksOf(const KeyRange& r) { return r.first > r.last ? 0 : (r.last - r.first + kChunk) / kChunk; }

Chunk chunkAt(const Scratch& sc, I t) {
  const I b = t / sc.chunks, index = t % sc.chunks;
  const KeyRange& r = sc.range[b];
  const I j1 = r.first + index * kChunk;
  return {b, index, j1, std::min(j1 + kChunk, r.last + 1)};
}

// Phase 0 of row i for stream b: its qu and qv rows as the products take
// them, per head, and qv · r of the clamped positions' one row.
template <class T, int Vecs>
TXL_ROWS void queryRows(const Call& c, Scratch& sc, I i, I b) {
  const RelAttentionArgs& a = *c.a;
  const float* qu = a.qu + i * a.quStrides.pos + b * a.quStrides.batch;
  const float* qv = a.qv + i * a.qvStrides.pos + b * a.qvStrides.batch;
  for (I h = 0; h < c.heads; ++h) {
    QueryRows& q = sc.query[b * c.heads + h];
    queryRow<T, Vecs>(qu + h * a.quStrides.head, c.d, q.u);
    queryRow<T, Vecs>(qv + h * a.qvStrides.head, c.d, q.v);
    if (a.rt.same > 0) {
      Row x;
      loadRow<T, Vecs>(c, static_cast<const T*>(a.rt.data) + h * a.rt.head, x);
      sc.sameScore[b * c.heads + h] = _mm512_reduce_add_ps(multiplyAdd<T, Vecs>(_mm512_setzero_ps(), q.v, x));
    }
  }
}

// The keys of [j0, j0 + count) (count <= 16) that the row may attend:
// lane n for key j0 + n.
TXL_ROWS_INLINE __mmask16 keysOk(const Call& c, const Scratch& sc, I i, I b, I j0, I count) {
  const RelAttentionArgs& a = *c.a;
  const __m512 zero = _mm512_setzero_ps();
  __mmask16 ok = laneMask(count);
  if (a.pad) ok = _mm512_mask_cmp_ps_mask(ok, _mm512_maskz_loadu_ps(ok, a.pad + b * c.keys + j0), zero, _CMP_EQ_OQ);
  if (!sc.range[b].band)
    ok = _mm512_mask_cmp_ps_mask(ok, _mm512_maskz_loadu_ps(ok, a.mask + i * c.keys + j0), zero, _CMP_EQ_OQ);
  return ok;
}

// Phase 1 of row i on the keys [j0, j0 + count) of a chunk (count <=
// kGroupKeys): the scaled, masked score of every (key, head) item, in the
// window's order (key by key, every head of a key in turn), 16 items at a
// time, stored key by key. Past the table (Checked: the group's last keys
// may reach it) r_p = 0; below rt.same (Same: every key of the group) qv ·
// r_p is the stream's sameScore of the head, added to the reduced qu · k.
template <class T, int Vecs, bool Checked, bool Same>
TXL_ROWS void groupScores(const Call& c, Scratch& sc, I i, const Chunk& ch, I j0) {
  const RelAttentionArgs& a = *c.a;
  const I shift = c.q - 1 - i, items = std::min(kGroupKeys, ch.j2 - j0) * c.heads;
  const __m512 negInf = _mm512_set1_ps(kNegInf), scale = _mm512_set1_ps(a.scale);
  const __m512i okKeys[2] = {
      // lane n: key j0 + 16 z + n
      _mm512_maskz_mov_epi32(keysOk(c, sc, i, ch.b, j0, ch.j2 - j0), _mm512_set1_epi32(-1)),
      _mm512_maskz_mov_epi32(keysOk(c, sc, i, ch.b, j0 + 16, ch.j2 - j0 - 16), _mm512_set1_epi32(-1))};
  const T* keys = static_cast<const T*>(a.k) + ch.b * a.kStrides.batch + j0 * a.kStrides.pos;
  const T* table = static_cast<const T*>(a.rt.data) + (j0 + shift) * a.rt.step;
  const I tableEnd = c.keys - j0 - shift;  // items of keys from this one on read no row
  const QueryRows* query = sc.query.data() + ch.b * c.heads;
  const I* keyOffset = sc.keyOffset.data();
  const I* tableOffset = sc.tableOffset.data();
  const std::int32_t* itemHead = sc.itemHead.data();
  const std::int32_t* itemKey = sc.itemKey.data();
  const float* sameScore = sc.sameScore.data() + ch.b * c.heads;
  float* s = sc.scores.data() + (ch.b * sc.stride + (j0 - sc.range[ch.b].first)) * c.heads;
  for (I t0 = 0; t0 < items; t0 += 16) {
    __m512 acc[16];
#pragma GCC unroll 16
    for (int n = 0; n < 16; ++n) {  // item t0 + n in address order, into the slot of lane n
      const int slot = 4 * (n % 4) + n / 4;
      const I t = std::min<I>(t0 + n, items - 1);  // lanes past the items: not stored
      const QueryRows& q = query[itemHead[t]];
      Row x;
      prefetchRow<T, Vecs>(keys + keyOffset[t] + kPrefetchKeys * a.kStrides.pos);
      // Past the table's end a prefetch only wastes a fill (it never faults).
      if (!Same) prefetchRow<T, Vecs>(table + tableOffset[t] + kPrefetchKeys * a.rt.step);
      loadRow<T, Vecs>(c, keys + keyOffset[t], x);
      __m512 dot = multiplyAdd<T, Vecs>(_mm512_setzero_ps(), q.u, x);
      if (!Same && (!Checked || itemKey[t] < tableEnd)) {
        loadRow<T, Vecs>(c, table + tableOffset[t], x);
        dot = multiplyAdd<T, Vecs>(dot, q.v, x);
      }
      acc[slot] = dot;
    }
    const __mmask16 stored = laneMask(items - t0);
    const __m512i laneKeys = _mm512_loadu_si512(itemKey + t0);  // < 32: lanes 16 on read okKeys[1]
    const __m512i laneOk = _mm512_permutex2var_epi32(okKeys[0], laneKeys, okKeys[1]);
    const __mmask16 ok = _mm512_mask_test_epi32_mask(stored, laneOk, laneOk);
    __m512 score = reduce16(acc);
    if (Same) score = _mm512_add_ps(score, _mm512_i32gather_ps(_mm512_loadu_si512(itemHead + t0), sameScore, 4));
    _mm512_mask_storeu_ps(s + t0, stored, _mm512_mask_mov_ps(negInf, ok, _mm512_mul_ps(score, scale)));
  }
}

// The max per head of a chunk's scores (phase 1's result), into chunkMax.
TXL_ROWS void chunkMaxes(const Call& c, Scratch& sc, const Chunk& ch) {
  const float* s = sc.scores.data() + (ch.b * sc.stride + (ch.j1 - sc.range[ch.b].first)) * c.heads;
  for (I h0 = 0; h0 < c.heads; h0 += 16) {
    const __mmask16 lanes = laneMask(c.heads - h0);
    __m512 m = _mm512_set1_ps(kNegInf);
    for (I j = ch.j1; j < ch.j2; ++j, s += c.heads) m = _mm512_max_ps(m, _mm512_maskz_loadu_ps(lanes, s + h0));
    s -= (ch.j2 - ch.j1) * c.heads;
    alignas(64) float v[16];
    _mm512_store_ps(v, m);
    for (I h = h0; h < std::min(h0 + 16, c.heads); ++h)
      sc.chunkMax[(ch.b * c.heads + h) * sc.chunks + ch.index] = v[h - h0];
  }
}

// bf16: O += p_j v_j + p_{j+1} v_{j+1}, pp = the pair (p_j, p_{j+1}) in bf16
// and b = v_{j+1}'s row (zero past the chunk). o[2 half] lane 4c + t holds
// d = 32 half + 8c + t, o[2 half + 1] lane 4c + t holds 32 half + 8c + 4 + t.
template <int Halves>
TXL_ROWS_INLINE void accumulatePair(const Row& a, const Row& b, __m512i pp, __m512 (&o)[4]) {
  for (int h = 0; h < Halves; ++h) {
    const __m512i x = _mm512_castps_si512(a[h]), y = _mm512_castps_si512(b[h]);
    o[2 * h] = _mm512_dpbf16_ps(o[2 * h], (__m512bh)_mm512_unpacklo_epi16(x, y), (__m512bh)pp);
    o[2 * h + 1] = _mm512_dpbf16_ps(o[2 * h + 1], (__m512bh)_mm512_unpackhi_epi16(x, y), (__m512bh)pp);
  }
}

// Phase 2's sums of a chunk, before its first key: zero, and the chunk's
// max (phase 1's), per head.
TXL_ROWS void startSums(const Scratch& sc, const Chunk& ch, I heads, StreamSums& sums, HeadO* o) {
  for (I h = 0; h < heads; ++h) {
    sums.m[h] = sc.chunkMax[(ch.b * heads + h) * sc.chunks + ch.index];
    sums.l[h] = 0.0f;
    for (__m512& x : o[h].o) x = _mm512_setzero_ps();
  }
}

// Phase 2's sums of every head after the chunk's last key, into the buffer.
TXL_ROWS void endSums(Scratch& sc, const Chunk& ch, I heads, const StreamSums& sums, const HeadO* o) {
  for (I h = 0; h < heads; ++h) {
    const I at = (ch.b * heads + h) * sc.chunks + ch.index;
    sc.chunkSum[at] = sums.l[h];
    float* chunkO = sc.chunkO.data() + at * 64;
    for (int z = 0; z < 4; ++z) _mm512_storeu_ps(chunkO + 16 * z, o[h].o[z]);
  }
}

// The probabilities of a group's (key, head) items as phase 2 multiplies
// them into V: bf16 pairs of keys (2m, 2m + 1) per 32-bit word, or f32.
template <class T>
struct GroupProbs {
  alignas(64) std::conditional_t<kIsF32<T>, float[kGroupKeys][kMaxHeads], std::uint32_t[kGroupKeys / 2][kMaxHeads]> p;
};

// O += Σ p v over the keys of a group for Heads heads from `head`: key (f32)
// or key pair (bf16) by key pair, the heads' value rows in turn (in address
// order), the heads' O in registers.
template <class T, int Vecs, int Heads>
TXL_ROWS_INLINE void valuesOfHeads(const Call& c, const T* values, I count, const GroupProbs<T>& probs, I head,
                                   HeadO* o) {
  const RelAttentionArgs& a = *c.a;
  __m512 acc[Heads][4];
  for (int x = 0; x < Heads; ++x) std::copy(o[head + x].o, o[head + x].o + 4, acc[x]);
  if constexpr (kIsF32<T>) {
    for (I e = 0; e < count; ++e) {
      const T* row = values + e * a.vStrides.pos + head * a.vStrides.head;
      for (int x = 0; x < Heads; ++x, row += a.vStrides.head) {
        Row v;
        prefetchRow<T, Vecs>(row + kPrefetchKeys * a.vStrides.pos);
        loadRow<T, Vecs>(c, row, v);
        const __m512 p = _mm512_set1_ps(probs.p[e][head + x]);
        for (int z = 0; z < Vecs; ++z) acc[x][z] = _mm512_fmadd_ps(p, v[z], acc[x][z]);
      }
    }
  } else {
    for (I e = 0; e < count; e += 2) {
      const T* row = values + e * a.vStrides.pos + head * a.vStrides.head;
      for (int x = 0; x < Heads; ++x, row += a.vStrides.head) {
        Row v0, v1 = {};
        prefetchRow<T, Vecs>(row + kPrefetchKeys * a.vStrides.pos);
        prefetchRow<T, Vecs>(row + (kPrefetchKeys + 1) * a.vStrides.pos);
        loadRow<T, Vecs>(c, row, v0);
        if (e + 1 < count) loadRow<T, Vecs>(c, row + a.vStrides.pos, v1);
        accumulatePair<Vecs>(v0, v1, _mm512_set1_epi32(static_cast<int>(probs.p[e / 2][head + x])), acc[x]);
      }
    }
  }
  for (int x = 0; x < Heads; ++x) std::copy(acc[x], acc[x] + 4, o[head + x].o);
}

// Phase 2 of row i on the 32 keys from g of a chunk: per (key, head) p =
// exp(s - max), added to the head's sum l (key by key) and (rounded to bf16
// pairs of keys (2m, 2m + 1) in bf16) to its O = Σ p v, four heads at a time.
template <class T, int Vecs>
TXL_ROWS void groupValues(const Call& c, Scratch& sc, const Chunk& ch, I g, StreamSums& sums, HeadO* o) {
  const RelAttentionArgs& a = *c.a;
  const I count = std::min<I>(kGroupKeys, ch.j2 - g);
  const __m512 negInf = _mm512_set1_ps(kNegInf);
  // Words 2h, 2h + 1 of the pair of keys (2m, 2m + 1) from p's two rows.
  alignas(64) static constexpr std::uint16_t interleave[32] = {0,  16, 1,  17, 2,  18, 3,  19, 4,  20, 5,
                                                               21, 6,  22, 7,  23, 8,  24, 9,  25, 10, 26,
                                                               11, 27, 12, 28, 13, 29, 14, 30, 15, 31};
  const __m512i order = _mm512_load_si512(interleave);
  GroupProbs<T> probs;
  const float* s = sc.scores.data() + (ch.b * sc.stride + (g - sc.range[ch.b].first)) * c.heads;
  for (I h0 = 0; h0 < c.heads; h0 += 16) {
    const __mmask16 lanes = laneMask(c.heads - h0);
    const __m512 m = _mm512_maskz_loadu_ps(lanes, sums.m + h0);
    __m512 l = _mm512_maskz_loadu_ps(lanes, sums.l + h0);
    for (I e = 0; e < count; e += 2) {
      __m512 p[2] = {_mm512_setzero_ps(), _mm512_setzero_ps()};
      for (I z = 0; z < 2 && e + z < count; ++z) {
        const __m512 sz = _mm512_mask_loadu_ps(negInf, lanes, s + (e + z) * c.heads + h0);
        const __mmask16 ok = _mm512_cmp_ps_mask(sz, negInf, _CMP_NEQ_UQ);
        p[z] = _mm512_maskz_mov_ps(ok, expNonPositive16(_mm512_sub_ps(sz, m)));
        l = _mm512_add_ps(l, p[z]);
      }
      if constexpr (kIsF32<T>) {
        for (int z = 0; z < 2; ++z) _mm512_storeu_ps(&probs.p[e + z][h0], p[z]);
      } else {
        const __m512i words = (__m512i)_mm512_cvtne2ps_pbh(p[1], p[0]);
        _mm512_storeu_si512(&probs.p[e / 2][h0], _mm512_permutexvar_epi16(order, words));
      }
    }
    _mm512_mask_storeu_ps(sums.l + h0, lanes, l);
  }
  const T* values = static_cast<const T*>(a.v) + ch.b * a.vStrides.batch + g * a.vStrides.pos;
  I h = 0;
  for (; h + 4 <= c.heads; h += 4) valuesOfHeads<T, Vecs, 4>(c, values, count, probs, h, o);
  switch (c.heads - h) {
    case 3:
      valuesOfHeads<T, Vecs, 3>(c, values, count, probs, h, o);
      break;
    case 2:
      valuesOfHeads<T, Vecs, 2>(c, values, count, probs, h, o);
      break;
    case 1:
      valuesOfHeads<T, Vecs, 1>(c, values, count, probs, h, o);
      break;
    default:
      break;
  }
}

// Phase 3 of row i for (stream b, head h): O and l summed over the chunks in
// order, O put back in d's order (bf16), out = O / l (NaN: every key masked).
template <class T>
TXL_ROWS void writeRow(const Call& c, const Scratch& sc, I i, I b, I h) {
  const RelAttentionArgs& a = *c.a;
  float* out = a.out + i * a.outStrides.pos + b * a.outStrides.batch + h * a.outStrides.head;
  const KeyRange& r = sc.range[b];
  const I bh = b * c.heads + h;
  const I chunks = chunksOf(r);
  if (chunks == 0 ||
      *std::max_element(&sc.chunkMax[bh * sc.chunks], &sc.chunkMax[bh * sc.chunks] + chunks) == kNegInf) {
    for (I x = 0; x < c.d; x += 16)
      _mm512_mask_storeu_ps(out + x, laneMask(c.d - x), _mm512_set1_ps(std::numeric_limits<float>::quiet_NaN()));
    return;
  }
  // Each chunk's sums are relative to its own max m_n: rescaled to the
  // row's max M by exp(m_n - M) (0 for a chunk with every key masked).
  const float* maxes = &sc.chunkMax[bh * sc.chunks];
  const float rowMax = *std::max_element(maxes, maxes + chunks);
  __m512 o[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
  float l = 0.0f;
  for (I n = 0; n < chunks; ++n) {
    if (maxes[n] == kNegInf) continue;
    const float f = std::exp(maxes[n] - rowMax);
    const __m512 fv = _mm512_set1_ps(f);
    const float* chunkO = &sc.chunkO[(bh * sc.chunks + n) * 64];
    for (int z = 0; z < 4; ++z) o[z] = _mm512_fmadd_ps(fv, _mm512_loadu_ps(chunkO + 16 * z), o[z]);
    l = std::fma(f, sc.chunkSum[bh * sc.chunks + n], l);
  }
  const __m512 inv = _mm512_set1_ps(1.0f / l);
  if constexpr (kIsF32<T>) {
    for (int z = 0; z < 4 && 16 * z < c.d; ++z)
      _mm512_mask_storeu_ps(out + 16 * z, laneMask(c.d - 16 * z), _mm512_mul_ps(o[z], inv));
    return;
  }
  // Output vector w of half `half` is [lo chunk 2w, hi 2w, lo 2w + 1, hi 2w + 1].
  alignas(64) std::int32_t index[2][16];
  for (int w = 0; w < 2; ++w)
    for (int lane = 0; lane < 16; ++lane) {
      const int part = lane / 4;
      index[w][lane] = (part % 2 ? 16 : 0) + 4 * (2 * w + part / 2) + lane % 4;
    }
  for (int half = 0; half < 2 && 32 * half < c.d; ++half)
    for (int w = 0; w < 2; ++w) {
      const __m512 x = _mm512_permutex2var_ps(o[2 * half], _mm512_load_si512(index[w]), o[2 * half + 1]);
      _mm512_mask_storeu_ps(out + 32 * half + 16 * w, laneMask(c.d - 32 * half - 16 * w), _mm512_mul_ps(x, inv));
    }
}

// Task t of a phase (rows()): chunk index t / blocks for the streams
// [first, last) of block t % blocks.
struct Task {
  I index, first, last;
  Task(const Scratch& sc, I batch, I t)
      : index(t / sc.blocks), first(t % sc.blocks * kStreamsPerTask), last(std::min(first + kStreamsPerTask, batch)) {}
  Chunk chunk(const Scratch& sc, I b) const { return chunkAt(sc, b * sc.chunks + index); }
  // f(chunk, stream's place in the block, first key) for every group of
  // `keys` keys of the task's chunks: group by group, each stream in turn.
  template <class F>
  void byGroups(const Scratch& sc, I keys, F f) const {
    I groups = 0;
    for (I b = first; b < last; ++b) {
      const Chunk ch = chunk(sc, b);
      groups = std::max(groups, (ch.j2 - ch.j1 + keys - 1) / keys);
    }
    for (I n = 0; n < groups; ++n)
      for (I b = first; b < last; ++b)
        if (const Chunk ch = chunk(sc, b); ch.j1 + keys * n < ch.j2) f(ch, b - first, ch.j1 + keys * n);
  }
};

// Phase 1's task t, per group of keys (a whole number of 16 items).
template <class T, int Vecs>
TXL_ROWS void scoresTask(const Call& c, Scratch& sc, I i, I t) {
  const Task task(sc, c.batch, t);
  task.byGroups(sc, kGroupKeys, [&](const Chunk& ch, I, I j0) {
    const I shift = c.q - 1 - i;
    if (j0 + kGroupKeys + shift <= c.a->rt.same) groupScores<T, Vecs, false, true>(c, sc, i, ch, j0);
    else if (j0 + kGroupKeys + shift <= c.keys) groupScores<T, Vecs, false, false>(c, sc, i, ch, j0);
    else groupScores<T, Vecs, true, false>(c, sc, i, ch, j0);
  });
  for (I b = task.first; b < task.last; ++b)
    if (const Chunk ch = task.chunk(sc, b); ch.j1 < ch.j2) chunkMaxes(c, sc, ch);
}

// Task t: phase 1 on its chunks, then phase 2 per group of keys.
template <class T, int Vecs>
TXL_ROWS void chunkTask(const Call& c, Scratch& sc, I i, I t) {
  scoresTask<T, Vecs>(c, sc, i, t);
  const Task task(sc, c.batch, t);
  StreamSums* sums = sc.sums.data() + t * kStreamsPerTask;  // [stream of the block]
  HeadO* o = sc.o.data() + t * kStreamsPerTask * c.heads;   // [stream of the block, head]
  for (I b = task.first; b < task.last; ++b)
    if (const Chunk ch = task.chunk(sc, b); ch.j1 < ch.j2)
      startSums(sc, ch, c.heads, sums[b - task.first], o + (b - task.first) * c.heads);
  task.byGroups(sc, kGroupKeys, [&](const Chunk& ch, I place, I g) {
    groupValues<T, Vecs>(c, sc, ch, g, sums[place], o + place * c.heads);
  });
  for (I b = task.first; b < task.last; ++b)
    if (const Chunk ch = task.chunk(sc, b); ch.j1 < ch.j2)
      endSums(sc, ch, c.heads, sums[b - task.first], o + (b - task.first) * c.heads);
}

template <class T, int Vecs>
void rows(const Call& c, Scratch& sc) {
  const RelAttentionArgs& a = *c.a;
#pragma omp parallel
  for (I i = 0; i < c.q; ++i) {
#pragma omp for schedule(static)
    for (I b = 0; b < c.batch; ++b) {
      RelAttentionArgs sa = a;  // the key range sees stream b's pad row
      if (sa.pad) sa.pad += b * c.keys;
      sc.range[b] = detail::unmaskedKeyRange(sa, i);
    }
#pragma omp for schedule(static)
    for (I b = 0; b < c.batch; ++b) queryRows<T, Vecs>(c, sc, i, b);
      // A task is (chunk index, block of kStreamsPerTask streams): per group
      // of keys, the group of each stream of the block in turn (kStreamsPerTask).
      // Chunks past a stream's range are empty.
#pragma omp for schedule(dynamic)
    for (I t = 0; t < sc.chunks * sc.blocks; ++t) chunkTask<T, Vecs>(c, sc, i, t);
#pragma omp for schedule(static)
    for (I t = 0; t < c.batch * c.heads; ++t) writeRow<T>(c, sc, i, t / c.heads, t % c.heads);
  }
}

}  // namespace

namespace detail {

void relAttentionRows(const RelAttentionArgs& a) {
  const RelAttentionShape& s = a.shape;
  TXL_CHECK(s.d <= kMaxD && s.heads <= kMaxHeads &&
                (a.kvBf16 ? a.path.table == PositionLayout::Bf16Rows && platform().avx512Bf16
                          : a.path.table == PositionLayout::F32Rows && platform().avx512),
            "rel_attention: the row-wise path needs bf16 keys, bf16 position rows and AVX512-BF16, or f32 keys, f32 "
            "position rows and AVX-512");
  const Call c = callOf(a);
  // Kept per calling thread across calls, so that a warm stream's segments
  // allocate nothing (tests/session/no_allocation_test.cpp); several
  // sessions on several threads each have their own.
  static thread_local Scratch scratch;
  scratch.size(s.batch, s.heads, s.k);
  scratch.offsets(a);
  if (a.kvBf16) {
    if (s.d > 32) rows<Bf16, 2>(c, scratch);
    else rows<Bf16, 1>(c, scratch);
    return;
  }
  switch ((s.d + 15) / 16) {
    case 1:
      return rows<float, 1>(c, scratch);
    case 2:
      return rows<float, 2>(c, scratch);
    case 3:
      return rows<float, 3>(c, scratch);
    default:
      return rows<float, 4>(c, scratch);
  }
}

}  // namespace detail

}  // namespace txl::backend::kernels

#pragma GCC diagnostic pop
