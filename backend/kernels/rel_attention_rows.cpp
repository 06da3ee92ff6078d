// backend/kernels/rel_attention_rows.cpp - relAttention's row-wise path
// (rel_attention.h): a query row at a time against bf16 keys and values, on
// a CPU with AVX512-BF16: AttentionKernel::Rows, which the lowering chooses
// for a single query row (a generated token, onednn::attentionPath) with the
// position table packed as bf16 rows (PositionLayout::Bf16Rows).
//
// Why: with one query row every key, value and position row is used once,
// so the call is a stream of 3 x d x 2 bytes per key and head (enwik8 base:
// 78 MB per token over 12 layers) and should run at memory speed. The
// block-wise path is built for many rows: it transposes each key block and
// interleaves each value block into L1 tiles (work that pays once the tiles
// serve many rows), and reads the position table as pairs of d in
// [d / 2, positions] rows, one stream per pair (32 streams of 256 bytes per
// block), which the prefetchers do not follow.
//
// Algorithm, per query row i, in three phases on the OpenMP team (each
// phase's tasks are (stream b, chunk of 128 keys of the row's range
// [first, last], rel_attention_keys.h), every head within a task, so that a
// task reads whole key, value and position rows in address order):
//   1. Scores, per 16 keys every head in turn: per key one accumulator of
//      pair products (vdpbf16ps) qu_i · k_j + qv_i · r_p, p = j + q - 1 - i
//      (the relative shift as an index; r_p = 0 for p >= k), straight from
//      the rows in memory: a bf16 row of d <= 64 is one or two zmm of pairs,
//      vdpbf16ps's operand, and qu_i, qv_i are rounded to bf16 pairs once.
//      The 16 accumulators reduce to one vector of 16 scores (reduce16; the
//      keys are loaded in the order that leaves key n in lane n). Scale;
//      masked keys and pad to -inf; stored in the call's score buffer
//      ([batch, heads, keys], the calling thread's Scratch); the chunk's max
//      per head. The next 16 keys' rows are prefetched.
//   2. Per 32 keys every head in turn: p = exp(s - max) with the row's max
//      over all chunks (0 where masked), l += p, p rounded to bf16 pairs
//      (keys 2m, 2m + 1), and O += p V as pair products against two value
//      rows interleaved by 16-bit unpacks. The unpacks permute d within
//      each 128-bit lane, the same way for every key: O stays in that order.
//      The chunk's l and O per head go to the buffer.
//   3. Per (stream, head): l and O summed over the chunks in order, O put
//      back in d's order, out_i = O / l, or NaN where every key is masked.
// Chunks have a fixed size, so the sums' order, and the result, do not
// depend on the thread count.
//
// Blocks of 16 and 32 keys start at the row's first unmasked key, so keys
// prepended with pad = 1 (a padded warm-up plan) change no bit of the result,
// and keys before it are never read (their V may hold NaN). The roundings
// are those of the block-wise pair path (qu, qv, the position table and the
// probabilities in bf16; sums in f32), summed in another order.
#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <new>
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
constexpr I kAhead = 1;  // groups of keys ahead that a group's rows are prefetched
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

TXL_ROWS_INLINE __mmask16 laneMask(I n) {  // lanes [0, n) of 16, clamped
  n = std::clamp<I>(n, 0, 16);
  return static_cast<__mmask16>((1u << n) - 1u);
}

inline __mmask32 wordMask(I n) {  // words [0, n) of 32, clamped
  n = std::clamp<I>(n, 0, 32);
  return n == 32 ? ~__mmask32(0) : static_cast<__mmask32>((1u << n) - 1u);
}

// The fixed facts of one call: pointers and strides in elements. Keys and
// values are bf16, as is the position table (PositionLayout::Bf16Rows).
struct Call {
  const RelAttentionArgs* a;
  I batch, heads, q, keys, d;
  __mmask32 cols[2];  // the words of d in each half (32 bf16) of a row
};

template <int Halves>
TXL_ROWS_INLINE void loadRow(const Call& c, const std::uint16_t* row, __m512i (&x)[2]) {
  for (int h = 0; h < Halves; ++h) x[h] = _mm512_maskz_loadu_epi16(c.cols[h], row + 32 * h);
}

// The cache lines of one head's bf16 row (d elements) into L1.
TXL_ROWS_INLINE void prefetchRow(const std::uint16_t* row, I d) {
  for (I x = 0; x < 2 * d; x += 64) _mm_prefetch(reinterpret_cast<const char*>(row) + x, _MM_HINT_T0);
}

// f32 row (d elements) as bf16 pairs, 0 beyond d.
template <int Halves>
TXL_ROWS_INLINE void pairsOf(const float* row, I d, __m512i (&x)[2]) {
  for (int h = 0; h < Halves; ++h) {
    const __m512 lo = _mm512_maskz_loadu_ps(laneMask(d - 32 * h), row + 32 * h);
    const __m512 hi = _mm512_maskz_loadu_ps(laneMask(d - 32 * h - 16), row + 32 * h + 16);
    x[h] = (__m512i)_mm512_cvtne2ps_pbh(hi, lo);
  }
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

// One head's sums over a chunk's keys in phase 2.
struct HeadSums {
  __m512 o[2][2][2];  // [set][half][lo, hi]
  __m512 l, m;
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

// A running max of phase 1, per head.
struct HeadMax {
  __m512 v;
};

// The q rows of one (stream, head) as bf16 pairs: qu, then qv.
struct QueryPairs {
  __m512i u[2], v[2];
};

// Per call, in the calling thread's scratch (the team shares it): per
// stream b its row's key range, per (b, head) the row's scores of those
// keys, and per (b, head, chunk) the chunk's max, sum and O.
struct Scratch {
  std::vector<KeyRange> range;      // [batch]
  AlignedVector<QueryPairs> query;  // [batch, heads]
  std::vector<float> scores;        // [batch, heads, stride]
  std::vector<float> chunkMax;      // [batch, heads, chunks]
  std::vector<float> chunkSum;      // [batch, heads, chunks]
  std::vector<float> chunkO;        // [batch, heads, chunks, 4 x 16]: O in the unpacks' order (Accumulators)
  AlignedVector<HeadMax> maxes;     // [tasks, streams per task, heads]: phase 1's running maxima
  AlignedVector<HeadSums> sums;     // [tasks, streams per task, heads]: phase 2's running sums
  I stride = 0, chunks = 0, blocks = 0;

  void size(I batch, I heads, I keys) {
    stride = (keys + 31) / 32 * 32;
    chunks = (keys + kChunk - 1) / kChunk;
    blocks = (batch + kStreamsPerTask - 1) / kStreamsPerTask;
    const auto grow = [](auto& v, I n) {
      if (v.size() < static_cast<std::size_t>(n)) v.resize(static_cast<std::size_t>(n));
    };
    grow(range, batch);
    grow(query, batch * heads);
    grow(scores, batch * heads * stride);
    grow(chunkMax, batch * heads * chunks);
    grow(chunkSum, batch * heads * chunks);
    grow(chunkO, batch * heads * chunks * 64);
    grow(maxes, chunks * blocks * kStreamsPerTask * heads);
    grow(sums, chunks * blocks * kStreamsPerTask * heads);
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

// Phase 1 of row i on a chunk: per head the scaled, masked scores of its
// keys, and their max. Per 16 keys every head in turn, so that the keys'
// and positions' rows (every head's, contiguous) are read in address order.
// Phase 0 of row i for stream b: its qu and qv rows as bf16 pairs, per head.
template <int Halves>
TXL_ROWS void queryPairs(const Call& c, Scratch& sc, I i, I b) {
  const RelAttentionArgs& a = *c.a;
  const float* qu = a.qu + i * a.quStrides.pos + b * a.quStrides.batch;
  const float* qv = a.qv + i * a.qvStrides.pos + b * a.qvStrides.batch;
  for (I h = 0; h < c.heads; ++h) {
    QueryPairs& q = sc.query[b * c.heads + h];
    pairsOf<Halves>(qu + h * a.quStrides.head, c.d, q.u);
    pairsOf<Halves>(qv + h * a.qvStrides.head, c.d, q.v);
  }
}

// Phase 1 of row i on the 16 keys from j0 of a chunk: per head the scaled,
// masked scores, and mx[h] = max(mx[h], them). Every head in turn, so that
// the keys' and positions' rows (every head's, contiguous) are read in
// address order.
template <int Halves>
TXL_ROWS void groupScores(const Call& c, Scratch& sc, I i, const Chunk& ch, I j0, HeadMax* mx) {
  const RelAttentionArgs& a = *c.a;
  const KeyRange& r = sc.range[ch.b];
  const I shift = c.q - 1 - i;
  const float* maskRow = a.mask + i * c.keys;
  const float* pad = a.pad ? a.pad + ch.b * c.keys : nullptr;
  const __m512 negInf = _mm512_set1_ps(kNegInf), zero = _mm512_setzero_ps(), scale = _mm512_set1_ps(a.scale);
  const auto* keys = static_cast<const std::uint16_t*>(a.k) + ch.b * a.kStrides.batch;
  const QueryPairs* query = sc.query.data() + ch.b * c.heads;
  float* s = sc.scores.data() + ch.b * c.heads * sc.stride;  // key j of head h at s[h * stride + j - first]
  {
    __mmask16 ok = laneMask(ch.j2 - j0);
    if (pad) ok = _mm512_mask_cmp_ps_mask(ok, _mm512_maskz_loadu_ps(ok, pad + j0), zero, _CMP_EQ_OQ);
    if (!r.band) ok = _mm512_mask_cmp_ps_mask(ok, _mm512_maskz_loadu_ps(ok, maskRow + j0), zero, _CMP_EQ_OQ);
    for (I h = 0; h < c.heads; ++h) {
      const std::uint16_t* kh = keys + h * a.kStrides.head;
      const std::uint16_t* rh = static_cast<const std::uint16_t*>(a.rt.data) + h * a.rt.head;
      if (const I jp = j0 + 16 * kAhead; jp + 16 + shift <= c.keys)  // the rows of a later group
        for (int n = 0; n < 16; ++n) {
          prefetchRow(kh + (jp + n) * a.kStrides.pos, c.d);
          prefetchRow(rh + (jp + n + shift) * a.rt.step, c.d);
        }
      __m512 acc[16];
#pragma GCC unroll 16
      for (int slot = 0; slot < 16; ++slot) {
        const I j = std::min(j0 + keyOfSlot(slot), ch.j2 - 1);  // lanes past the chunk: masked below
        __m512i x[2];
        loadRow<Halves>(c, kh + j * a.kStrides.pos, x);
        __m512 dot = _mm512_setzero_ps();
        for (int half = 0; half < Halves; ++half)
          dot = _mm512_dpbf16_ps(dot, (__m512bh)query[h].u[half], (__m512bh)x[half]);
        if (j + shift < c.keys) {
          loadRow<Halves>(c, rh + (j + shift) * a.rt.step, x);
          for (int half = 0; half < Halves; ++half)
            dot = _mm512_dpbf16_ps(dot, (__m512bh)query[h].v[half], (__m512bh)x[half]);
        }
        acc[slot] = dot;
      }
      const __m512 sv = _mm512_mask_mov_ps(negInf, ok, _mm512_mul_ps(reduce16(acc), scale));
      _mm512_storeu_ps(s + h * sc.stride + (j0 - r.first), sv);
      mx[h].v = _mm512_max_ps(mx[h].v, sv);
    }
  }
}

// O += p_j v_j + p_{j+1} v_{j+1}, pp = the pair (p_j, p_{j+1}) in bf16 and
// b = v_{j+1}'s row (zero past the chunk). o[half][0] lane 4c + t holds
// d = 32 half + 8c + t, o[half][1] lane 4c + t holds 32 half + 8c + 4 + t.
template <int Halves>
TXL_ROWS_INLINE void accumulatePair(const __m512i (&a)[2], const __m512i (&b)[2], __m512i pp, __m512 (&o)[2][2]) {
  for (int h = 0; h < Halves; ++h) {
    o[h][0] = _mm512_dpbf16_ps(o[h][0], (__m512bh)_mm512_unpacklo_epi16(a[h], b[h]), (__m512bh)pp);
    o[h][1] = _mm512_dpbf16_ps(o[h][1], (__m512bh)_mm512_unpackhi_epi16(a[h], b[h]), (__m512bh)pp);
  }
}

// Phase 2 of row i on a chunk: per head p = exp(s - max) over the chunk's
// keys, its sum, and its O = Σ p v; per 32 keys every head in turn (the
// values' rows in address order). Two sets of accumulators per head take
// alternate key pairs, so that two chains of pair products run.
// Phase 2's sums of one head over a chunk, before its first key: zero, and
// the row's max over all chunks.
TXL_ROWS void startSums(const Scratch& sc, const Chunk& ch, I heads, HeadSums* sums) {
  const KeyRange& r = sc.range[ch.b];
  for (I h = 0; h < heads; ++h) {
    const float* maxes = sc.chunkMax.data() + (ch.b * heads + h) * sc.chunks;
    sums[h].m = _mm512_set1_ps(*std::max_element(maxes, maxes + chunksOf(r)));
    sums[h].l = _mm512_setzero_ps();
    for (auto& set : sums[h].o)
      for (auto& half : set)
        for (__m512& x : half) x = _mm512_setzero_ps();
  }
}

// Phase 2's sums of every head after the chunk's last key, into the buffer.
TXL_ROWS void endSums(Scratch& sc, const Chunk& ch, I heads, const HeadSums* sums) {
  for (I h = 0; h < heads; ++h) {
    const I at = (ch.b * heads + h) * sc.chunks + ch.index;
    sc.chunkSum[at] = _mm512_reduce_add_ps(sums[h].l);
    float* chunkO = sc.chunkO.data() + at * 64;
    for (int half = 0; half < 2; ++half)
      for (int z = 0; z < 2; ++z)
        _mm512_storeu_ps(chunkO + 32 * half + 16 * z, _mm512_add_ps(sums[h].o[0][half][z], sums[h].o[1][half][z]));
  }
}

// Phase 2 of row i on the 32 keys from g of a chunk: per head p = exp(s -
// max) over them, added to its sum l and to its O = Σ p v; every head in
// turn (the values' rows in address order). Two sets of accumulators per
// head take alternate key pairs, so that two chains of pair products run.
template <int Halves>
TXL_ROWS void groupValues(const Call& c, Scratch& sc, const Chunk& ch, I g, HeadSums* sums) {
  const RelAttentionArgs& a = *c.a;
  const KeyRange& r = sc.range[ch.b];
  const __m512 negInf = _mm512_set1_ps(kNegInf);
  const __m512i none = _mm512_setzero_si512();
  const auto* values = static_cast<const std::uint16_t*>(a.v) + ch.b * a.vStrides.batch;
  {
    const I count = std::min<I>(32, ch.j2 - g);
    for (I h = 0; h < c.heads; ++h) {
      HeadSums& hs = sums[h];
      const float* s = sc.scores.data() + (ch.b * c.heads + h) * sc.stride;  // key j at s[j - first]
      alignas(64) std::uint32_t pairs[16];                                   // (p_{2m}, p_{2m+1}) of the 32 keys, bf16
      __m512 p[2];
      for (int z = 0; z < 2; ++z) {
        const __m512 sz = _mm512_mask_loadu_ps(negInf, laneMask(count - 16 * z), s + (g - r.first) + 16 * z);
        const __mmask16 ok = _mm512_cmp_ps_mask(sz, negInf, _CMP_NEQ_UQ);
        p[z] = _mm512_maskz_mov_ps(ok, expNonPositive16(_mm512_sub_ps(sz, hs.m)));
        hs.l = _mm512_add_ps(hs.l, p[z]);
      }
      _mm512_store_si512(pairs, (__m512i)_mm512_cvtne2ps_pbh(p[1], p[0]));
      const std::uint16_t* row = values + h * a.vStrides.head + g * a.vStrides.pos;
      if (const I jp = g + 32 * kAhead; jp + 32 <= c.keys)
        for (int n = 0; n < 32; ++n) prefetchRow(values + h * a.vStrides.head + (jp + n) * a.vStrides.pos, c.d);
      for (I e = 0; e < count; e += 2, row += 2 * a.vStrides.pos) {
        __m512i x[2], y[2] = {none, none};
        loadRow<Halves>(c, row, x);
        if (e + 1 < count) loadRow<Halves>(c, row + a.vStrides.pos, y);
        accumulatePair<Halves>(x, y, _mm512_set1_epi32(static_cast<int>(pairs[e / 2])), hs.o[(e / 2) & 1]);
      }
    }
  }
}

// Phase 3 of row i for (stream b, head h): O and l summed over the chunks in
// order, O put back in d's order, out = O / l (NaN: every key masked).
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
  __m512 o[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
  float l = 0.0f;
  for (I n = 0; n < chunks; ++n) {
    const float* chunkO = &sc.chunkO[(bh * sc.chunks + n) * 64];
    for (int z = 0; z < 4; ++z) o[z] = _mm512_add_ps(o[z], _mm512_loadu_ps(chunkO + 16 * z));
    l += sc.chunkSum[bh * sc.chunks + n];
  }
  // Output vector w of half `half` is [lo chunk 2w, hi 2w, lo 2w + 1, hi 2w + 1].
  alignas(64) std::int32_t index[2][16];
  for (int w = 0; w < 2; ++w)
    for (int lane = 0; lane < 16; ++lane) {
      const int part = lane / 4;
      index[w][lane] = (part % 2 ? 16 : 0) + 4 * (2 * w + part / 2) + lane % 4;
    }
  const __m512 inv = _mm512_set1_ps(1.0f / l);
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

// Phase 1's task t, per group of 16 keys.
template <int Halves>
TXL_ROWS void scoresTask(const Call& c, Scratch& sc, I i, I t) {
  const Task task(sc, c.batch, t);
  HeadMax* mx = sc.maxes.data() + t * kStreamsPerTask * c.heads;  // [stream of the block, head]
  for (I x = 0; x < (task.last - task.first) * c.heads; ++x) mx[x].v = _mm512_set1_ps(kNegInf);
  task.byGroups(sc, 16,
                [&](const Chunk& ch, I place, I j0) { groupScores<Halves>(c, sc, i, ch, j0, mx + place * c.heads); });
  for (I b = task.first; b < task.last; ++b)
    if (const Chunk ch = task.chunk(sc, b); ch.j1 < ch.j2)
      for (I h = 0; h < c.heads; ++h)
        sc.chunkMax[(b * c.heads + h) * sc.chunks + task.index] =
            _mm512_reduce_max_ps(mx[(b - task.first) * c.heads + h].v);
}

// Phase 2's task t, per group of 32 keys.
template <int Halves>
TXL_ROWS void valuesTask(const Call& c, Scratch& sc, I t) {
  const Task task(sc, c.batch, t);
  HeadSums* sums = sc.sums.data() + t * kStreamsPerTask * c.heads;  // [stream of the block, head]
  for (I b = task.first; b < task.last; ++b)
    if (const Chunk ch = task.chunk(sc, b); ch.j1 < ch.j2)
      startSums(sc, ch, c.heads, sums + (b - task.first) * c.heads);
  task.byGroups(sc, 32,
                [&](const Chunk& ch, I place, I g) { groupValues<Halves>(c, sc, ch, g, sums + place * c.heads); });
  for (I b = task.first; b < task.last; ++b)
    if (const Chunk ch = task.chunk(sc, b); ch.j1 < ch.j2) endSums(sc, ch, c.heads, sums + (b - task.first) * c.heads);
}

template <int Halves>
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
    for (I b = 0; b < c.batch; ++b) queryPairs<Halves>(c, sc, i, b);
      // A task is (chunk index, block of kStreamsPerTask streams): per group
      // of keys, the group of each stream of the block in turn (kStreamsPerTask).
      // Chunks past a stream's range are empty.
#pragma omp for schedule(dynamic)
    for (I t = 0; t < sc.chunks * sc.blocks; ++t) scoresTask<Halves>(c, sc, i, t);
#pragma omp for schedule(dynamic)
    for (I t = 0; t < sc.chunks * sc.blocks; ++t) valuesTask<Halves>(c, sc, t);
#pragma omp for schedule(static)
    for (I t = 0; t < c.batch * c.heads; ++t) writeRow(c, sc, i, t / c.heads, t % c.heads);
  }
}

}  // namespace

namespace detail {

void relAttentionRows(const RelAttentionArgs& a) {
  const RelAttentionShape& s = a.shape;
  TXL_CHECK(a.kvBf16 && a.path.table == PositionLayout::Bf16Rows && platform().avx512Bf16 && s.d <= kMaxD &&
                s.heads <= kMaxHeads,
            "rel_attention: the row-wise path needs bf16 keys, position rows and AVX512-BF16");
  Call c{&a, s.batch, s.heads, s.q, s.k, s.d, {wordMask(s.d), wordMask(s.d - 32)}};
  // Kept per calling thread across calls, so that a warm stream's segments
  // allocate nothing (tests/session/no_allocation_test.cpp); several
  // sessions on several threads each have their own.
  static thread_local Scratch scratch;
  scratch.size(s.batch, s.heads, s.k);
  if (s.d > 32) rows<2>(c, scratch);
  else rows<1>(c, scratch);
}

}  // namespace detail

}  // namespace txl::backend::kernels

#pragma GCC diagnostic pop
