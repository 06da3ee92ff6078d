// tests/backend/rel_attention_test.cpp - kernels::relAttention against a
// double-precision reference of rel_attention.h's formula (every path this
// CPU runs), with K and V interleaved in one buffer as the lowering passes
// them; keys prepended with pad = 1 must not change a bit; bf16 keys and
// values give the f32 result of their widened values, bit for bit, on the
// widening paths.
#include <catch2/catch.hpp>

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "backend/platform.h"
#include "backend/kernels/rel_attention.h"
#include "ir/bf16.h"
#include "ir/check.h"

using namespace txl::backend::kernels;

namespace {

using I = std::int64_t;
constexpr AttentionPath kPortable{AttentionKernel::Portable, PositionLayout::F32};
constexpr AttentionPath kBlocks{AttentionKernel::Blocks, PositionLayout::F32};
constexpr AttentionPath kPairsF32{AttentionKernel::Pairs, PositionLayout::F32};
constexpr AttentionPath kPairs{AttentionKernel::Pairs, PositionLayout::Bf16Pairs};
constexpr AttentionPath kRows{AttentionKernel::Rows, PositionLayout::Bf16Rows};
constexpr AttentionPath kRowsF32{AttentionKernel::Rows, PositionLayout::F32Rows};
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr I kOutGap = 3;  // out's head stride is d + kOutGap: the gap must stay untouched
constexpr float kSentinel = 12345.0f;

enum class MaskKind { Causal, SameLength, Random };

// One problem with its own buffers: q* and out [q, batch, heads, d] (out
// with gaps), K and V interleaved in kv [k, batch, 2 * heads * d].
struct Problem {
  RelAttentionShape shape;
  std::vector<float> qu, qv, kv, rt, mask, pad, out;
  std::vector<std::uint16_t> kv16;    // when not empty: kv in bf16, passed instead of kv
  std::vector<std::uint32_t> rt2;     // rt in bf16 pairs of d (PositionLayout::Bf16Pairs), for that layout
  std::vector<std::uint16_t> rtRows;  // rt in bf16 rows of positions (PositionLayout::Bf16Rows), for that layout
  std::vector<float> rtRowsF32;       // rt in f32 rows of positions (PositionLayout::F32Rows), for that layout
  I rtLead = 0;                       // rt's rows start with this many unused columns (a suffix of a longer table)
  I rtSame = 0;                       // positions [0, rtSame) hold position 0's values (PositionTable::same)
  float scale = 0.37f;

  I hd() const { return shape.heads * shape.d; }

  // The fastest f32 path this CPU runs.
  static AttentionPath widening() { return txl::backend::platform().avx512 ? kBlocks : kPortable; }

  RelAttentionArgs args(AttentionPath path = widening()) {
    const I d = shape.d, B = shape.batch, H = shape.heads;
    RelAttentionArgs a;
    a.shape = shape;
    a.path = path;
    a.qu = qu.data(), a.qv = qv.data();
    a.quStrides = a.qvStrides = {B * H * d, H * d, d};
    if (kv16.empty()) a.k = kv.data(), a.v = kv.data() + hd();
    else a.k = kv16.data(), a.v = kv16.data() + hd(), a.kvBf16 = true;
    a.kStrides = a.vStrides = {B * 2 * hd(), 2 * hd(), d};
    const I dim = shape.k + rtLead;
    switch (path.table) {
      case PositionLayout::F32:
        a.rt = {rt.data() + rtLead, d * dim, dim, rtSame};
        break;
      case PositionLayout::Bf16Pairs:
        REQUIRE(!rt2.empty());
        a.rt = {rt2.data() + rtLead, (d + 1) / 2 * dim, dim, rtSame};
        break;
      case PositionLayout::Bf16Rows:
        REQUIRE(!rtRows.empty());
        a.rt = {rtRows.data() + rtLead * H * d, d, H * d, rtSame};
        break;
      case PositionLayout::F32Rows:
        REQUIRE(!rtRowsF32.empty());
        a.rt = {rtRowsF32.data() + rtLead * H * d, d, H * d, rtSame};
        break;
    }
    a.mask = mask.data();
    a.pad = pad.empty() ? nullptr : pad.data();
    a.scale = scale;
    a.out = out.data();
    a.outStrides = {B * H * (d + kOutGap), H * (d + kOutGap), d + kOutGap};
    return a;
  }
};

// p.rt (any d) position-major as the lowering packs it, rt[h][c][p] at (p,
// h, c): in f32 (rtRowsF32) or bf16 (rtRows).
std::vector<float> rowTableF32(const Problem& p) {
  const I d = p.shape.d, dim = p.shape.k + p.rtLead;
  std::vector<float> out;
  for (I j = 0; j < dim; ++j)
    for (I h = 0; h < p.shape.heads; ++h)
      for (I c = 0; c < d; ++c) out.push_back(p.rt[(h * d + c) * dim + j]);
  return out;
}

std::vector<std::uint16_t> rowTable(const Problem& p) {
  std::vector<std::uint16_t> out;
  for (float x : rowTableF32(p)) out.push_back(txl::ir::floatToBf16(x));
  return out;
}

// p.rt in bf16 pairs of d (PositionLayout::Bf16Pairs): (rt[h][2c][p],
// rt[h][2c + 1][p]) per 32-bit lane, an odd d's last pair (rt[h][d - 1][p], 0).
std::vector<std::uint32_t> pairTable(const Problem& p) {
  const I d = p.shape.d, dim = p.shape.k + p.rtLead;
  std::vector<std::uint32_t> out;
  for (I h = 0; h < p.shape.heads; ++h)
    for (I c = 0; c < (d + 1) / 2; ++c)
      for (I j = 0; j < dim; ++j) {
        const auto at = [&](I row) {
          return row < d ? txl::ir::floatToBf16(p.rt[(h * d + row) * dim + j]) : std::uint16_t(0);
        };
        out.push_back(std::uint32_t(at(2 * c)) | std::uint32_t(at(2 * c + 1)) << 16);
      }
  return out;
}

std::vector<std::uint16_t> toBf16(const std::vector<float>& xs) {
  std::vector<std::uint16_t> out;
  for (float x : xs) out.push_back(txl::ir::floatToBf16(x));
  return out;
}

// Positions [0, rtLead + rows) of p.rt made one vector, the last of them
// (distances clamped at clamp_len), every value passed through `round`.
template <class Round>
void clampTable(Problem& p, I rows, Round round) {
  const I dim = p.shape.k + p.rtLead, last = p.rtLead + rows - 1;
  for (I row = 0; row < p.shape.heads * p.shape.d; ++row)
    for (I j = 0; j < dim; ++j) {
      float& x = p.rt[row * dim + j];
      x = round(j < last ? p.rt[row * dim + last] : x);
    }
}

std::vector<float> randomVector(std::size_t n, std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// mask[i][j] = 1 outside row i's keys; SameLength rows keep memLen + 1 keys.
std::vector<float> makeMask(I q, I k, MaskKind kind, std::mt19937& rng, I memLen) {
  std::vector<float> m(q * k, 0.0f);
  std::bernoulli_distribution drop(0.3);
  for (I i = 0; i < q; ++i)
    for (I j = 0; j < k; ++j) {
      bool masked = false;
      if (kind == MaskKind::Causal) masked = j > k - q + i;
      if (kind == MaskKind::SameLength) masked = j > k - q + i || j < i + (k - q) - memLen;
      if (kind == MaskKind::Random) masked = drop(rng);
      m[i * k + j] = masked ? 1.0f : 0.0f;
    }
  return m;
}

Problem makeProblem(RelAttentionShape s, MaskKind kind, bool withPad, std::uint32_t seed) {
  std::mt19937 rng(seed);
  Problem p;
  p.shape = s;
  const I rows = s.batch * s.heads * s.d;
  p.qu = randomVector(s.q * rows, rng);
  p.qv = randomVector(s.q * rows, rng);
  p.kv = randomVector(s.k * 2 * rows, rng);
  p.rtLead = 5;
  p.rt = randomVector(s.heads * s.d * (s.k + p.rtLead), rng);
  p.mask = makeMask(s.q, s.k, kind, rng, (s.k - s.q) / 2);
  if (withPad) {
    p.pad.assign(s.batch * s.k, 0.0f);  // a different pattern per stream
    for (I b = 0; b < s.batch; ++b)
      for (I j = 3 + b; j < s.k; j += 7) p.pad[b * s.k + j] = 1.0f;
  }
  if (s.q > 2) std::fill(p.mask.begin() + s.k, p.mask.begin() + 2 * s.k, 1.0f);  // row 1: every key masked
  p.out.assign(s.q * s.batch * s.heads * (s.d + kOutGap), kSentinel);
  return p;
}

// rel_attention.h's formula in double; NaN rows where every key is masked.
std::vector<double> reference(Problem& p) {
  const RelAttentionArgs a = p.args(kPortable);
  const RelAttentionShape& s = p.shape;
  const float* rt = static_cast<const float*>(a.rt.data);
  const float *keys = p.kv.data(), *values = p.kv.data() + p.hd();
  std::vector<double> out(s.q * s.batch * s.heads * s.d);
  std::vector<double> w(s.k);
  const auto at = [](const float* base, const RowStrides& st, I pos, I b, I h) {
    return base + pos * st.pos + b * st.batch + h * st.head;
  };
  for (I b = 0; b < s.batch; ++b)
    for (I h = 0; h < s.heads; ++h)
      for (I i = 0; i < s.q; ++i) {
        double max = -INFINITY;
        for (I j = 0; j < s.k; ++j) {
          w[j] = -INFINITY;
          if (a.mask[i * s.k + j] != 0.0f || (a.pad && a.pad[b * s.k + j] != 0.0f)) continue;
          const float *qu = at(a.qu, a.quStrides, i, b, h), *qv = at(a.qv, a.qvStrides, i, b, h);
          const float* kj = at(keys, a.kStrides, j, b, h);
          const I src = j + s.q - 1 - i;
          double dot = 0.0;
          for (I c = 0; c < s.d; ++c) {
            dot += double(qu[c]) * kj[c];
            if (src < s.k) dot += double(qv[c]) * rt[h * a.rt.head + c * a.rt.step + src];
          }
          w[j] = a.scale * dot;
          max = std::max(max, w[j]);
        }
        double* o = &out[((i * s.batch + b) * s.heads + h) * s.d];
        double sum = 0.0;
        for (I j = 0; j < s.k; ++j) sum += w[j] = max == -INFINITY ? 0.0 : std::exp(w[j] - max);
        for (I c = 0; c < s.d; ++c) {
          double acc = 0.0;
          for (I j = 0; j < s.k; ++j)
            if (w[j] != 0.0) acc += w[j] * at(values, a.vStrides, j, b, h)[c];
          o[c] = max == -INFINITY ? NAN : acc / sum;
        }
      }
  return out;
}

// out's [q, batch, heads, d] elements without the gaps (which must hold the sentinel).
std::vector<float> denseOut(const Problem& p) {
  const RelAttentionShape& s = p.shape;
  std::vector<float> dense;
  for (I row = 0; row < s.q * s.batch * s.heads; ++row) {
    const float* o = &p.out[row * (s.d + kOutGap)];
    dense.insert(dense.end(), o, o + s.d);
    for (I g = 0; g < kOutGap; ++g) REQUIRE(o[s.d + g] == kSentinel);
  }
  return dense;
}

// |got - want| <= tol · the largest |want| (NaN where want is NaN).
void requireClose(const std::vector<float>& got, const std::vector<double>& want, double tol = 1e-5) {
  REQUIRE(got.size() == want.size());
  double scale = 0.0;
  for (double w : want)
    if (!std::isnan(w)) scale = std::max(scale, std::fabs(w));
  for (std::size_t n = 0; n < want.size(); ++n) {
    INFO("element " << n << ": got " << got[n] << ", want " << want[n]);
    if (std::isnan(want[n])) REQUIRE(std::isnan(got[n]));
    else REQUIRE(std::fabs(got[n] - want[n]) <= tol * std::max(scale, 1e-3));
  }
}

std::vector<float> run(Problem& p, AttentionPath path) {
  std::fill(p.out.begin(), p.out.end(), kSentinel);
  relAttention(p.args(path));
  return denseOut(p);
}

// p with `extra` keys in front: pad = 1 on them, NaN and garbage in their K,
// V, rt columns and mask; rt's other columns and every distance unchanged.
Problem prependMaskedKeys(const Problem& p, I extra) {
  const RelAttentionShape& s = p.shape;
  Problem e = p;
  e.shape.k = s.k + extra;
  std::mt19937 rng(99);
  const I kvRow = s.batch * 2 * p.hd();
  e.kv = randomVector(extra * kvRow, rng);
  for (std::size_t n = 0; n < e.kv.size(); n += 5) e.kv[n] = kNaN;
  e.kv.insert(e.kv.end(), p.kv.begin(), p.kv.end());
  e.rt.clear();
  for (I row = 0; row < s.heads * s.d; ++row) {
    const std::vector<float> garbage = randomVector(p.rtLead + extra, rng);
    e.rt.insert(e.rt.end(), garbage.begin(), garbage.end());
    const auto used = p.rt.begin() + row * (p.rtLead + s.k) + p.rtLead;
    e.rt.insert(e.rt.end(), used, used + s.k);
  }
  e.mask.clear();
  for (I i = 0; i < s.q; ++i) {
    for (I j = 0; j < extra; ++j) e.mask.push_back(j % 3 == 0 ? 1.0f : 0.0f);
    e.mask.insert(e.mask.end(), p.mask.begin() + i * s.k, p.mask.begin() + (i + 1) * s.k);
  }
  e.pad.clear();
  for (I b = 0; b < s.batch; ++b) {
    e.pad.insert(e.pad.end(), std::size_t(extra), 1.0f);
    if (p.pad.empty()) e.pad.insert(e.pad.end(), std::size_t(s.k), 0.0f);
    else e.pad.insert(e.pad.end(), p.pad.begin() + b * s.k, p.pad.begin() + (b + 1) * s.k);
  }
  return e;
}

struct Case {
  I batch, heads, q, k, d;
};

std::vector<Case> cases() {
  std::vector<Case> all;
  I n = 0;
  for (I d : {5, 41, 64})
    for (I q : {1, 3, 80})
      for (I k : {q, I(67), I(200)}) {
        if (k < q) continue;
        all.push_back({1 + n % 2, 1 + n % 3, q, k, d});
        ++n;
      }
  return all;
}

}  // namespace

TEST_CASE("rel_attention: supports 1 <= d <= 64 and positive sizes only") {
  CHECK(relAttentionSupports({1, 8, 80, 2180, 64}));
  CHECK(relAttentionSupports({1, 1, 1, 1, 1}));
  CHECK_FALSE(relAttentionSupports({1, 8, 80, 2180, 65}));
  CHECK_FALSE(relAttentionSupports({1, 8, 80, 2180, 0}));
  CHECK_FALSE(relAttentionSupports({0, 8, 80, 2180, 64}));
  CHECK_FALSE(relAttentionSupports({1, 8, 0, 2180, 64}));
  CHECK_FALSE(relAttentionSupports({1, 8, 80, 0, 64}));
}

TEST_CASE("rel_attention: runs the paths the CPU has, the layout each reads, and no other") {
  const bool avx512 = txl::backend::platform().avx512, bf16 = txl::backend::platform().avx512Bf16;
  const RelAttentionShape even{1, 8, 80, 2180, 64}, odd{1, 8, 80, 2180, 41};
  CHECK(relAttentionRuns(kPortable, even, false));
  CHECK(relAttentionRuns(kPortable, even, true));
  CHECK(relAttentionRuns(kBlocks, even, true) == avx512);
  CHECK(relAttentionRuns(kPairs, even, true) == bf16);
  CHECK(relAttentionRuns(kPairsF32, odd, true) == bf16);
  CHECK(relAttentionRuns(kRows, odd, true) == bf16);
  CHECK(relAttentionRuns(kPairs, odd, true) == bf16);  // an odd d's last pair padded with 0
  CHECK_FALSE(relAttentionRuns(kPairs, even, false));
  CHECK_FALSE(relAttentionRuns(kRows, even, false));
  CHECK_FALSE(relAttentionRuns(kRows, {1, 65, 1, 100, 64}, true));
  CHECK_FALSE(relAttentionRuns({AttentionKernel::Rows, PositionLayout::F32}, even, true));
  CHECK(relAttentionRuns(kRowsF32, odd, false) == avx512);  // f32 keys and values with f32 rows
  CHECK_FALSE(relAttentionRuns(kRowsF32, even, true));
  CHECK_FALSE(relAttentionRuns(kRows, even, false));
  CHECK_FALSE(relAttentionRuns(kRowsF32, {1, 65, 1, 100, 64}, false));
  CHECK(std::string(attentionPathName(kRowsF32)) == "rows-f32");
  CHECK_FALSE(relAttentionRuns({AttentionKernel::Blocks, PositionLayout::Bf16Pairs}, even, true));
  CHECK_FALSE(relAttentionRuns(kPortable, {1, 8, 80, 2180, 65}, false));
  CHECK(std::string(attentionPathName({AttentionKernel::Portable, PositionLayout::Bf16Rows})) == "invalid");
  CHECK(std::string(attentionPathName(kPairsF32)) == "pairs-f32-table");
  Problem p = makeProblem({1, 2, 3, 67, 41}, MaskKind::Causal, false, 7);
  RelAttentionArgs a = p.args(kPortable);
  a.path = kPairs;
  CHECK_THROWS_AS(relAttention(a), txl::InternalError);  // f32 keys and values
}

TEST_CASE("rel_attention: matches the double reference, AVX-512 and portable paths") {
  std::uint32_t seed = 1;
  for (const Case& c : cases())
    for (MaskKind kind : {MaskKind::Causal, MaskKind::SameLength, MaskKind::Random}) {
      const bool withPad = seed % 2 == 0;
      Problem p = makeProblem({c.batch, c.heads, c.q, c.k, c.d}, kind, withPad, seed++);
      INFO("batch " << c.batch << " heads " << c.heads << " q " << c.q << " k " << c.k << " d " << c.d << " mask "
                    << int(kind) << " pad " << withPad);
      const std::vector<double> want = reference(p);
      requireClose(run(p, Problem::widening()), want);
      requireClose(run(p, kPortable), want);
      if (relAttentionRuns(kRowsF32, p.shape, false)) {  // a row at a time, every row
        p.rtRowsF32 = rowTableF32(p);
        requireClose(run(p, kRowsF32), want);
      }
    }
}

TEST_CASE("rel_attention: bf16 keys and values") {
  // qu, k and v rounded to bf16: the pair products (vdpbf16ps) then see the
  // values the f32 forms see, and the probabilities rounded to bf16 (a
  // relative 2^-9 each) bound their result's error by 2^-9 of the largest
  // |v| (tested at 2^-8). The widening paths give the f32 result bit for bit
  // and match the double reference as f32 does; keys prepended with pad = 1
  // change no bit.
  const auto rounded = [](std::vector<float>& xs) {
    for (float& x : xs) x = txl::ir::bf16ToFloat(txl::ir::floatToBf16(x));
  };
  std::uint32_t seed = 40;
  for (const Case& c : {Case{1, 2, 80, 200, 64}, Case{2, 3, 3, 67, 41}, Case{1, 1, 1, 1, 5}, Case{1, 8, 1, 300, 64},
                        Case{1, 2, 7, 130, 33}, Case{2, 2, 9, 140, 6}, Case{3, 2, 1, 100, 17}, Case{2, 3, 1, 67, 41},
                        Case{1, 2, 1, 33, 32}})
    for (MaskKind kind : {MaskKind::SameLength, MaskKind::Random})
      for (bool withPad : {false, true}) {
        Problem p = makeProblem({c.batch, c.heads, c.q, c.k, c.d}, kind, withPad, seed++);
        rounded(p.kv);
        rounded(p.qu);
        rounded(p.qv);
        rounded(p.rt);
        INFO("q " << c.q << " k " << c.k << " d " << c.d << " mask " << int(kind) << " pad " << withPad);
        const std::vector<double> want = reference(p);
        const std::vector<float> portable = run(p, kPortable), widened = run(p, Problem::widening());
        p.kv16 = toBf16(p.kv);
        p.rt2 = pairTable(p);
        p.rtRows = rowTable(p);
        for (const AttentionPath& path : {kPortable, kBlocks, kPairsF32, kPairs, kRows}) {
          if (!relAttentionRuns(path, p.shape, true)) continue;
          INFO("path " << attentionPathName(path));
          const std::vector<float> got = run(p, path);
          const bool paired = path.kernel == AttentionKernel::Pairs || path.kernel == AttentionKernel::Rows;
          requireClose(got, want, paired ? 1.0 / 256 : 1e-5);
          if (!paired)
            REQUIRE(std::memcmp(got.data(), (path == kPortable ? portable : widened).data(),
                                got.size() * sizeof(float)) == 0);
          Problem e = prependMaskedKeys(p, 37);
          e.kv16 = toBf16(e.kv);
          e.rt2 = pairTable(e);
          e.rtRows = rowTable(e);
          const std::vector<float> padded = run(e, path);
          REQUIRE(std::memcmp(padded.data(), got.data(), got.size() * sizeof(float)) == 0);
        }
      }
}

TEST_CASE("rel_attention: the row-wise path takes the clamped positions' row once") {
  // Positions [0, same) hold one row (relative distances at or beyond
  // clamp_len): with rt.same the kernel adds qv · r once per head to each
  // key's qu · k, against the reference within the products' bound (pair
  // products in bf16, f32 rounding in f32) and against the same rows read
  // key by key within f32 rounding (another order of the sums); keys
  // prepended with pad = 1, their positions clamped too, change no bit.
  std::uint32_t seed = 70;
  for (const bool bf16 : {true, false})
    for (const Case& c :
         {Case{1, 8, 1, 300, 64}, Case{3, 3, 1, 130, 41}, Case{2, 2, 4, 200, 32}, Case{1, 10, 1, 700, 41}})
      for (bool withPad : {false, true}) {
        const RelAttentionShape shape{c.batch, c.heads, c.q, c.k, c.d};
        const AttentionPath path = bf16 ? kRows : kRowsF32;
        if (!relAttentionRuns(path, shape, bf16)) continue;
        const auto round = [bf16](float x) { return bf16 ? txl::ir::bf16ToFloat(txl::ir::floatToBf16(x)) : x; };
        const auto tables = [bf16](Problem& p) {
          if (bf16) p.rtRows = rowTable(p);
          else p.rtRowsF32 = rowTableF32(p);
          p.kv16.clear();
          if (bf16)
            for (float x : p.kv) p.kv16.push_back(txl::ir::floatToBf16(x));
        };
        Problem p = makeProblem(shape, MaskKind::Causal, withPad, seed++);
        const I same = c.k / 2 + 5;
        clampTable(p, same, round);
        for (std::vector<float>* xs : {&p.kv, &p.qu, &p.qv})
          for (float& x : *xs) x = round(x);
        tables(p);
        INFO("bf16 " << bf16 << " batch " << c.batch << " heads " << c.heads << " q " << c.q << " k " << c.k << " d "
                     << c.d << " pad " << withPad);
        const std::vector<double> want = reference(p);
        const std::vector<float> byKey = run(p, path);
        p.rtSame = same;
        const std::vector<float> got = run(p, path);
        requireClose(got, want, bf16 ? 1.0 / 256 : 1e-5);
        requireClose(got, std::vector<double>(byKey.begin(), byKey.end()), 1e-5);
        // The shortcut reads position 0's row only: NaN in the rows of positions
        // [1, 32) (the first group of keys, wholly below `same`) changes nothing.
        Problem poisoned = p;
        const I from = (p.rtLead + 1) * c.heads * c.d, to = (p.rtLead + 32) * c.heads * c.d;
        if (bf16) std::fill(poisoned.rtRows.begin() + from, poisoned.rtRows.begin() + to, std::uint16_t(0x7fc0));
        else std::fill(poisoned.rtRowsF32.begin() + from, poisoned.rtRowsF32.begin() + to, kNaN);
        const std::vector<float> unread = run(poisoned, path);
        REQUIRE(std::memcmp(unread.data(), got.data(), got.size() * sizeof(float)) == 0);
        Problem e = prependMaskedKeys(p, 37);
        clampTable(e, same + 37, round);
        tables(e);
        e.rtSame = same + 37;
        const std::vector<float> padded = run(e, path);
        REQUIRE(std::memcmp(padded.data(), got.data(), got.size() * sizeof(float)) == 0);
      }
}

TEST_CASE("rel_attention: the block-wise paths take BD over clamped positions once per row, bit for bit") {
  // A key block whose positions all lie below rt.same takes each row's BD
  // over position 0's values, computed by the chain the tile runs: the
  // result is the one without rt.same, bit for bit, on every block-wise
  // path (f32 or bf16 keys, an f32 or bf16-pair table), with blocks below,
  // across and above the clamped positions, and with keys prepended with
  // pad = 1.
  std::uint32_t seed = 90;
  const auto round = [](float x) { return txl::ir::bf16ToFloat(txl::ir::floatToBf16(x)); };
  for (const Case& c : {Case{1, 8, 80, 300, 64}, Case{2, 3, 7, 200, 41}, Case{1, 10, 64, 704, 41},
                        Case{2, 2, 9, 140, 6}, Case{1, 2, 5, 130, 33}})
    for (bool withPad : {false, true}) {
      const RelAttentionShape shape{c.batch, c.heads, c.q, c.k, c.d};
      Problem p = makeProblem(shape, MaskKind::SameLength, withPad, seed++);
      const I same = c.k / 2 + 5;
      clampTable(p, same, round);
      for (std::vector<float>* xs : {&p.kv, &p.qu, &p.qv})
        for (float& x : *xs) x = round(x);
      INFO("batch " << c.batch << " heads " << c.heads << " q " << c.q << " k " << c.k << " d " << c.d << " pad "
                    << withPad);
      const std::vector<double> want = reference(p);
      for (const bool bf16Keys : {false, true}) {
        p.kv16 = bf16Keys ? toBf16(p.kv) : std::vector<std::uint16_t>{};
        p.rt2 = pairTable(p);
        for (const AttentionPath& path : {kBlocks, kPairsF32, kPairs}) {
          if (!relAttentionRuns(path, p.shape, bf16Keys)) continue;
          INFO("path " << attentionPathName(path) << ", bf16 keys " << bf16Keys);
          p.rtSame = 0;
          const std::vector<float> products = run(p, path);
          p.rtSame = same;
          const std::vector<float> got = run(p, path);
          REQUIRE(std::memcmp(got.data(), products.data(), got.size() * sizeof(float)) == 0);
          requireClose(got, want, path.kernel == AttentionKernel::Pairs ? 1.0 / 256 : 1e-5);
          Problem e = prependMaskedKeys(p, 37);
          clampTable(e, same + 37, round);
          e.kv16 = bf16Keys ? toBf16(e.kv) : std::vector<std::uint16_t>{};
          e.rt2 = pairTable(e);
          e.rtSame = same + 37;
          const std::vector<float> padded = run(e, path);
          REQUIRE(std::memcmp(padded.data(), got.data(), got.size() * sizeof(float)) == 0);
        }
      }
      p.rtSame = 0;
    }
}

TEST_CASE("rel_attention: a row with every key masked is NaN, the others are not") {
  Problem p = makeProblem({1, 2, 3, 67, 41}, MaskKind::Causal, false, 7);
  const std::vector<float> out = run(p, Problem::widening());
  for (I row = 0; row < 3 * 2; ++row)
    for (I c = 0; c < 41; ++c) REQUIRE(std::isnan(out[row * 41 + c]) == (row / 2 == 1));
}

TEST_CASE("rel_attention: keys prepended with pad = 1 change no bit of the output") {
  for (const AttentionPath& path : {Problem::widening(), kPortable, kRowsF32})
    for (const Case& c : {Case{1, 2, 80, 200, 64}, Case{2, 3, 3, 67, 41}, Case{1, 1, 1, 1, 5}, Case{1, 2, 80, 80, 64},
                          Case{3, 2, 1, 150, 20}})
      for (MaskKind kind : {MaskKind::Causal, MaskKind::SameLength, MaskKind::Random})
        for (bool withPad : {false, true}) {
          Problem p = makeProblem({c.batch, c.heads, c.q, c.k, c.d}, kind, withPad, 11);
          if (!relAttentionRuns(path, p.shape, false)) continue;
          p.rtRowsF32 = rowTableF32(p);
          const std::vector<float> want = run(p, path);
          for (I extra : {37, 100}) {
            INFO("path " << attentionPathName(path) << " q " << c.q << " k " << c.k << " d " << c.d << " mask "
                         << int(kind) << " extra " << extra);
            Problem e = prependMaskedKeys(p, extra);
            e.rtRowsF32 = rowTableF32(e);
            const std::vector<float> got = run(e, path);
            REQUIRE(std::memcmp(got.data(), want.data(), want.size() * sizeof(float)) == 0);
          }
        }
}

TEST_CASE("rel_attention: speed", "[.bench]") {
  struct Shape {
    const char* name;
    RelAttentionShape s;
  };
  for (const Shape& sh : {Shape{"enwik8", {1, 8, 80, 2180, 64}}, Shape{"wt103", {1, 10, 64, 704, 41}},
                          Shape{"small", {8, 4, 128, 256, 64}}}) {
    Problem p = makeProblem(sh.s, MaskKind::SameLength, false, 3);
    std::mt19937 rng(5);
    p.mask = makeMask(sh.s.q, sh.s.k, MaskKind::SameLength, rng, sh.s.k - sh.s.q);  // as enwik8's same_length
    const RelAttentionArgs a = p.args();
    relAttention(a);
    std::vector<double> times;  // per call: the median and the best (the machine may be shared)
    for (int r = 0; r < 200; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      relAttention(a);
      times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(times.begin(), times.end());
    const double ms = times[times.size() / 2], best = times.front();
    const RelAttentionShape& s = sh.s;
    const double flops = 6.0 * s.batch * s.heads * s.q * s.k * s.d;
    std::printf("rel_attention %-7s threads %d: median %.3f ms per call (%.1f GFLOP/s), best %.3f ms (%.1f GFLOP/s)\n",
                sh.name, omp_get_max_threads(), ms, flops / ms * 1e-6, best, flops / best * 1e-6);
    CHECK(std::isfinite(ms));
  }
}

// A generated token against 12 layers' keys, values and position tables
// (beyond the caches), one call per layer in turn: at bf16 the row-wise path
// (Bf16Rows table) against the block-wise pair path (Bf16Pairs table), at
// f32 the row-wise path (F32Rows table) against the block-wise one (F32
// table), alternated.
namespace {
void benchOneRow(const RelAttentionShape& s, bool bf16) {
  constexpr int kLayers = 12;
  std::vector<Problem> layers;
  for (int l = 0; l < kLayers; ++l) {
    Problem p = makeProblem(s, MaskKind::SameLength, false, 100 + l);
    std::mt19937 rng(5);
    p.mask = makeMask(s.q, s.k, MaskKind::SameLength, rng, s.k - s.q);
    if (bf16) {
      for (float x : p.kv) p.kv16.push_back(txl::ir::floatToBf16(x));
      const I d = s.d, dim = s.k + p.rtLead;
      for (I h = 0; h < s.heads; ++h) {
        for (I c = 0; c < d / 2; ++c)
          for (I j = 0; j < dim; ++j)
            p.rt2.push_back(std::uint32_t(txl::ir::floatToBf16(p.rt[(h * d + 2 * c) * dim + j])) |
                            std::uint32_t(txl::ir::floatToBf16(p.rt[(h * d + 2 * c + 1) * dim + j])) << 16);
      }
      p.rtRows = rowTable(p);
      p.kv.clear(), p.kv.shrink_to_fit(), p.rt.assign(1, 0.0f);
    } else {
      p.rtRowsF32 = rowTableF32(p);
    }
    layers.push_back(std::move(p));
  }
  const AttentionPath rowwisePath = bf16 ? kRows : kRowsF32, blockPath = bf16 ? kPairs : kBlocks;
  std::vector<double> rows, blocks;
  for (int r = 0; r < 60; ++r)
    for (bool rowwise : {true, false}) {
      const auto t0 = std::chrono::steady_clock::now();
      for (Problem& p : layers) relAttention(p.args(rowwise ? rowwisePath : blockPath));
      (rowwise ? rows : blocks)
          .push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
  for (auto* v : {&rows, &blocks}) std::sort(v->begin(), v->end());
  const double bytes = kLayers * double(s.batch) * s.heads * s.k * s.d * 2 * (bf16 ? 2 : 4);  // keys and values
  std::printf(
      "rel_attention, one row, %s, batch %lld, %lld keys, 12 layers, threads %d: row-wise median %.3f ms (%.1f GB/s), "
      "best %.3f; block-wise %s median %.3f ms (%.1f GB/s), best %.3f\n",
      bf16 ? "bf16" : "f32", static_cast<long long>(s.batch), static_cast<long long>(s.k), omp_get_max_threads(),
      rows[rows.size() / 2], bytes / rows[rows.size() / 2] * 1e-6, rows.front(), attentionPathName(blockPath),
      blocks[blocks.size() / 2], bytes / blocks[blocks.size() / 2] * 1e-6, blocks.front());
  CHECK(std::isfinite(rows.front()));
}
}  // namespace

TEST_CASE("rel_attention: one query row against state in memory", "[.bench]") {
  // enwik8 base: one stream at mem_len 2100, eight at mem_len 512 and 2100.
  for (const bool bf16 : {true, false}) {
    if (!relAttentionRuns(bf16 ? kRows : kRowsF32, {1, 8, 1, 2101, 64}, bf16)) continue;
    benchOneRow({1, 8, 1, 2101, 64}, bf16);
    benchOneRow({8, 8, 1, 513, 64}, bf16);
    benchOneRow({8, 8, 1, 2101, 64}, bf16);
  }
}
