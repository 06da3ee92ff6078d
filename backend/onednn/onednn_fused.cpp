// backend/onednn/onednn_fused.cpp - the oneDNN lowering of rel_scores, rel_attention,
// logprob_pick and fused_linear.
//
// rel_scores is an own kernel: per score row, one loop over the keys that the
// shifted BD row covers (a select between the mask value and
// scale * (ac + bd), which compilers vectorize), then one over the rest. BD
// is read at an offset of q - 1 - i inside its own row, so the pad / reshape
// copy of the reference shift never exists, and a masked entry is written
// from the mask value alone (NaN or garbage in BD cannot leak). With the
// row softmax fused, the row is normalized right after it is written, while
// it is in cache (scoreRow). Element j of an AC row is read only to write
// element j, so the plan lets the scores overwrite AC (shareInPlace,
// onednn_phases.h): no second [B, H, q, k] buffer, and no read-for-ownership
// of one.
//
// rel_attention runs backend/kernels/rel_attention.h's kernel on its operands where
// they are (k and v are column ranges of the memory window's rows), on the
// path attentionPath chooses here once per node; the step's name carries it
// ("txl:rel_attention:rows").
//
// logprob_pick is an own kernel too: rows split over the OpenMP team; a row
// whose target is in the op's range gets its log-sum-exp in one read of the
// logits (logSumExpRow), a row whose target is elsewhere is not read at all.
// Nothing of the logits' size is written.
//
// fused_linear is lowerLinear plus a post-op chain (the same weight-packing
// rule, Lowering::packsWeight): eltwise_relu, then
// binary_add with the residual as a dense [M, out] src1 (the form oneDNN 2.6
// keeps on brg:avx512_core; a broadcast src1 would fall back to ref:any).
#include "backend/onednn/onednn_fused.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <limits>

#include "backend/onednn/onednn_lowering.h"
#include "backend/platform.h"
#include "backend/kernels/rel_attention.h"
#include "backend/kernels/vector_exp.h"
#include "ir/check.h"

namespace txl::backend {

namespace kernels {

namespace {

// One score row: y[j] = value where m[j] != 0, else scale * (a[j] + b[j])
// (b read for j < covered, else 0); then with `softmax` the row's softmax:
// its max, exp and sum in one loop (own exp, vector_exp.h), the scale by
// 1 / sum. Cloned for AVX-512 (the rest of txlc targets baseline x86-64).
__attribute__((target_clones("avx512f", "default"))) void scoreRow(const float* a, const float* b, const float* m,
                                                                   std::int64_t k, std::int64_t covered, float scale,
                                                                   float value, bool softmax, float* y) {
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
#pragma omp simd
  for (std::int64_t j = 0; j < covered; ++j) y[j] = m[j] != 0.0f ? value : scale * (a[j] + b[j]);
#pragma omp simd
  for (std::int64_t j = covered; j < k; ++j) y[j] = m[j] != 0.0f ? value : scale * a[j];
  if (!softmax) return;
  float max = kNegInf;
#pragma omp simd reduction(max : max)
  for (std::int64_t j = 0; j < k; ++j) max = y[j] > max ? y[j] : max;
  if (max == kNegInf) {  // every key masked: NaN, as PyTorch's softmax gives
    for (std::int64_t j = 0; j < k; ++j) y[j] = std::numeric_limits<float>::quiet_NaN();
    return;
  }
  float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
  for (std::int64_t j = 0; j < k; ++j) {
    const float e = expNonPositive(y[j] - max);
    y[j] = e;
    sum += e;
  }
  const float inv = 1.0f / sum;
#pragma omp simd
  for (std::int64_t j = 0; j < k; ++j) y[j] *= inv;
}

// max(x) and log(sum(exp(x - max))) of one row, the row read once: per
// block of kBlock values (in L1 after its max loop) the block's max, the
// running sum rescaled when the max grows, then the block's exps summed
// (own exp, vector_exp.h; f32 within a block, double across blocks).
struct RowLse {
  float max;
  double logSum;
};

__attribute__((target_clones("avx512f", "default"))) RowLse logSumExpRow(const float* x, std::int64_t n) {
  constexpr std::int64_t kBlock = 2048;  // 8 KiB
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  float max = kNegInf;
  double sum = 0.0;
  for (std::int64_t b = 0; b < n; b += kBlock) {
    const float* xb = x + b;
    const std::int64_t len = std::min(kBlock, n - b);
    float blockMax = kNegInf;
#pragma omp simd reduction(max : blockMax)
    for (std::int64_t j = 0; j < len; ++j) blockMax = xb[j] > blockMax ? xb[j] : blockMax;
    if (blockMax > max) {
      sum *= std::exp(double(max) - double(blockMax));  // 0 while max is -inf
      max = blockMax;
    }
    if (max == kNegInf) continue;  // every value so far is -inf
    float blockSum = 0.0f;
#pragma omp simd reduction(+ : blockSum)
    for (std::int64_t j = 0; j < len; ++j) blockSum += expNonPositive(xb[j] - max);
    sum += blockSum;
  }
  return {max, std::log(sum)};
}

// log_softmax(row)[j] from the row's RowLse, in the reference's order:
// (x[j] - max) - log(sum). A row of -inf only gives NaN, as log_softmax does.
float logSoftmaxAt(const float* row, std::int64_t j, const RowLse& lse) {
  if (lse.max == -std::numeric_limits<float>::infinity()) return std::numeric_limits<float>::quiet_NaN();
  return float((double(row[j]) - double(lse.max)) - lse.logSum);
}

}  // namespace

void logprobPick(const float* x, std::int64_t n, const std::int64_t* idx, std::int64_t rows, const float* y,
                 std::int64_t m, const LogprobPickRange& range, float* out) {
  // Check every target first (nothing may throw inside the parallel
  // region), write the zeros of the rows whose target is elsewhere, and
  // count the rows that need work.
  const std::int64_t width = range.end - range.start;
  auto inRange = [&](std::int64_t p) { return idx[p] >= range.offset && idx[p] < range.offset + width; };
  std::int64_t hits = 0;
  for (std::int64_t p = 0; p < rows; ++p) {
    if (idx[p] < 0 || idx[p] >= range.classes)
      throw Error("logprob_pick: index " + std::to_string(idx[p]) + " at position " + std::to_string(p) +
                  " is outside [0, " + std::to_string(range.classes) + ")");
    if (inRange(p)) ++hits;
    else out[p] = 0.0f;
  }
  // Rows in range may cluster (all in the head, say): hand rows out one at a
  // time; below ~64K values a team costs more than it saves.
  const bool parallel = hits > 1 && hits * (n + m) >= (std::int64_t(1) << 16);
#pragma omp parallel for schedule(dynamic, 1) if (parallel)
  for (std::int64_t p = 0; p < rows; ++p) {
    if (!inRange(p)) continue;
    const std::int64_t t = idx[p] - range.offset;
    const float* xr = x + p * n;
    float v = logSoftmaxAt(xr, range.start + t, logSumExpRow(xr, n));
    if (y) {
      const float* yr = y + p * m;
      v += logSoftmaxAt(yr, range.column, logSumExpRow(yr, m));
    }
    out[p] = v;
  }
}

void logprobPickRows(const float* x, std::int64_t n, const std::int64_t* idx, const std::int64_t* positions,
                     std::int64_t count, const float* y, std::int64_t m, const LogprobPickRange& range, float* out) {
  const bool parallel = count > 1 && count * (n + m) >= (std::int64_t(1) << 16);  // as logprobPick
#pragma omp parallel for schedule(dynamic, 1) if (parallel)
  for (std::int64_t i = 0; i < count; ++i) {
    const std::int64_t p = positions[i];
    const float* xr = x + i * n;
    float v = logSoftmaxAt(xr, range.start + idx[p] - range.offset, logSumExpRow(xr, n));
    if (y) {
      const float* yr = y + p * m;
      v += logSoftmaxAt(yr, range.column, logSumExpRow(yr, m));
    }
    out[p] = v;
  }
}

void relScores(const float* ac, const float* bd, const float* mask, std::int64_t matrices, std::int64_t q,
               std::int64_t k, float scale, float value, bool softmax, float* out) {
  // Rows are independent: split them over the OpenMP team (oneDNN's own,
  // already running), in contiguous static chunks.
#pragma omp parallel for collapse(2) schedule(static)
  for (std::int64_t t = 0; t < matrices; ++t)
    for (std::int64_t i = 0; i < q; ++i) {
      const std::int64_t row = (t * q + i) * k;
      // b[j] = bd[i, j + q - 1 - i], inside the row for j < covered
      scoreRow(ac + row, bd + row + (q - 1 - i), mask + i * k, k, std::clamp<std::int64_t>(k - q + 1 + i, 0, k), scale,
               value, softmax, out + row);
    }
}

}  // namespace kernels

namespace onednn {

using dnnl::memory;

dnnl::matmul::primitive_desc fusedLinearPd(const dnnl::engine& eng, const ir::TensorType& x, const ir::TensorType& w,
                                           bool bias, bool residual, bool relu, bool anyWeights,
                                           std::optional<ir::DType> dst) {
  const std::int64_t in = w.shape[1], out = w.shape[0];
  const std::int64_t m = x.rank() == 0 ? 1 : x.numel() / std::max<std::int64_t>(in, 1);
  const ir::DType dstType = dst.value_or(x.dtype);
  memory::desc srcMd({m, in}, dnnlType(x.dtype), memory::dims{in, 1});
  memory::desc dstMd({m, out}, dnnlType(dstType), memory::dims{out, 1});
  memory::desc weightsMd =
      anyWeights ? memory::desc({in, out}, dnnlType(w.dtype), memory::format_tag::any) : linearPlainWeightsMd(w);
  dnnl::post_ops po;
  if (relu) po.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
  if (residual) po.append_binary(dnnl::algorithm::binary_add, dstMd);
  auto attr = scratchpadAttr();
  attr.set_post_ops(po);
  if (bias) {
    memory::desc biasMd({1, out}, dnnlType(dstType), memory::dims{out, 1});
    return {dnnl::matmul::desc(srcMd, weightsMd, biasMd, dstMd), attr, eng};
  }
  return {dnnl::matmul::desc(srcMd, weightsMd, dstMd), attr, eng};
}

void Lowering::lowerFusedLinear(ir::Node n, const std::vector<View>& ops, const View& out) {
  const auto& attrs = g_.op(n).attrs;
  const bool bias = attrs.getBool("bias"), residual = attrs.getBool("residual"), relu = attrs.getBool("relu");
  const View& x = ops[0];
  const View& w = ops[1];
  if (w.quantized) return lowerInt8Linear(n, ops, out);
  const bool constW = packsWeight(w);
  auto pd = fusedLinearPd(plan_.engine, x.type, w.type, bias, residual, relu, constW, out.type.dtype);
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, mem(x, pd.src_desc())}, {DNNL_ARG_DST, mem(out, pd.dst_desc())}};
  args[DNNL_ARG_WEIGHTS] = constW ? constantWeights(w, linearPlainWeightsMd(storedWeightType(w)), pd.weights_desc())
                                  : mem(w, pd.weights_desc());
  if (bias) args[DNNL_ARG_BIAS] = mem(ops[2], pd.bias_desc());
  if (residual) {
    const int index = relu ? 1 : 0;  // the binary post-op's position in the chain
    args[DNNL_ARG_ATTR_MULTIPLE_POST_OP(index) | DNNL_ARG_SRC_1] = mem(ops.back(), pd.dst_desc());
  }
  addPrimitive(n, pd, "matmul", std::move(args));
}

void Lowering::lowerRelScores(ir::Node n, const std::vector<View>& ops, const View& out) {
  const auto& attrs = g_.op(n).attrs;
  TXL_CHECK(out.type.dtype == ir::DType::F32 && ops[2].type.dtype == ir::DType::F32, "rel_scores takes f32 only");
  const std::int64_t q = out.type.shape[out.type.rank() - 2], k = out.type.shape[out.type.rank() - 1];
  if (out.type.numel() == 0) return;
  addKernel(n, "txl:rel_scores",
            [p = &plan_, ac = ops[0], bd = ops[1], mask = ops[2], out, q, k,
             scale = static_cast<float>(attrs.getFloat("scale")), value = static_cast<float>(attrs.getFloat("value")),
             softmax = attrs.getBool("softmax")] {
              kernels::relScores(reinterpret_cast<const float*>(p->ptr(ac)), reinterpret_cast<const float*>(p->ptr(bd)),
                                 reinterpret_cast<const float*>(p->ptr(mask)), out.type.numel() / (q * k), q, k, scale,
                                 value, softmax, reinterpret_cast<float*>(p->ptr(out)));
            });
}

namespace {

// The strides of a [positions, batch, heads, d] view whose d is contiguous.
kernels::RowStrides rowStrides(const View& v, const char* what) {
  const auto s = viewStrides(v);
  TXL_CHECK(s.size() == 4 && s[3] == 1, std::string("rel_attention: ") + what + " must have unit stride along D");
  return {s[0], s[1], s[2]};
}

// Query rows up to which the row-wise kernel runs (a generated token):
// every key, value and position row is then used once, and the block-wise
// kernels' transposes are pure overhead on a memory-bound call
// (rel_attention_rows.cpp). f32 keys take it with f32 position rows, bf16
// keys with bf16 ones.
constexpr std::int64_t kRowwiseRows = 1;
constexpr kernels::AttentionPath kRowsF32{kernels::AttentionKernel::Rows, kernels::PositionLayout::F32Rows};

}  // namespace

// The unfused lowering reads k and v in place through strided views at a
// few query rows (onednn_placement.cpp) and runs p · V on txl:gemv, where
// the kernel transposes every key block for one row: there it is the faster
// for f32 keys. The threshold (kMaxRowsForStridedMatMulOperand) rests on
// `txlc bench bench/enwik8_base.json --random-weights --prefill --qlen Q
// --profile` for Q = 1, 4, 8, 16 with and without --disable-pass
// fuse-attention (docs/LOG.md). With bf16 keys and values (a bf16 state
// window) the kernel is the faster at every row count: it widens them as it
// copies each key block, where the unfused lowering's f32 matmuls would need
// every key and value converted first, and it reads half the bytes. At one
// f32 row the row-wise kernel (no transposes, rows in address order) is the
// faster where the CPU runs it.
std::optional<std::string> unfusedAttentionReason(const kernels::RelAttentionShape& s, ir::DType kv) {
  if (!kernels::relAttentionSupports(s))
    return "the own rel_attention kernel takes a head size of at most 64, not " + std::to_string(s.d);
  const bool rowwise = s.q <= kRowwiseRows && kernels::relAttentionRuns(kRowsF32, s, false);
  if (s.q <= kMaxRowsForStridedMatMulOperand && kv == ir::DType::F32 && !rowwise)
    return "at " + std::to_string(s.q) +
           " query row(s) the unfused attention reads keys and values in place and is faster";
  return std::nullopt;
}

namespace {

// Query rows below which a core with AMX takes the pair products for bf16
// keys. On such a core (Sapphire Rapids and later) vdpbf16ps does no more
// products per cycle than two FMA ports, so once a widened key serves a few
// query rows the widening kernel (Blocks) is faster; with one to three rows
// each key is used about once, and widening it costs more than the pairs'
// packing. Measured there (enwik8 base at bf16, 2 threads, the attention
// per segment, pairs against widened, alternated): qlen 1 7.1-7.3 against
// 8.4-8.7 ms, qlen 4 10.1-10.2 against 10.2-11.1, qlen 16 14.6-16.2 against
// 14.0-14.2, qlen 80 43.5-45.3 against 34.7-36.7. On AVX512-BF16 without
// AMX (Cooper Lake) the pairs are faster at every row count.
constexpr std::int64_t kPairRowsWithAmx = 4;

}  // namespace

// A fixed rule by CPU feature and shape, not a timing taken at start: a
// machine always runs the same arithmetic.
kernels::AttentionPath attentionPath(const kernels::RelAttentionShape& s, bool kvBf16, bool packable) {
  using kernels::AttentionKernel, kernels::AttentionPath, kernels::PositionLayout;
  const auto runs = [&](const AttentionPath& p) { return kernels::relAttentionRuns(p, s, kvBf16); };
  if (!kvBf16 && packable && s.q <= kRowwiseRows && runs(kRowsF32)) return kRowsF32;
  if (kvBf16) {
    const AttentionPath rows{AttentionKernel::Rows, PositionLayout::Bf16Rows};
    if (packable && s.q <= kRowwiseRows && runs(rows)) return rows;
    if (!platform().amx || s.q < kPairRowsWithAmx) {
      const AttentionPath pairs{AttentionKernel::Pairs, PositionLayout::Bf16Pairs};
      if (packable && runs(pairs)) return pairs;
      const AttentionPath pairsF32{AttentionKernel::Pairs, PositionLayout::F32};
      if (runs(pairsF32)) return pairsF32;
    }
  }
  const AttentionPath blocks{AttentionKernel::Blocks, PositionLayout::F32};
  return runs(blocks) ? blocks : AttentionPath{AttentionKernel::Portable, PositionLayout::F32};
}

// Whether rt is fold-positions' constant table viewed as a suffix of its
// positions (each plan's view of the one table every plan shares), which
// the bf16 layouts below can pack once per model. Not for a table computed
// per segment or any other view. a.rt: rt's f32 strides.
bool Lowering::positionTableSuffix(const View& rt, const kernels::RelAttentionArgs& a) const {
  const std::int64_t lead = std::int64_t(rt.offset / sizeof(float));
  return isConstant(rt) && rt.offset % sizeof(float) == 0 && a.rt.head == a.shape.d * a.rt.step &&
         lead + a.shape.k == a.rt.step;
}

// The whole table (plainMd: its f32 layout) packed once per model through
// PackedWeights into `packedMd`, counted in the plan's constants.
const void* Lowering::packPositionTable(const View& rt, const memory::desc& plainMd, const memory::desc& packedMd) {
  const PackedWeights::Source source{plan_.buffers[rt.buffer].weight, 0};
  auto packed = packs_.get(plan_.ptr(rt) - rt.offset, plainMd, packedMd, plan_.engine, nullptr, &source);
  plan_.countShared(packed.get(), packedMd.get_size(), /*copy=*/true);  // the folded table stays
  plan_.packs.push_back(packed);
  return packed->mem.get_data_handle();
}

namespace {

// [heads, d, positions] in bf16 with d blocked by 2 innermost: element
// (h, c, p) at (h * pairs + c / 2) * 2 * positions + 2 * p + c % 2, pairs =
// (d + 1) / 2 (PositionLayout::Bf16Pairs). An odd d is padded to the next
// pair; a reorder into this layout writes the padding's zeros, as oneDNN
// does for every blocked layout with padded dimensions.
memory::desc bf16PairsMd(std::int64_t heads, std::int64_t d, std::int64_t positions) {
  const std::int64_t pairs = (d + 1) / 2;
  dnnl_memory_desc_t md{};
  md.ndims = 3;
  md.data_type = dnnl_bf16;
  md.format_kind = dnnl_blocked;
  const dnnl_dim_t dims[3] = {heads, d, positions}, padded[3] = {heads, 2 * pairs, positions};
  for (int i = 0; i < 3; ++i) md.dims[i] = dims[i], md.padded_dims[i] = padded[i];
  auto& blocking = md.format_desc.blocking;
  blocking.strides[0] = pairs * positions * 2;
  blocking.strides[1] = positions * 2;  // per pair
  blocking.strides[2] = 2;
  blocking.inner_nblks = 1;
  blocking.inner_blks[0] = 2;
  blocking.inner_idxs[0] = 1;
  return memory::desc(md);
}

// PositionTable::same of a suffix view starting `lead` positions into a
// table: the leading positions whose elements equal position 0's, bit for
// bit (clamped distances), counted from the view's first. The table holds
// `lines` runs of `count` elements of `size` bytes, `lineStride` bytes
// apart, and position p's element of a run is p * `positionStride` bytes
// into it.
std::int64_t clampedPrefix(const void* table, std::int64_t lines, std::int64_t lineStride, std::int64_t count,
                           std::size_t size, std::int64_t positionStride, std::int64_t positions, std::int64_t lead) {
  const auto* base = static_cast<const char*>(table);
  const auto sameAsFirst = [&](std::int64_t p) {
    for (std::int64_t line = 0; line < lines; ++line) {
      const char* run = base + line * lineStride;
      if (std::memcmp(run + p * positionStride, run, std::size_t(count) * size) != 0) return false;
    }
    return true;
  };
  std::int64_t same = 1;
  while (same < positions && sameAsFirst(same)) ++same;
  return std::max<std::int64_t>(0, same - lead);
}

}  // namespace

// rt (a positionTableSuffix, a.rt its f32 strides) in the packed layout of
// a.path: Bf16Pairs as [H, (D + 1) / 2, K, 2] bf16 (a 32-bit lane per pair of
// d, bf16PairsMd), Bf16Rows and F32Rows as [K, H, D] bf16 or f32 (a
// position's rows of every head contiguous, as a key's are in K).
kernels::PositionTable Lowering::packedPositionTable(const View& rt, const kernels::RelAttentionArgs& a) {
  const std::int64_t heads = a.shape.heads, d = a.shape.d, lead = std::int64_t(rt.offset / sizeof(float));
  const std::int64_t positions = a.rt.step;
  if (a.path.table == kernels::PositionLayout::Bf16Pairs) {
    const std::int64_t pairs = (d + 1) / 2;
    const memory::desc plainMd({heads, d, positions}, memory::data_type::f32, {a.rt.head, positions, 1});
    const auto* table =
        static_cast<const std::uint32_t*>(packPositionTable(rt, plainMd, bf16PairsMd(heads, d, positions)));
    return {table + lead, pairs * positions, positions,
            clampedPrefix(table, heads * pairs, positions * 4, 1, 4, 4, positions, lead)};
  }
  const bool f32 = a.path.table == kernels::PositionLayout::F32Rows;
  TXL_CHECK(f32 || a.path.table == kernels::PositionLayout::Bf16Rows, "rel_attention: no packed form of this table");
  const memory::desc plainMd({heads, positions, d}, memory::data_type::f32, {a.rt.head, 1, positions});
  const memory::desc rowsMd({heads, positions, d}, f32 ? memory::data_type::f32 : memory::data_type::bf16,
                            {d, heads * d, 1});
  const auto* table = static_cast<const char*>(packPositionTable(rt, plainMd, rowsMd));
  const std::int64_t rowBytes = heads * d * std::int64_t(f32 ? sizeof(float) : sizeof(std::uint16_t));
  return {table + lead * rowBytes, d, heads * d,
          clampedPrefix(table, 1, 0, 1, std::size_t(rowBytes), rowBytes, positions, lead)};
}

void Lowering::lowerRelAttention(ir::Node n, const std::vector<View>& ops, const View& out) {
  const ir::Shape& q = ops[0].type.shape;
  kernels::RelAttentionArgs a;
  a.shape = {q[1], q[2], q[0], ops[2].type.shape[0], q[3]};
  TXL_CHECK(kernels::relAttentionSupports(a.shape), "rel_attention: unsupported shape " + ops[0].type.str());
  a.quStrides = rowStrides(ops[0], "qu");
  a.qvStrides = rowStrides(ops[1], "qv");
  a.kStrides = rowStrides(ops[2], "k");
  a.vStrides = rowStrides(ops[3], "v");
  a.outStrides = rowStrides(out, "the result");
  const View& rt = ops[4];
  const auto rs = viewStrides(rt);
  TXL_CHECK(rs[2] == 1, "rel_attention: rt must have unit stride along K");
  a.rt = {nullptr, rs[0], rs[1]};  // f32, read in place (its address is known at run time)
  for (std::size_t i = 5; i < ops.size(); ++i) TXL_CHECK(ops[i].strides.empty(), "rel_attention: masks must be dense");
  a.scale = static_cast<float>(g_.op(n).attrs.getFloat("scale"));
  a.kvBf16 = ops[2].type.dtype == ir::DType::BF16;
  TXL_CHECK(ops[3].type.dtype == ops[2].type.dtype, "rel_attention: k and v of two dtypes");
  const bool suffix = positionTableSuffix(rt, a);
  a.path = attentionPath(a.shape, a.kvBf16, suffix);
  const bool tableInPlace = a.path.table == kernels::PositionLayout::F32;
  if (!tableInPlace) a.rt = packedPositionTable(rt, a);
  else if (suffix) {  // the f32 table [H * D runs of positions] read in place
    const std::int64_t lead = std::int64_t(rt.offset / sizeof(float)), positions = a.rt.step;
    a.rt.same = clampedPrefix(reinterpret_cast<const float*>(plan_.ptr(rt)) - lead, a.shape.heads * a.shape.d,
                              positions * 4, 1, sizeof(float), sizeof(float), positions, lead);
  }
  const bool padded = ops.size() == 7;
  addKernel(n, std::string("txl:rel_attention:") + kernels::attentionPathName(a.path),
            [p = &plan_, ops, out, a, padded, tableInPlace]() mutable {
              auto f32 = [p](const View& v) { return reinterpret_cast<float*>(p->ptr(v)); };
              a.qu = f32(ops[0]), a.qv = f32(ops[1]), a.k = p->ptr(ops[2]), a.v = p->ptr(ops[3]);
              if (tableInPlace) a.rt.data = f32(ops[4]);
              a.mask = f32(ops[5]);
              a.pad = padded ? f32(ops[6]) : nullptr;
              a.out = f32(out);
              kernels::relAttention(a);
            });
}

void Lowering::lowerLogprobPick(ir::Node n, const std::vector<View>& ops, const View& out) {
  const auto& attrs = g_.op(n).attrs;
  for (const View& v : ops) TXL_CHECK(v.strides.empty(), "logprob_pick reads dense operands only");
  const bool hasY = ops.size() == 3;
  const kernels::LogprobPickRange range{attrs.getInt("offset"), attrs.getInt("start"), attrs.getInt("end"),
                                        attrs.getInt("classes"), attrs.getInt("column", 0)};
  addKernel(n, "txl:logprob_pick",
            [p = &plan_, x = ops[0], idx = ops[1], y = hasY ? ops[2] : View{}, hasY, out, range] {
              kernels::logprobPick(reinterpret_cast<const float*>(p->ptr(x)), x.type.shape.back(),
                                   reinterpret_cast<const std::int64_t*>(p->ptr(idx)), out.type.numel(),
                                   hasY ? reinterpret_cast<const float*>(p->ptr(y)) : nullptr,
                                   hasY ? y.type.shape.back() : 0, range, reinterpret_cast<float*>(p->ptr(out)));
            });
}

}  // namespace onednn
}  // namespace txl::backend
