// backend/kernels/rel_attention.cpp - relAttention(): Transformer-XL's attention of
// one layer in one pass (rel_attention.h), written for AVX-512 with a plain
// fallback for other CPUs (the same blocks and anchoring; its exp and sums
// round differently, within the tests' tolerance).
//
// Why: the unfused lowering (AC and BD as oneDNN matmuls into [H, q, k]
// score buffers, a rel-shift / mask / softmax pass, P·V, head-major copies
// of K and V) writes and reads every score and a copy of every key and
// value; here the scores live in registers and nothing of [q, k] size is
// written.
//
// Algorithm:
//   1. Once per call and stream (the mask is shared by every batch and head,
//      pad is per stream), per query
//      row: the first and last unmasked key (a scan of mask and pad from
//      each end) and whether the mask is 0 between them (a band: causal and
//      same-length masks; softmax then takes the lanes from the range and
//      pad and never reads the mask, which every head would read again).
//      Then tasks = (batch, head, block of <= 128 queries), on the OpenMP
//      team; per task row the running max m, sum l and output O.
//   2. Key blocks of 64 keys anchored at the last key: block t covers
//      [k - 64 (nb - t), ... + 64). Lanes j < 0 of the first block are masked
//      and never read. Blocks no row of the task uses are skipped.
//   3. Per block: K's 64 x d rows transposed into Kt[d][64] (16 x 16 AVX-512
//      transposes), V's rows copied into a dense Vb[64][64] (copyValues);
//      On a CPU with AVX512-BF16, bf16 keys and values take bf16 dot
//      products (vdpbf16ps: two products per lane, half the instructions of
//      f32 FMAs) instead: Kt2[d/2][64] holds the pairs (K[n][2c], K[n][2c+1])
//      (a 16 x 16 transpose of 32-bit lanes), against the task's qu rounded
//      to bf16 once per task; Vb2[32][d] holds the pairs (V[2m][c],
//      V[2m+1][c]) (keys outside the task's range zero), against the
//      probabilities rounded to bf16 in pairs of keys. Without AVX512-BF16,
//      bf16 keys and values are widened to f32 on the way (exact) and the
//      rest runs as for f32.
//      The next block's K and V rows are prefetched a share per row group,
//      one K and one V row at every 16th step of the group's BD loop.
//   4. Per group of MR <= 4 rows (skipped when none of them uses the block),
//      in two passes over the groups: scores and softmax of every group into
//      P[rows][64], then every group's P V, so that each pass's operands
//      (Kt 16 KiB + rt's window ~24 KiB; Vb 16 KiB) stay in the 48 KiB L1,
//      which all three together would overflow:
//      the MR x 64 scores in 16 zmm: BD first, as one MR x 80 window product
//      (5 rt loads per c shared by the rows, lanes outside rt masked, row r
//      then shifted by MR - 1 - r lanes with permutes; the rows' few lanes
//      of the 5th vector packed into one accumulator: 4 MR + 1 FMAs per c;
//      per-row unaligned rt loads would make it load-bound), then AC
//      into the same registers (broadcast qu, Kt rows); scale; mask and pad
//      to -inf; online softmax; then O = alpha O + P V over the keys the
//      group uses (Vb rows, NV = ceil(d / 16) zmm per row), in the second pass.
//   5. out = O / l, or NaN where every key of the row is masked.
//
// A key masked in front changes no lane of any other key, and a block every
// row skips changes no state, so keys prepended with pad = 1 (a padded
// warm-up plan) give the unpadded result bit for bit; P V never touches a
// key before a row group's first unmasked key, so their V may hold NaN.
//
// Timing: `OMP_NUM_THREADS=T build/tests/backend/txl_backend_tests "[.bench]"`
// runs the kernel alone on the three benchmark shapes (enwik8, WT103,
// small); `txlc bench ... --profile` shows it inside a segment. The figures,
// and the forms measured and not kept, are in docs/LOG.md.
#include "backend/kernels/rel_attention.h"

// GCC 12's AVX-512 intrinsics start from _mm512_undefined_ps(), which its
// -Wuninitialized reports once inlined (GCC bug 105593): silenced for them.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "backend/platform.h"
#include "backend/kernels/rel_attention_keys.h"
#include "backend/kernels/vector_exp.h"
#include "ir/bf16.h"
#include "ir/check.h"

namespace txl::backend::kernels {

namespace {

using I = std::int64_t;

constexpr I kKeyBlock = 64;     // keys per block: 4 zmm of scores per row
constexpr I kQueryBlock = 128;  // rows per task at most
constexpr I kMaxD = 64;
constexpr int kRowGroup = 4;  // MR: the BD window's 4 x 5 zmm and P V's 4 x 4 fit the 32 registers
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// The pointers of one (batch, head) and their position strides (in
// elements; k and v are f32 or bf16, kvSize bytes an element).
struct HeadView {
  const float *qu, *qv;
  const char *k, *v;
  const float* rt;  // 32-bit lanes of this head's table: f32 values, or bf16 pairs of d when rtPairs
  I quPos, qvPos, kPos, vPos, outPos;
  float* out;
  I rtDim;  // rt's stride from one of D's rows (or pairs of rows) to the next
  I kvSize;
  bool rtPairs;  // the table is PositionLayout::Bf16Pairs
  I rtSame;      // positions [0, rtSame) of rt hold position 0's values (PositionTable::same)
};

HeadView headView(const RelAttentionArgs& a, I b, I h) {
  const auto at = [&](auto* p, const RowStrides& s) { return p + b * s.batch + h * s.head; };
  const I kvSize = a.kvBf16 ? 2 : 4;
  const auto bytes = [&](const void* p, const RowStrides& s) {
    return static_cast<const char*>(p) + (b * s.batch + h * s.head) * kvSize;
  };
  return {at(a.qu, a.quStrides),
          at(a.qv, a.qvStrides),
          bytes(a.k, a.kStrides),
          bytes(a.v, a.vStrides),
          static_cast<const float*>(a.rt.data) + h * a.rt.head,
          a.quStrides.pos,
          a.qvStrides.pos,
          a.kStrides.pos,
          a.vStrides.pos,
          a.outStrides.pos,
          at(a.out, a.outStrides),
          a.rt.step,
          kvSize,
          a.path.table == PositionLayout::Bf16Pairs,
          a.rt.same};
}

// Element c of key or value row j (base: hv.k or hv.v, pos: its position stride), as f32.
float kvAt(const HeadView& hv, const char* base, I pos, I j, I c) {
  const I at = j * pos + c;
  return hv.kvSize == 2 ? ir::bf16ToFloat(reinterpret_cast<const std::uint16_t*>(base)[at])
                        : reinterpret_cast<const float*>(base)[at];
}

using detail::KeyRange;

bool keyMasked(const RelAttentionArgs& a, I i, I j) {
  return a.mask[i * a.shape.k + j] != 0.0f || (a.pad && a.pad[j] != 0.0f);
}

KeyRange unmaskedKeys(const RelAttentionArgs& a, I i) {
  const I k = a.shape.k;
  I first = 0, last = k - 1;
  while (first < k && keyMasked(a, i, first)) ++first;
  while (last > first && keyMasked(a, i, last)) --last;
  return first == k ? KeyRange{k, -1} : KeyRange{first, last};
}

// The union of the rows' ranges (as a hull).
KeyRange hull(const KeyRange* r, I rows) {
  KeyRange h{std::numeric_limits<I>::max(), -1};
  for (I i = 0; i < rows; ++i) {
    if (r[i].first > r[i].last) continue;
    h.first = std::min(h.first, r[i].first);
    h.last = std::max(h.last, r[i].last);
  }
  return h;
}

// The lanes [lo, hi) of the block starting at j0 that `r` touches (lo >= hi: none).
struct LaneRange {
  I lo, hi;
};

LaneRange lanesOf(const KeyRange& r, I j0) {
  if (r.first > r.last) return {0, 0};  // no key (hull() of no row has first = INT64_MAX)
  return {std::max<I>(r.first - j0, 0), std::min<I>(r.last - j0 + 1, kKeyBlock)};
}

struct Task {
  I b, h, i0, rows;
};

// Query blocks per (batch, head): at most kQueryBlock rows each, and enough
// tasks for every thread when the rows allow it.
I queryBlocks(const RelAttentionShape& s, int threads) {
  const I heads = s.batch * s.heads;
  const I byRows = (s.q + kQueryBlock - 1) / kQueryBlock;
  const I forThreads = std::min<I>((threads + heads - 1) / heads, (s.q + kRowGroup - 1) / kRowGroup);
  return std::max(byRows, forThreads);
}

Task taskAt(const RelAttentionShape& s, I blocks, I t) {
  const I rowsPer = (s.q + blocks - 1) / blocks;
  const I blk = t % blocks, bh = t / blocks;
  const I i0 = blk * rowsPer;
  return {bh / s.heads, bh % s.heads, i0, std::max<I>(std::min(rowsPer, s.q - i0), 0)};
}

// Per-task running state, on the stack of the thread running the task.
struct RowState {
  alignas(64) float o[kQueryBlock * kMaxD];
  alignas(64) std::uint32_t qu2[kQueryBlock][kMaxD / 2];  // the bf16 path's qu as bf16 pairs (quPairs)
  alignas(64) std::uint32_t qv2[kQueryBlock][kMaxD / 2];  // and qv, when it reads a bf16-pair table
  alignas(64) float lanesL[kQueryBlock][16];              // the AVX-512 path's l, as 16 partial sums per row
  float bdSame[kQueryBlock];  // the AVX-512 path's BD over the positions below rt.same (sameScores)
  float m[kQueryBlock], l[kQueryBlock];
  KeyRange keys[kQueryBlock];
};

void initRows(const Task& t, const KeyRange* rowKeys, RowState& st) {
  for (I r = 0; r < t.rows; ++r) {
    st.m[r] = kNegInf;
    st.l[r] = 0.0f;
    st.keys[r] = rowKeys[t.i0 + r];
  }
  std::fill(st.o, st.o + t.rows * kMaxD, 0.0f);
  std::fill(&st.lanesL[0][0], &st.lanesL[0][0] + t.rows * 16, 0.0f);
}

I firstBlockStart(I k) {
  const I nb = (k + kKeyBlock - 1) / kKeyBlock;
  return k - kKeyBlock * nb;
}

// ---------------------------------------------------------------- portable

// One row's step over the block at j0: scores, online softmax, O update.
void portableRowBlock(const RelAttentionArgs& a, const HeadView& hv, I i, I j0, LaneRange lanes, RowState& st, I r) {
  const I q = a.shape.q, k = a.shape.k, d = a.shape.d;
  float s[kKeyBlock];
  float blockMax = kNegInf;
  for (I n = 0; n < kKeyBlock; ++n) {
    const I j = j0 + n;
    s[n] = kNegInf;
    if (j < 0 || keyMasked(a, i, j)) continue;
    float acc = 0.0f;
    const I src = j + q - 1 - i;
    if (src < k)
      for (I c = 0; c < d; ++c) acc = std::fma(hv.qv[i * hv.qvPos + c], hv.rt[c * hv.rtDim + src], acc);
    for (I c = 0; c < d; ++c) acc = std::fma(hv.qu[i * hv.quPos + c], kvAt(hv, hv.k, hv.kPos, j, c), acc);
    s[n] = a.scale * acc;
    blockMax = std::max(blockMax, s[n]);
  }
  if (blockMax == kNegInf) return;
  const float mNew = std::max(st.m[r], blockMax);
  const float alpha = expNonPositive(st.m[r] - mNew);
  float sum = 0.0f;
  for (I n = 0; n < kKeyBlock; ++n) {
    s[n] = expNonPositive(s[n] - mNew);
    sum += s[n];
  }
  st.m[r] = mNew;
  st.l[r] = st.l[r] * alpha + sum;
  float* o = st.o + r * kMaxD;
  for (I c = 0; c < d; ++c) o[c] *= alpha;
  for (I n = lanes.lo; n < lanes.hi; ++n)
    for (I c = 0; c < d; ++c) o[c] = std::fma(s[n], kvAt(hv, hv.v, hv.vPos, j0 + n, c), o[c]);
}

void writeRows(const HeadView& hv, const Task& t, I d, const RowState& st) {
  for (I r = 0; r < t.rows; ++r) {
    float* out = hv.out + (t.i0 + r) * hv.outPos;
    for (I c = 0; c < d; ++c)
      out[c] = st.m[r] == kNegInf ? std::numeric_limits<float>::quiet_NaN() : st.o[r * kMaxD + c] / st.l[r];
  }
}

void portableTask(const RelAttentionArgs& a, const Task& t, const KeyRange* rowKeys) {
  RowState st;
  initRows(t, rowKeys, st);
  const HeadView hv = headView(a, t.b, t.h);
  for (I j0 = firstBlockStart(a.shape.k); j0 < a.shape.k; j0 += kKeyBlock)
    for (I r = 0; r < t.rows; ++r) {
      const LaneRange lanes = lanesOf(st.keys[r], j0);
      if (lanes.lo < lanes.hi) portableRowBlock(a, hv, t.i0 + r, j0, lanes, st, r);
    }
  writeRows(hv, t, a.shape.d, st);
}

// ---------------------------------------------------------------- AVX-512

#define TXL_AVX512 __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,fma")))
// The task and score functions, which the bf16-key path (vdpbf16ps) shares:
// the f32 path runs them on CPUs without AVX512-BF16 and executes no bf16
// instruction (bf16 intrinsics appear in the bf16 helpers only).
#define TXL_AVX512_BF16 __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx512bf16,fma")))
#define TXL_AVX512_BF16_INLINE \
  __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx512bf16,fma"), always_inline)) inline
// One GNU attribute list (clang takes no [[...]] after __attribute__).
#define TXL_AVX512_INLINE __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,fma"), always_inline)) inline

TXL_AVX512_INLINE __mmask16 laneMask(I lo, I hi) {  // lanes [lo, hi) of 16, clamped
  lo = std::clamp<I>(lo, 0, 16), hi = std::clamp<I>(hi, 0, 16);
  return lo >= hi ? 0 : static_cast<__mmask16>(((1u << (hi - lo)) - 1u) << lo);
}

// r[c] = column c of the 16 x 16 tile whose rows are r[0..15].
TXL_AVX512_INLINE void transpose16(__m512 (&r)[16]) {
  __m512 t[16];
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
  }
  __m512 u[16];  // u[4 g + e], chunk c: rows 4g..4g+3 of element 4c + e
  for (int g = 0; g < 4; ++g) {
    const __m512d a = _mm512_castps_pd(t[4 * g]), b = _mm512_castps_pd(t[4 * g + 2]);
    const __m512d c = _mm512_castps_pd(t[4 * g + 1]), e = _mm512_castps_pd(t[4 * g + 3]);
    u[4 * g + 0] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, b));
    u[4 * g + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, b));
    u[4 * g + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(c, e));
    u[4 * g + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(c, e));
  }
  for (int e = 0; e < 4; ++e) {
    const __m512 v0 = _mm512_shuffle_f32x4(u[e], u[4 + e], 0x88), v1 = _mm512_shuffle_f32x4(u[e], u[4 + e], 0xdd);
    const __m512 w0 = _mm512_shuffle_f32x4(u[8 + e], u[12 + e], 0x88);
    const __m512 w1 = _mm512_shuffle_f32x4(u[8 + e], u[12 + e], 0xdd);
    r[e] = _mm512_shuffle_f32x4(v0, w0, 0x88);
    r[4 + e] = _mm512_shuffle_f32x4(v1, w1, 0x88);
    r[8 + e] = _mm512_shuffle_f32x4(v0, w0, 0xdd);
    r[12 + e] = _mm512_shuffle_f32x4(v1, w1, 0xdd);
  }
}

// The lanes `cols` of 16 f32 at p, or of 16 bf16 at p widened (exactly: a bf16 is an f32's upper half).
template <typename T>
TXL_AVX512_INLINE __m512 loadRow(__mmask16 cols, const T* p) {
  if constexpr (std::is_same_v<T, float>) {
    return _mm512_maskz_loadu_ps(cols, p);
  } else {
    const __m512i wide = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(cols, p));
    return _mm512_castsi512_ps(_mm512_slli_epi32(wide, 16));
  }
}

// kt[c][n] = K[j0 + n][c] for the 16-key tiles meeting lanes [lanes.lo, lanes.hi);
// keys j < 0 are zero and not read.
template <typename T>
TXL_AVX512 void transposeKeysOf(const HeadView& hv, I d, I j0, LaneRange lanes, float* kt) {
  const T* keys = reinterpret_cast<const T*>(hv.k);
  for (I n0 = lanes.lo / 16 * 16; n0 < lanes.hi; n0 += 16)
    for (I c0 = 0; c0 < d; c0 += 16) {
      const __mmask16 cols = laneMask(0, d - c0);
      __m512 r[16];
      for (I n = 0; n < 16; ++n) {
        const I j = j0 + n0 + n;
        r[n] = j < 0 ? _mm512_setzero_ps() : loadRow(cols, keys + j * hv.kPos + c0);
      }
      transpose16(r);
      for (I c = 0; c < std::min<I>(16, d - c0); ++c) _mm512_store_ps(kt + (c0 + c) * kKeyBlock + n0, r[c]);
    }
}

TXL_AVX512 void transposeKeys(const HeadView& hv, I d, I j0, LaneRange lanes, float* kt) {
  if (hv.kvSize == 2) transposeKeysOf<std::uint16_t>(hv, d, j0, lanes, kt);
  else transposeKeysOf<float>(hv, d, j0, lanes, kt);
}

// kt2[c][n] = the bf16 pair (K[j0 + n][2c], K[j0 + n][2c + 1]) (0 beyond d)
// for bf16 keys: a bf16 row of 32 elements is 16 pairs, so the 16 x 16
// transpose of 32-bit lanes gives the pair layout vdpbf16ps reads.
TXL_AVX512 void transposeKeyPairs(const HeadView& hv, I d, I j0, LaneRange lanes, std::uint32_t* kt2) {
  const std::uint16_t* keys = reinterpret_cast<const std::uint16_t*>(hv.k);
  const I pairs = (d + 1) / 2;
  for (I n0 = lanes.lo / 16 * 16; n0 < lanes.hi; n0 += 16)
    for (I c0 = 0; c0 < d; c0 += 32) {
      const I width = std::min<I>(32, d - c0);
      const __mmask32 cols = width == 32 ? ~__mmask32(0) : static_cast<__mmask32>((1u << width) - 1u);
      __m512 r[16];
      for (I n = 0; n < 16; ++n) {
        const I j = j0 + n0 + n;
        r[n] =
            j < 0 ? _mm512_setzero_ps() : _mm512_castsi512_ps(_mm512_maskz_loadu_epi16(cols, keys + j * hv.kPos + c0));
      }
      transpose16(r);
      for (I c = 0; c < std::min<I>(16, pairs - c0 / 2); ++c)
        _mm512_store_ps(reinterpret_cast<float*>(kt2 + (c0 / 2 + c) * kKeyBlock + n0), r[c]);
    }
}

// vb[n][0 .. 16 NV) = V[j0 + n][0 .. d), zero beyond d, for the keys of lanes
// [lanes.lo, lanes.hi): P V then reads 16 KiB of L1, aligned and unmasked.
// Read in place, V rows a multiple of 4 KiB apart (enwik8: 4 KiB) fall into
// the same few L1 sets, so each row group would re-fetch them from L2 and
// P V would fall well below the AC loop's FMA rate; with vb it runs at
// about that rate. The 4 rows' loads are issued before their stores.
template <typename T>
TXL_AVX512 void copyValuesOf(const HeadView& hv, I d, I j0, LaneRange lanes, float* vb) {
  const T* values = reinterpret_cast<const T*>(hv.v);
  __mmask16 cols[4];
  for (int v = 0; v < 4; ++v) cols[v] = laneMask(0, d - 16 * v);
  const I nv = (d + 15) / 16;
  I n = lanes.lo;
  for (; n + 4 <= lanes.hi; n += 4) {  // 16 loads, then 16 stores
    __m512 x[4][4];
    for (int r = 0; r < 4; ++r)
      for (int v = 0; v < 4; ++v)
        if (v < nv) x[r][v] = loadRow(cols[v], values + (j0 + n + r) * hv.vPos + 16 * v);
    for (int r = 0; r < 4; ++r)
      for (int v = 0; v < 4; ++v)
        if (v < nv) _mm512_store_ps(vb + (n + r) * kMaxD + 16 * v, x[r][v]);
  }
  for (; n < lanes.hi; ++n)
    for (int v = 0; v < nv; ++v)
      _mm512_store_ps(vb + n * kMaxD + 16 * v, loadRow(cols[v], values + (j0 + n) * hv.vPos + 16 * v));
}

TXL_AVX512 void copyValues(const HeadView& hv, I d, I j0, LaneRange lanes, float* vb) {
  if (hv.kvSize == 2) copyValuesOf<std::uint16_t>(hv, d, j0, lanes, vb);
  else copyValuesOf<float>(hv, d, j0, lanes, vb);
}

// The K and V rows [j, j + count) of the next key block that one row group
// prefetches (its share: the block's rows spread over the groups).
struct NextRows {
  I j = 0, count = 0;
};

// The fixed facts of one (task, key block) that every row group reads.
struct BlockView {
  const HeadView* hv;
  I q, k, d, j0;
  float scale;
  const float* mask;         // mask row 0 at the block: mask + j0
  const float* kt;           // [d][64]
  const std::uint32_t* kt2;  // [d / 2][64] bf16 pairs (transposeKeyPairs), on the bf16-key path
  const float* vb;           // [64][kMaxD]: the block's V rows (copyValues)
  const std::uint32_t* vb2;  // [32][kMaxD] bf16 pairs of V rows (copyValuePairs), on the bf16 path
  __mmask16 keyOk[4];        // lanes with j >= 0 and pad[j] == 0
  NextRows next;             // the current row group's share of the next block
};

// vb2[m][c] = the bf16 pair (V[j0 + 2m][c], V[j0 + 2m + 1][c]) for the pairs
// meeting lanes [lanes.lo, lanes.hi), c < 16 NV; a key outside the lanes (or
// before the first key) is zero, so the pair products of a lane range that
// starts or ends mid-pair read a zero, never a value no row uses (which may
// be NaN: rel_attention.h).
TXL_AVX512 void copyValuePairs(const HeadView& hv, I d, I j0, LaneRange lanes, std::uint32_t* vb2) {
  const std::uint16_t* values = reinterpret_cast<const std::uint16_t*>(hv.v);
  const I halves = (d + 31) / 32;  // zmm of 32 bf16 per row
  __mmask32 cols[2];
  for (int h = 0; h < 2; ++h) {
    const I width = std::clamp<I>(d - 32 * h, 0, 32);
    cols[h] = width == 32 ? ~__mmask32(0) : static_cast<__mmask32>((1u << width) - 1u);
  }
  // Word indices of (a[i], b[i]) for 16 i from 0 and from 16 (b's words at 32..63).
  alignas(64) std::uint16_t lowIdx[32], highIdx[32];
  for (int i = 0; i < 16; ++i) {
    lowIdx[2 * i] = std::uint16_t(i), lowIdx[2 * i + 1] = std::uint16_t(32 + i);
    highIdx[2 * i] = std::uint16_t(16 + i), highIdx[2 * i + 1] = std::uint16_t(48 + i);
  }
  const __m512i lo = _mm512_load_si512(lowIdx), hi = _mm512_load_si512(highIdx);
  for (I m = lanes.lo / 2; m < (lanes.hi + 1) / 2; ++m)
    for (I h = 0; h < halves; ++h) {
      __m512i ab[2];
      for (I e = 0; e < 2; ++e) {
        const I n = 2 * m + e, j = j0 + n;
        ab[e] = n < lanes.lo || n >= lanes.hi || j < 0
                    ? _mm512_setzero_si512()
                    : _mm512_maskz_loadu_epi16(cols[h], values + j * hv.vPos + 32 * h);
      }
      const __m512i a = ab[0], b = ab[1];
      _mm512_store_si512(vb2 + m * kMaxD + 32 * h, _mm512_permutex2var_epi16(a, lo, b));
      _mm512_store_si512(vb2 + m * kMaxD + 32 * h + 16, _mm512_permutex2var_epi16(a, hi, b));
    }
}

// Rows [j1, j2) of a [keys, d] operand (f32 or bf16: `size` bytes an
// element) at position stride `pos` into the caches ahead of use (K and V
// rows are pages apart: no hardware prefetch).
TXL_AVX512_INLINE void prefetchRows(const char* base, I size, I pos, I d, I j1, I j2) {
  for (I j = j1; j < j2; ++j)
    for (I c = 0; c < d * size; c += 64) __builtin_prefetch(base + j * pos * size + c);
}

// Share g of G of the K and V rows of the next block (at jn): row group g's.
NextRows nextShare(I k, I jn, I g, I G) {
  const I j1 = std::min(jn + kKeyBlock * g / G, k), j2 = std::min(jn + kKeyBlock * (g + 1) / G, k);
  return {j1, std::max<I>(j2 - j1, 0)};
}

// Inside BD's loop over c: at every 16th c one K row and one V row of the
// group's share of the next block. Spread through the FMAs, the misses
// overlap them; issued in one burst per group they would stall it.
TXL_AVX512_INLINE void prefetchInLoop(const BlockView& bv, I c) {
  if ((c & 15) != 0 || (c >> 4) >= bv.next.count) return;
  const HeadView& hv = *bv.hv;
  const I j = bv.next.j + (c >> 4);
  prefetchRows(hv.k, hv.kvSize, hv.kPos, bv.d, j, j + 1);
  prefetchRows(hv.v, hv.kvSize, hv.vPos, bv.d, j, j + 1);
}

// Rows [from, count) of the share at once: those BD's loop had no slot for
// (from = d / 16 slots), or all of a group that skips the block (from = 0).
TXL_AVX512_INLINE void prefetchShare(const BlockView& bv, I from) {
  const HeadView& hv = *bv.hv;
  prefetchRows(hv.k, hv.kvSize, hv.kPos, bv.d, bv.next.j + from, bv.next.j + bv.next.count);
  prefetchRows(hv.v, hv.kvSize, hv.vPos, bv.d, bv.next.j + from, bv.next.j + bv.next.count);
}

// Keeps x in registers: without it GCC folds a load into each row's FMA
// (vfmadd231ps mem), so one unaligned, line-splitting rt load became MR.
TXL_AVX512_INLINE void pinRegisters(__m512 (&x)[5]) {
  __m512 x0 = x[0], x1 = x[1], x2 = x[2], x3 = x[3], x4 = x[4];
  asm("" : "+v"(x0), "+v"(x1), "+v"(x2), "+v"(x3), "+v"(x4));
  x[0] = x0, x[1] = x1, x[2] = x2, x[3] = x3, x[4] = x4;
}

// The lanes of the packed 5th window vector (bdTile): row r < MR - 1 needs
// lanes [0, MR - 1 - r) of its 5th vector, kept at lanes off(r) + .. of one
// accumulator, off(r) = Σ_{r' < r} (MR - 1 - r').
template <int MR>
constexpr int packedOffset(int r) {
  int off = 0;
  for (int q = 0; q < r; ++q) off += MR - 1 - q;
  return off;
}

// acc + b x per lane: an f32 FMA, or with Pairs a bf16 pair product (b and x
// hold bf16 pairs: acc + b.lo x.lo + b.hi x.hi, vdpbf16ps).
template <bool Pairs>
TXL_AVX512_BF16_INLINE __m512 madd(__m512 b, __m512 x, __m512 acc) {
  if constexpr (Pairs) return _mm512_dpbf16_ps(acc, (__m512bh)b, (__m512bh)x);
  else return _mm512_fmadd_ps(b, x, acc);
}

// One c of bdTile (a pair of d when Pairs): x = rt's 5 window vectors at c,
// b[r] = row r's qv at c, broadcast.
template <int MR, bool Pairs>
TXL_AVX512_BF16_INLINE void bdStep(__m512 (&x)[5], const __m512 (&b)[MR], __m512i pidx, const __mmask16 (&seg)[MR],
                                   __m512 (&w)[MR][4], __m512& w5) {
  pinRegisters(x);
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r)
    for (int z = 0; z < 4; ++z) w[r][z] = madd<Pairs>(b[r], x[z], w[r][z]);
  if constexpr (MR > 1) {
    __m512 b5 = b[0];
    for (int r = 1; r + 1 < MR; ++r) b5 = _mm512_mask_mov_ps(b5, seg[r], b[r]);
    w5 = madd<Pairs>(b5, _mm512_permutexvar_ps(pidx, x[4]), w5);
  }
}

// Row r's qv at c, broadcast: an f32, or with Pairs the bf16 pair c of
// st.qv2 (the rows' qv as pairs, quPairs).
template <int MR, bool Pairs>
TXL_AVX512_BF16_INLINE void qvAt(const BlockView& bv, const RowState& st, I i0, I r0, I c, __m512 (&b)[MR]) {
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r)
    b[r] = Pairs ? _mm512_castsi512_ps(_mm512_set1_epi32(static_cast<int>(st.qv2[r0 + r][c])))
                 : _mm512_set1_ps(bv.hv->qv[(i0 + r) * bv.hv->qvPos + c]);
}

// s[r] = BD of row i0 + r: the window W[r][w] = qv_i · rt[:, srcW + w],
// srcW = j0 + q - i0 - MR, is one plain MR x 80 product (5 rt loads per c
// for all rows, instead of 4 unaligned loads per row), and row r's lane n
// is window lane n + MR - 1 - r (a register shift by a constant). Window
// lanes outside rt's [0, k) are 0 and not read. Of the 5th vector, row r
// uses MR - 1 - r lanes only: those of all rows are packed into one
// accumulator (x[4]'s lanes permuted, qv blended per lane), 4 MR + 1 FMAs
// per c instead of 5 MR; every lane keeps its own FMA chain, so the sums
// are the same bits. With Pairs the table is in bf16 pairs of d
// (PositionLayout::Bf16Pairs) and each step takes a pair of d.
template <int MR, bool Pairs>
TXL_AVX512_BF16_INLINE void bdTile(const BlockView& bv, const RowState& st, I i0, I r0, __m512 (&s)[MR][4]) {
  constexpr int kW = 5;  // 80 lanes >= 64 + MR - 1
  const HeadView& hv = *bv.hv;
  __m512 w[MR][4], w5 = _mm512_setzero_ps();
  for (int r = 0; r < MR; ++r)
    for (int z = 0; z < 4; ++z) w[r][z] = _mm512_setzero_ps();
  alignas(64) std::int32_t pidxLanes[16] = {};  // lane of x[4] per packed lane
  __mmask16 seg[MR] = {};                       // the packed lanes of row r
  for (int r = 0; r + 1 < MR; ++r)
    for (int m = 0; m < MR - 1 - r; ++m) {
      pidxLanes[packedOffset<MR>(r) + m] = m;
      seg[r] |= static_cast<__mmask16>(1u << (packedOffset<MR>(r) + m));
    }
  const __m512i pidx = _mm512_load_si512(pidxLanes);
  const I srcW = bv.j0 + bv.q - i0 - MR;
  // 32-bit lanes of the table: f32 values, or bf16 pairs of d.
  const float* rt = hv.rt + srcW;
  const I rowStride = hv.rtDim, steps = Pairs ? (bv.d + 1) / 2 : bv.d;
  __m512 x[kW], b[MR];
  if (srcW >= 0 && srcW + 16 * kW <= bv.k) {
    for (I c = 0; c < steps; ++c, rt += rowStride) {
      prefetchInLoop(bv, c);
      for (int z = 0; z < kW; ++z) x[z] = _mm512_loadu_ps(rt + 16 * z);
      qvAt<MR, Pairs>(bv, st, i0, r0, c, b);
      bdStep<MR, Pairs>(x, b, pidx, seg, w, w5);
    }
  } else {
    __mmask16 in[kW];
    for (int z = 0; z < kW; ++z) in[z] = laneMask(-srcW - 16 * z, bv.k - srcW - 16 * z);
    for (I c = 0; c < steps; ++c, rt += rowStride) {
      prefetchInLoop(bv, c);
      for (int z = 0; z < kW; ++z) x[z] = _mm512_maskz_loadu_ps(in[z], rt + 16 * z);
      qvAt<MR, Pairs>(bv, st, i0, r0, c, b);
      bdStep<MR, Pairs>(x, b, pidx, seg, w, w5);
    }
  }
  prefetchShare(bv, (steps + 15) / 16);
  const __m512i iota = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
  const __m512i sixteen = _mm512_set1_epi32(16);
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) {  // lane n of s[r][z]: lane n + MR - 1 - r of w[r][z], w[r][z + 1]
    const __m512i idx = _mm512_add_epi32(iota, _mm512_set1_epi32(MR - 1 - r));
    for (int z = 0; z < 3; ++z) s[r][z] = _mm512_permutex2var_ps(w[r][z], idx, w[r][z + 1]);
    // z = 3: lanes n + MR - 1 - r >= 16 come from the packed 5th vector, at off(r) + n + MR - 1 - r - 16
    const __mmask16 wrap = _mm512_cmpge_epi32_mask(idx, sixteen);
    const __m512i idx3 = _mm512_mask_add_epi32(idx, wrap, idx, _mm512_set1_epi32(packedOffset<MR>(r)));
    s[r][3] = _mm512_permutex2var_ps(w[r][3], idx3, w5);
  }
}

// s[r][z] += qu_i · Kt[:, 16 z ..] for rows i = i0 + r.
template <int MR>
TXL_AVX512_INLINE void acTile(const BlockView& bv, I i0, __m512 (&s)[MR][4]) {
  const HeadView& hv = *bv.hv;
  const float* qu = hv.qu + i0 * hv.quPos;
  for (I c = 0; c < bv.d; ++c) {
    const float* ktc = bv.kt + c * kKeyBlock;
    const __m512 k0 = _mm512_load_ps(ktc), k1 = _mm512_load_ps(ktc + 16);
    const __m512 k2 = _mm512_load_ps(ktc + 32), k3 = _mm512_load_ps(ktc + 48);
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      const __m512 b = _mm512_set1_ps(qu[r * hv.quPos + c]);
      s[r][0] = _mm512_fmadd_ps(b, k0, s[r][0]);
      s[r][1] = _mm512_fmadd_ps(b, k1, s[r][1]);
      s[r][2] = _mm512_fmadd_ps(b, k2, s[r][2]);
      s[r][3] = _mm512_fmadd_ps(b, k3, s[r][3]);
    }
  }
}

// acTile for bf16 keys: s[r][z] += Σ_c qu2_r[c] · Kt2[c][16 z ..], one
// vdpbf16ps per pair of d (qu2: the rows' qu as bf16 pairs, quPairs).
template <int MR>
TXL_AVX512_BF16_INLINE void acTilePairs(const BlockView& bv, const RowState& st, I r0, __m512 (&s)[MR][4]) {
  const I pairs = (bv.d + 1) / 2;
  for (I c = 0; c < pairs; ++c) {
    const std::uint32_t* ktc = bv.kt2 + c * kKeyBlock;
    __m512bh k[4];
    for (int z = 0; z < 4; ++z) k[z] = (__m512bh)_mm512_load_si512(ktc + 16 * z);
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      const __m512bh b = (__m512bh)_mm512_set1_epi32(static_cast<int>(st.qu2[r0 + r][c]));
      for (int z = 0; z < 4; ++z) s[r][z] = _mm512_dpbf16_ps(s[r][z], b, k[z]);
    }
  }
}

// pairs[r] = row i0 + r of a [q, d] operand (position stride pos) rounded to
// bf16, as pairs (2c, 2c + 1) (0 beyond d).
TXL_AVX512_BF16 void rowPairs(const float* x, I pos, I i0, I rows, I d, std::uint32_t (*pairs)[kMaxD / 2]) {
  for (I r = 0; r < rows; ++r) {
    const float* row = x + (i0 + r) * pos;
    for (I c0 = 0; c0 < kMaxD; c0 += 32) {
      const __m512 lo = _mm512_maskz_loadu_ps(laneMask(0, d - c0), row + c0);
      const __m512 hi = _mm512_maskz_loadu_ps(laneMask(0, d - c0 - 16), row + c0 + 16);
      _mm512_store_si512(pairs[r] + c0 / 2, (__m512i)_mm512_cvtne2ps_pbh(hi, lo));
    }
  }
}

// The task's qu (and qv when BD reads the table in bf16 pairs) as bf16
// pairs: once per task, read by every key block.
TXL_AVX512_BF16 void quPairs(const HeadView& hv, const Task& t, I d, RowState& st) {
  rowPairs(hv.qu, hv.quPos, t.i0, t.rows, d, st.qu2);
  if (hv.rtPairs) rowPairs(hv.qv, hv.qvPos, t.i0, t.rows, d, st.qv2);
}

// Row i's scores -> probabilities p (in place) against its new max; updates
// m and the row's 16 partial sums l (summed once, at the end). Returns alpha,
// the factor of the old O and l (1 when the block leaves the row unchanged).
TXL_AVX512_INLINE float softmaxRow(const BlockView& bv, I i, const KeyRange& keys, __m512 (&s)[4], float& m,
                                   __m512& l) {
  const float* maskRow = bv.mask + i * bv.k;
  const __m512 negInf = _mm512_set1_ps(kNegInf);
  __m512 mx = negInf;
  __mmask16 ok[4];
  for (int z = 0; z < 4; ++z) {
    if (keys.band) {
      const I lane0 = bv.j0 + 16 * z;
      ok[z] = bv.keyOk[z] & laneMask(keys.first - lane0, keys.last + 1 - lane0);
    } else {
      const __m512 mk = _mm512_maskz_loadu_ps(bv.keyOk[z], maskRow + 16 * z);
      ok[z] = _mm512_mask_cmp_ps_mask(bv.keyOk[z], mk, _mm512_setzero_ps(), _CMP_EQ_OQ);
    }
    s[z] = bv.scale == 1.0f ? s[z] : _mm512_mul_ps(s[z], _mm512_set1_ps(bv.scale));
    mx = _mm512_mask_max_ps(mx, ok[z], mx, s[z]);
  }
  const float mNew = std::max(m, _mm512_reduce_max_ps(mx));
  if (mNew == kNegInf) {
    for (int z = 0; z < 4; ++z) s[z] = _mm512_setzero_ps();
    return 1.0f;
  }
  const float alpha = mNew == m ? 1.0f : expNonPositive(m - mNew);
  const __m512 mv = _mm512_set1_ps(mNew);
  __m512 sum = _mm512_setzero_ps();
  for (int z = 0; z < 4; ++z) {
    s[z] = _mm512_maskz_mov_ps(ok[z], expNonPositive16(_mm512_sub_ps(s[z], mv)));
    sum = _mm512_add_ps(sum, s[z]);
  }
  m = mNew;
  l = _mm512_fmadd_ps(l, _mm512_set1_ps(alpha), sum);
  return alpha;
}

// O[r] = alpha[r] O[r] + Σ_{n in lanes} p[r][n] V[j0 + n] for MR rows, NV zmm of d.
template <int MR, int NV>
TXL_AVX512_INLINE void accumulatePV(const BlockView& bv, const float (*p)[kKeyBlock], const float* alpha,
                                    LaneRange lanes, float* o) {
  __m512 acc[MR][NV];
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v)
      acc[r][v] = _mm512_mul_ps(_mm512_load_ps(o + r * kMaxD + 16 * v), _mm512_set1_ps(alpha[r]));
  const float* vRow = bv.vb + lanes.lo * kMaxD;
  for (I n = lanes.lo; n < lanes.hi; ++n, vRow += kMaxD) {
    __m512 vv[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) vv[v] = _mm512_load_ps(vRow + 16 * v);
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      const __m512 b = _mm512_set1_ps(p[r][n]);
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_fmadd_ps(b, vv[v], acc[r][v]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) _mm512_store_ps(o + r * kMaxD + 16 * v, acc[r][v]);
}

// accumulatePV for bf16 values: one vdpbf16ps per pair of keys (p2: the
// rows' probabilities as bf16 pairs of keys; vb2: copyValuePairs).
template <int MR, int NV>
TXL_AVX512_BF16_INLINE void accumulatePVPairs(const BlockView& bv, const std::uint32_t (*p2)[kKeyBlock / 2],
                                              const float* alpha, LaneRange lanes, float* o) {
  __m512 acc[MR][NV];
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v)
      acc[r][v] = _mm512_mul_ps(_mm512_load_ps(o + r * kMaxD + 16 * v), _mm512_set1_ps(alpha[r]));
  for (I m = lanes.lo / 2; m < (lanes.hi + 1) / 2; ++m) {
    const std::uint32_t* vRow = bv.vb2 + m * kMaxD;
    __m512bh vv[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) vv[v] = (__m512bh)_mm512_load_si512(vRow + 16 * v);
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      const __m512bh b = (__m512bh)_mm512_set1_epi32(static_cast<int>(p2[r][m]));
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_dpbf16_ps(acc[r][v], b, vv[v]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) _mm512_store_ps(o + r * kMaxD + 16 * v, acc[r][v]);
}

// Phase 1 for one group of MR rows (task rows r0..r0+MR) over one key block:
// scores, online softmax; p[r0 + r] = the probabilities (p2[r0 + r] as bf16
// pairs of keys when Pairs), alpha[r0 + r] the factor of the row's old O.
// st.bdSame[r] = BD of the task's row r at a position below rt.same: the
// chain bdTile runs in each lane (the same products in the same order from
// 0, so the same bits) with position 0's values of the table. A tile whose
// positions all lie below rt.same (distances clamped at clamp_len) takes it
// instead of its BD products.
template <bool Pairs>
TXL_AVX512_BF16 void sameScores(const HeadView& hv, const Task& t, I d, RowState& st) {
  const auto* lanes = reinterpret_cast<const std::uint32_t*>(hv.rt);  // bf16 pairs, with a Bf16Pairs table
  for (I r = 0; r < t.rows; ++r) {
    if constexpr (Pairs) {
      if (hv.rtPairs) {
        __m512 acc = _mm512_setzero_ps();
        for (I c = 0; c < (d + 1) / 2; ++c) {
          const __m512 b = _mm512_castsi512_ps(_mm512_set1_epi32(static_cast<int>(st.qv2[r][c])));
          const __m512 x = _mm512_castsi512_ps(_mm512_set1_epi32(static_cast<int>(lanes[c * hv.rtDim])));
          acc = madd<true>(b, x, acc);
        }
        st.bdSame[r] = _mm512_cvtss_f32(acc);
        continue;
      }
    }
    float acc = 0.0f;
    for (I c = 0; c < d; ++c) acc = std::fma(hv.qv[(t.i0 + r) * hv.qvPos + c], hv.rt[c * hv.rtDim], acc);
    st.bdSame[r] = acc;
  }
}

template <int MR, bool Pairs>
TXL_AVX512_BF16 void groupScores(const BlockView& bv, I i0, I r0, RowState& st, float (*p)[kKeyBlock],
                                 std::uint32_t (*p2)[kKeyBlock / 2], float* alpha) {
  __m512 s[MR][4];
  if (bv.j0 + bv.q - i0 + kKeyBlock - 2 < bv.hv->rtSame) {  // the tile's last position is below rt.same
    for (int r = 0; r < MR; ++r)
      for (int z = 0; z < 4; ++z) s[r][z] = _mm512_set1_ps(st.bdSame[r0 + r]);
    prefetchShare(bv, 0);
  } else if (Pairs && bv.hv->rtPairs) {
    bdTile<MR, true>(bv, st, i0, r0, s);
  } else {
    bdTile<MR, false>(bv, st, i0, r0, s);
  }
  if constexpr (Pairs) acTilePairs<MR>(bv, st, r0, s);
  else acTile<MR>(bv, i0, s);
  for (int r = 0; r < MR; ++r) {
    __m512 l = _mm512_load_ps(st.lanesL[r0 + r]);
    alpha[r0 + r] = softmaxRow(bv, i0 + r, st.keys[r0 + r], s[r], st.m[r0 + r], l);
    _mm512_store_ps(st.lanesL[r0 + r], l);
    if constexpr (Pairs) {
      _mm512_store_si512(p2[r0 + r], (__m512i)_mm512_cvtne2ps_pbh(s[r][1], s[r][0]));
      _mm512_store_si512(p2[r0 + r] + 16, (__m512i)_mm512_cvtne2ps_pbh(s[r][3], s[r][2]));
    } else {
      for (int z = 0; z < 4; ++z) _mm512_store_ps(p[r0 + r] + 16 * z, s[r][z]);
    }
  }
}

template <bool Pairs>
TXL_AVX512_BF16 void dispatchScores(int mr, const BlockView& bv, I i0, I r0, RowState& st, float (*p)[kKeyBlock],
                                    std::uint32_t (*p2)[kKeyBlock / 2], float* alpha) {
  switch (mr) {
    case 1:
      return groupScores<1, Pairs>(bv, i0, r0, st, p, p2, alpha);
    case 2:
      return groupScores<2, Pairs>(bv, i0, r0, st, p, p2, alpha);
    case 3:
      return groupScores<3, Pairs>(bv, i0, r0, st, p, p2, alpha);
    default:
      return groupScores<4, Pairs>(bv, i0, r0, st, p, p2, alpha);
  }
}

// Phase 2 for the group: O = alpha O + P V (bf16 pairs when Pairs).
template <int NV, bool Pairs>
TXL_AVX512_BF16 void valuesRows(int mr, const BlockView& bv, const float (*p)[kKeyBlock],
                                const std::uint32_t (*p2)[kKeyBlock / 2], const float* alpha, LaneRange lanes,
                                float* o) {
  if constexpr (Pairs) {
    switch (mr) {
      case 1:
        return accumulatePVPairs<1, NV>(bv, p2, alpha, lanes, o);
      case 2:
        return accumulatePVPairs<2, NV>(bv, p2, alpha, lanes, o);
      case 3:
        return accumulatePVPairs<3, NV>(bv, p2, alpha, lanes, o);
      default:
        return accumulatePVPairs<4, NV>(bv, p2, alpha, lanes, o);
    }
  } else {
    switch (mr) {
      case 1:
        return accumulatePV<1, NV>(bv, p, alpha, lanes, o);
      case 2:
        return accumulatePV<2, NV>(bv, p, alpha, lanes, o);
      case 3:
        return accumulatePV<3, NV>(bv, p, alpha, lanes, o);
      default:
        return accumulatePV<4, NV>(bv, p, alpha, lanes, o);
    }
  }
}

template <bool Pairs>
TXL_AVX512_BF16 void dispatchValues(int mr, int nv, const BlockView& bv, const float (*p)[kKeyBlock],
                                    const std::uint32_t (*p2)[kKeyBlock / 2], const float* alpha, LaneRange lanes,
                                    float* o) {
  switch (nv) {
    case 1:
      return valuesRows<1, Pairs>(mr, bv, p, p2, alpha, lanes, o);
    case 2:
      return valuesRows<2, Pairs>(mr, bv, p, p2, alpha, lanes, o);
    case 3:
      return valuesRows<3, Pairs>(mr, bv, p, p2, alpha, lanes, o);
    default:
      return valuesRows<4, Pairs>(mr, bv, p, p2, alpha, lanes, o);
  }
}

TXL_AVX512 void writeRowsAvx512(const HeadView& hv, const Task& t, I d, const RowState& st) {
  const __m512 nan = _mm512_set1_ps(std::numeric_limits<float>::quiet_NaN());
  for (I r = 0; r < t.rows; ++r) {
    float* out = hv.out + (t.i0 + r) * hv.outPos;
    const bool none = st.m[r] == kNegInf;
    const __m512 l = _mm512_set1_ps(_mm512_reduce_add_ps(_mm512_load_ps(st.lanesL[r])));
    for (I c0 = 0; c0 < d; c0 += 16) {
      const __m512 x = none ? nan : _mm512_div_ps(_mm512_load_ps(st.o + r * kMaxD + c0), l);
      _mm512_mask_storeu_ps(out + c0, laneMask(0, d - c0), x);
    }
  }
}

// Lanes of mask[i, j0 .. j0 + 16) (and pad) that are unmasked, for j0 + 16 <= k.
TXL_AVX512_INLINE __mmask16 unmaskedLanes(const RelAttentionArgs& a, I i, I j0) {
  const __m512 zero = _mm512_setzero_ps();
  __mmask16 ok = _mm512_cmp_ps_mask(_mm512_loadu_ps(a.mask + i * a.shape.k + j0), zero, _CMP_EQ_OQ);
  if (a.pad) ok &= _mm512_cmp_ps_mask(_mm512_loadu_ps(a.pad + j0), zero, _CMP_EQ_OQ);
  return ok;
}

// Whether row[first .. end) is all 0.
TXL_AVX512 bool maskIsZero(const float* row, I first, I end) {
  const __m512 zero = _mm512_setzero_ps();
  __mmask16 nonzero = 0;
  I j = first;
  for (; j + 16 <= end; j += 16) nonzero |= _mm512_cmp_ps_mask(_mm512_loadu_ps(row + j), zero, _CMP_NEQ_UQ);
  nonzero |= _mm512_mask_cmp_ps_mask(laneMask(0, end - j), _mm512_maskz_loadu_ps(laneMask(0, end - j), row + j), zero,
                                     _CMP_NEQ_UQ);
  return nonzero == 0;
}

// unmaskedKeys, 16 keys a step (a scalar scan is a visible share of a call
// at the small shape): the first unmasked key from the front, the last from
// the back.
TXL_AVX512 KeyRange unmaskedKeysAvx512(const RelAttentionArgs& a, I i) {
  const I k = a.shape.k;
  I first = 0;
  for (; first + 16 <= k; first += 16)
    if (const __mmask16 ok = unmaskedLanes(a, i, first)) {
      first += __builtin_ctz(ok);
      break;
    }
  while (first < k && keyMasked(a, i, first)) ++first;  // the tail after the last whole step
  if (first == k) return {k, -1};
  I end = k;  // keys [end, k) are masked
  for (; end - 16 >= first; end -= 16)
    if (const __mmask16 ok = unmaskedLanes(a, i, end - 16)) {
      end -= 16 - (32 - __builtin_clz(unsigned(ok)));
      break;
    }
  while (keyMasked(a, i, end - 1)) --end;
  return {first, end - 1, maskIsZero(a.mask + i * k, first, end)};
}

// Pairs: bf16 keys on a CPU with AVX512-BF16 (Kt2 and vdpbf16ps in AC).
template <bool Pairs>
TXL_AVX512_BF16 void avx512Task(const RelAttentionArgs& a, const Task& t, const KeyRange* rowKeys) {
  RowState st;
  initRows(t, rowKeys, st);
  alignas(64) float kt[Pairs ? 1 : kMaxD * kKeyBlock] = {};
  alignas(64) std::uint32_t kt2[Pairs ? kMaxD / 2 * kKeyBlock : 1] = {};
  alignas(64) float vb[Pairs ? 1 : kKeyBlock * kMaxD];
  alignas(64) std::uint32_t vb2[Pairs ? kKeyBlock / 2 * kMaxD : 1];
  alignas(64) float p[Pairs ? 1 : kQueryBlock][kKeyBlock];               // the block's probabilities, phase 1 to 2
  alignas(64) std::uint32_t p2[Pairs ? kQueryBlock : 1][kKeyBlock / 2];  // as bf16 pairs, when Pairs
  float alpha[kQueryBlock];
  const HeadView hv = headView(a, t.b, t.h);
  const I k = a.shape.k, d = a.shape.d;
  const int nv = static_cast<int>((d + 15) / 16);
  const KeyRange taskKeys = hull(st.keys, t.rows);
  BlockView bv{&hv, a.shape.q, k, d, 0, a.scale, nullptr, kt, kt2, vb, vb2, {}, {}};
  const I groups = (t.rows + kRowGroup - 1) / kRowGroup;
  if constexpr (Pairs) quPairs(hv, t, d, st);
  if (hv.rtSame > 0) sameScores<Pairs>(hv, t, d, st);
  for (I j0 = firstBlockStart(k); j0 < k; j0 += kKeyBlock) {
    const LaneRange taskLanes = lanesOf(taskKeys, j0);
    if (taskLanes.lo >= taskLanes.hi) continue;
    prefetchRows(hv.v, hv.kvSize, hv.vPos, d, j0 + taskLanes.lo, j0 + taskLanes.hi);  // copied after the transposes
    if constexpr (Pairs) {
      transposeKeyPairs(hv, d, j0, taskLanes, kt2);
      copyValuePairs(hv, d, j0, taskLanes, vb2);
    } else {
      transposeKeys(hv, d, j0, taskLanes, kt);
      copyValues(hv, d, j0, taskLanes, vb);
    }
    bv.j0 = j0;
    bv.mask = a.mask + j0;
    for (int z = 0; z < 4; ++z) {
      const __mmask16 inK = laneMask(-j0 - 16 * z, 16);
      bv.keyOk[z] = a.pad ? _mm512_mask_cmp_ps_mask(inK, _mm512_maskz_loadu_ps(inK, a.pad + j0 + 16 * z),
                                                    _mm512_setzero_ps(), _CMP_EQ_OQ)
                          : inK;
    }
    for (I r0 = 0; r0 < t.rows; r0 += kRowGroup) {  // phase 1: Kt and rt's window in L1
      bv.next = nextShare(k, j0 + kKeyBlock, r0 / kRowGroup, groups);
      const I mr = std::min<I>(kRowGroup, t.rows - r0);
      const LaneRange lanes = lanesOf(hull(st.keys + r0, mr), j0);
      if (lanes.lo < lanes.hi) dispatchScores<Pairs>(static_cast<int>(mr), bv, t.i0 + r0, r0, st, p, p2, alpha);
      else prefetchShare(bv, 0);
    }
    for (I r0 = 0; r0 < t.rows; r0 += kRowGroup) {  // phase 2: Vb in L1
      const I mr = std::min<I>(kRowGroup, t.rows - r0);
      const LaneRange lanes = lanesOf(hull(st.keys + r0, mr), j0);
      if (lanes.lo < lanes.hi)
        dispatchValues<Pairs>(static_cast<int>(mr), nv, bv, p + r0, p2 + r0, alpha + r0, lanes, st.o + r0 * kMaxD);
    }
  }
  writeRowsAvx512(hv, t, d, st);
}

// The rows' key ranges first (the mask is the same for every batch and
// head, pad per stream: one scan per call, or per stream with pad), then
// the tasks, each seeing its own stream's pad row.
template <typename KeysOfRow, typename RunTask>
void runTasks(const RelAttentionArgs& a, KeysOfRow keysOfRow, RunTask runTask) {
  const RelAttentionShape& s = a.shape;
  const I blocks = queryBlocks(s, omp_get_max_threads());
  const I tasks = s.batch * s.heads * blocks;
  // Kept per calling thread across calls, so that a warm stream's segments
  // allocate nothing (tests/session/no_allocation_test.cpp); the team
  // reaches it through `keys` (in the region, the name is each thread's own).
  static thread_local std::vector<KeyRange> rowKeys;
  const I streams = a.pad ? s.batch : 1;  // key ranges per stream only when pad tells them apart
  rowKeys.resize(static_cast<std::size_t>(streams * s.q));
  KeyRange* keys = rowKeys.data();
  const auto streamArgs = [&a](I b) {
    RelAttentionArgs sa = a;
    if (sa.pad) sa.pad += b * a.shape.k;
    return sa;
  };
#pragma omp parallel
  {
#pragma omp for schedule(static)
    for (I r = 0; r < streams * s.q; ++r) keys[r] = keysOfRow(streamArgs(r / s.q), r % s.q);
#pragma omp for schedule(dynamic)
    for (I t = 0; t < tasks; ++t) {
      const Task task = taskAt(s, blocks, t);
      if (task.rows > 0) runTask(streamArgs(task.b), task, keys + (a.pad ? task.b * s.q : 0));
    }
  }
}

}  // namespace

bool relAttentionSupports(const RelAttentionShape& s) {
  return s.batch >= 1 && s.heads >= 1 && s.q >= 1 && s.k >= 1 && s.d >= 1 && s.d <= kMaxD;
}

namespace {

// Whether p's kernel reads p's table layout.
bool readsTable(const AttentionPath& p) {
  switch (p.kernel) {
    case AttentionKernel::Portable:
    case AttentionKernel::Blocks:
      return p.table == PositionLayout::F32;
    case AttentionKernel::Pairs:
      return p.table == PositionLayout::F32 || p.table == PositionLayout::Bf16Pairs;
    case AttentionKernel::Rows:
      return p.table == PositionLayout::Bf16Rows || p.table == PositionLayout::F32Rows;
  }
  return false;
}

}  // namespace

const char* attentionPathName(const AttentionPath& p) {
  if (!readsTable(p)) return "invalid";
  switch (p.kernel) {
    case AttentionKernel::Portable:
      return "portable";
    case AttentionKernel::Blocks:
      return "blocks";
    case AttentionKernel::Pairs:
      return p.table == PositionLayout::Bf16Pairs ? "pairs" : "pairs-f32-table";
    case AttentionKernel::Rows:
      return p.table == PositionLayout::Bf16Rows ? "rows" : "rows-f32";
  }
  return "invalid";
}

bool relAttentionRuns(const AttentionPath& p, const RelAttentionShape& s, bool kvBf16) {
  if (!relAttentionSupports(s) || !readsTable(p)) return false;
  const Platform& cpu = platform();
  switch (p.kernel) {
    case AttentionKernel::Portable:
      return true;
    case AttentionKernel::Blocks:
      return cpu.avx512;
    case AttentionKernel::Pairs:
      return cpu.avx512Bf16 && kvBf16;
    case AttentionKernel::Rows:
      if (s.heads > detail::kRowsMaxHeads) return false;
      return p.table == PositionLayout::Bf16Rows ? cpu.avx512Bf16 && kvBf16 : cpu.avx512 && !kvBf16;
  }
  return false;
}

void relAttention(const RelAttentionArgs& a) {
  TXL_CHECK(relAttentionRuns(a.path, a.shape, a.kvBf16),
            std::string("rel_attention: this CPU does not run the path '") + attentionPathName(a.path) +
                "' on this shape and key dtype");
  switch (a.path.kernel) {
    case AttentionKernel::Portable:
      return runTasks(a, unmaskedKeys, portableTask);
    case AttentionKernel::Blocks:
      return runTasks(a, unmaskedKeysAvx512, avx512Task<false>);
    case AttentionKernel::Pairs:
      return runTasks(a, unmaskedKeysAvx512, avx512Task<true>);
    case AttentionKernel::Rows:
      return detail::relAttentionRows(a);
  }
}

namespace detail {

KeyRange unmaskedKeyRange(const RelAttentionArgs& a, std::int64_t i) {
  return platform().avx512 ? unmaskedKeysAvx512(a, i) : unmaskedKeys(a, i);
}

}  // namespace detail

}  // namespace txl::backend::kernels

#pragma GCC diagnostic pop
