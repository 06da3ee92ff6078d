// backend/onednn/onednn_gathered_nll.cpp - the oneDNN lowering of
// logprob_pick_gathered (passes/gather_tail_clusters.cpp): one own kernel step
// that, per run,
//
//   1. checks every target and lists the positions whose target is in the
//      cluster's range (the others get 0),
//   2. copies their rows of x into a dense [count, d] block,
//   3. runs the cluster's products on those rows only: rows · proj (f32),
//      rounded to bf16 for a bf16 weight, then · wᵀ + bias,
//   4. takes each row's log-sum-exp and pick (kernels::logprobPickRows).
//
// The products use the kernels the ungathered graph uses for that cluster,
// so each row's logits are the same bits: for f32 and bf16 weights a oneDNN
// matmul (linearPd, the same weight-packing rule and packed copy as
// lowerLinear); an oneDNN brgemm matmul's row does not depend on the number
// of rows (checked by tests/passes/pipeline_numeric_test.cpp, pass on
// against pass off). A primitive has a fixed row count, so the step holds
// one per bucket of rows (1, 2, 4, 8, then steps of 8 growing by a quarter,
// up to the op's rows) and pads the gathered block with zero rows to the
// smallest bucket that holds it; a bucket's primitive is made when a run
// first needs it. A bucket whose primitive would want the weight in another
// packed layout than the largest's, or would run another implementation, is
// left out (its rows take a larger bucket). Int8 weights run lowerInt8Linear's kernels
// (backend/kernels/int8_linear.h, int8_vnni.h) on exactly the gathered rows:
// their rows do not depend on the other rows by contract. The projection at
// one row runs txl:gemv, as lowerMatMul does for [1, 1, d] · [d, e].
#include <algorithm>
#include <cstring>
#include <memory>
#include <string>

#include "backend/kernels/gemv.h"
#include "backend/kernels/int8_linear.h"
#include "backend/kernels/int8_vnni.h"
#include "backend/onednn/onednn_fused.h"
#include "backend/onednn/onednn_lowering.h"
#include "backend/onednn/onednn_probe.h"
#include "backend/platform.h"
#include "ir/bf16.h"
#include "ir/check.h"

namespace txl::backend::onednn {

using dnnl::memory;

namespace {

// Row counts with a primitive of their own: 1, 2, 4, 8, then multiples of 8
// growing by about a quarter, and `rows` itself.
std::vector<std::int64_t> rowBuckets(std::int64_t rows) {
  std::vector<std::int64_t> b;
  for (std::int64_t m = 1; m < rows;) {
    b.push_back(m);
    m = m < 8 ? 2 * m : m + std::max<std::int64_t>(8, (m / 4 + 7) / 8 * 8);
  }
  b.push_back(rows);
  return b;
}

// One bucket's products: a primitive descriptor now, the primitive on first use.
struct Product {
  dnnl::matmul::primitive_desc pd;
  std::unordered_map<int, memory> args;
  std::optional<dnnl::primitive> primitive;
  void run(const dnnl::stream& s) {
    if (!primitive) primitive.emplace(pd);
    primitive->execute(s, args);
  }
};

struct Bucket {
  std::int64_t rows = 0;
  std::optional<Product> proj, linear;
};

}  // namespace

void Lowering::lowerLogprobPickGathered(ir::Node n, const std::vector<View>& ops, const View& out) {
  const auto& attrs = g_.op(n).attrs;
  const bool hasBias = attrs.getBool("bias"), hasProj = attrs.getBool("proj"), hasY = attrs.has("column");
  const View& x = ops[0];
  const View& w = ops[1];
  const View& idx = ops[2];
  const std::optional<View> bias = hasBias ? std::optional<View>(ops[3]) : std::nullopt;
  const std::optional<View> y = hasY ? std::optional<View>(ops[3 + std::size_t(hasBias)]) : std::nullopt;
  const std::optional<View> proj = hasProj ? std::optional<View>(ops.back()) : std::nullopt;
  for (const View* v : {&x, &idx, &out})
    TXL_CHECK(v->strides.empty(), "logprob_pick_gathered reads and writes dense values only");
  if (y) TXL_CHECK(y->strides.empty(), "logprob_pick_gathered: y must be dense");
  if (proj) TXL_CHECK(proj->strides.empty() && !proj->storedAs, "logprob_pick_gathered: proj must be dense f32");
  const std::int64_t rows = out.type.numel(), d = x.type.shape.back(), e = w.type.shape[1], classes = w.type.shape[0];
  const kernels::LogprobPickRange range{attrs.getInt("offset"), attrs.getInt("start"), attrs.getInt("end"),
                                        attrs.getInt("classes"), attrs.getInt("column", 0)};
  if (rows == 0) return;
  const bool int8 = w.quantized;
  const ir::DType inType = int8 ? ir::DType::F32 : w.type.dtype;  // the linear's input dtype
  // Temporaries, live during this step only.
  const View gathered = temp({ir::DType::F32, {rows, d}});
  const View projected = proj ? temp({ir::DType::F32, {rows, e}}) : gathered;
  const View linearIn = inType == ir::DType::BF16 ? temp({ir::DType::BF16, {rows, e}}) : projected;
  const View logits = temp({ir::DType::F32, {rows, classes}});
  auto at = [](const View& v, std::int64_t m) {  // v's first m rows as a dense [m, cols] view
    View r = v;
    r.type.shape = {m, v.type.shape.back()};
    return r;
  };

  // The products per bucket (f32 and bf16 weights: oneDNN).
  auto buckets = std::make_shared<std::vector<Bucket>>();
  std::size_t scratch = 0;
  std::optional<memory> weights;
  const bool constW = !int8 && packsWeight(w);
  const bool gemvProj = proj && rows == 1 && opt_.ownGemv;  // lowerMatMul's choice at one row
  const std::vector<std::int64_t> sizes = rowBuckets(rows);
  std::string linearImpl, projImpl;                           // the largest bucket's, which every bucket must share
  for (auto it = sizes.rbegin(); it != sizes.rend(); ++it) {  // the largest first: it decides the packed layout
    const std::int64_t m = *it;
    const bool largest = m == rows;
    Bucket b;
    b.rows = m;
    if (!int8) {
      auto pd = linearPd(plan_.engine, {inType, {m, e}}, w.type, hasBias, constW, ir::DType::F32);
      if (largest) {  // the layout and kernel of the ungathered linear
        const memory::desc plainMd = linearPlainWeightsMd(storedWeightType(w));
        weights = constW ? constantWeights(w, plainMd, pd.weights_desc()) : mem(w, pd.weights_desc());
        linearImpl = pd.impl_info_str();
      } else if (pd.weights_desc() != weights->get_desc() || pd.impl_info_str() != linearImpl) {
        continue;  // another layout or kernel: its rows take a larger bucket
      }
      std::unordered_map<int, memory> args{{DNNL_ARG_SRC, mem(at(linearIn, m), pd.src_desc())},
                                           {DNNL_ARG_WEIGHTS, *weights},
                                           {DNNL_ARG_DST, mem(at(logits, m), pd.dst_desc())}};
      if (bias) args[DNNL_ARG_BIAS] = mem(*bias, pd.bias_desc());
      b.linear = Product{pd, std::move(args), std::nullopt};
    }
    if (proj && !gemvProj) {
      const memory::desc src({m, d}, memory::data_type::f32, memory::dims{d, 1});
      const memory::desc wts({d, e}, memory::data_type::f32, memory::dims{e, 1});
      const memory::desc dst({m, e}, memory::data_type::f32, memory::dims{e, 1});
      dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(src, wts, dst), scratchpadAttr(), plan_.engine);
      if (largest) projImpl = pd.impl_info_str();
      else if (pd.impl_info_str() != projImpl) continue;
      b.proj = Product{pd,
                       {{DNNL_ARG_SRC, mem(at(gathered, m), src)},
                        {DNNL_ARG_WEIGHTS, mem(*proj, wts)},
                        {DNNL_ARG_DST, mem(at(projected, m), dst)}},
                       std::nullopt};
    }
    for (const auto* p : {&b.proj, &b.linear})
      if (*p) scratch = std::max(scratch, (*p)->pd.scratchpad_desc().get_size());
    buckets->push_back(std::move(b));
  }
  std::reverse(buckets->begin(), buckets->end());  // the smallest first, for the run's search
  if (scratch > 0) {  // one scratchpad for every bucket's primitives, live during this step
    const View pad{plan_.addArenaValue(label("scratchpad"), scratch, step_, step_), 0, {}};
    for (Bucket& b : *buckets)
      for (auto* p : {&b.proj, &b.linear})
        if (*p) (*p)->args[DNNL_ARG_SCRATCHPAD] = mem(pad, (*p)->pd.scratchpad_desc());
  }

  // Int8 weights: lowerInt8Linear's kernel choice, on the gathered rows.
  std::shared_ptr<const kernels::Int8Rows> int8Rows;
  std::shared_ptr<const kernels::Int8Vnni> int8Vnni;
  if (int8) {
    TXL_CHECK(w.strides.empty() && w.type.rank() == 2 && w.type.dtype == ir::DType::F32,
              "int8 rows of " + w.type.str());
    if (int8Activations(g_.operand(n, 0), x, e)) {
      int8Vnni = int8VnniWeights(w, e);
    } else {
      int8Rows = int8Weights(w);
    }
  }

  auto positions = std::make_shared<std::vector<std::int64_t>>();
  positions->reserve(std::size_t(rows));
  const std::string name = std::string("txl:logprob_pick_gathered:") +
                           (int8 ? (int8Vnni ? "int8_vnni" : "int8") : (inType == ir::DType::BF16 ? "bf16" : "f32"));
  addKernel(
      n, name,
      [p = &plan_, x, idx, y, bias, proj, out, gathered, projected, linearIn, logits, buckets, positions, int8Rows,
       int8Vnni, gemvProj, rows, d, e, classes, range, bf16 = inType == ir::DType::BF16, t = threadCount()] {
        const auto* ids = reinterpret_cast<const std::int64_t*>(p->ptr(idx));
        auto* result = reinterpret_cast<float*>(p->ptr(out));
        // 1. The positions in range; every target checked first (as logprobPick).
        const std::int64_t width = range.end - range.start;
        positions->clear();
        for (std::int64_t i = 0; i < rows; ++i) {
          if (ids[i] < 0 || ids[i] >= range.classes)
            throw Error("logprob_pick: index " + std::to_string(ids[i]) + " at position " + std::to_string(i) +
                        " is outside [0, " + std::to_string(range.classes) + ")");
          result[i] = 0.0f;
          if (ids[i] >= range.offset && ids[i] < range.offset + width) positions->push_back(i);
        }
        const auto count = std::int64_t(positions->size());
        if (count == 0) return;
        // 2. Their rows, padded with zero rows to the bucket's count.
        Bucket* bucket = nullptr;
        for (Bucket& b : *buckets)
          if (b.rows >= count) {
            bucket = &b;
            break;
          }
        const std::int64_t m = bucket->rows;
        const auto* xs = reinterpret_cast<const float*>(p->ptr(x));
        auto* g = reinterpret_cast<float*>(p->ptr(gathered));
        for (std::int64_t i = 0; i < count; ++i)
          std::memcpy(g + i * d, xs + (*positions)[std::size_t(i)] * d, std::size_t(d) * sizeof(float));
        std::fill(g + count * d, g + m * d, 0.0f);
        // 3. The cluster's products on m rows.
        if (proj) {
          if (gemvProj) {
            kernels::GemvLayout l;
            l.k = d, l.n = e, l.aK = 1, l.bK = e, l.a = {0}, l.b = {0}, l.c = {0};
            kernels::gemv(g, reinterpret_cast<const float*>(p->ptr(*proj)), reinterpret_cast<float*>(p->ptr(projected)),
                          l, t);
          } else {
            bucket->proj->run(p->stream);
            p->stream.wait();
          }
        }
        if (bf16) ir::convertFloats(ir::DType::F32, p->ptr(projected), ir::DType::BF16, p->ptr(linearIn), m * e);
        if (int8Rows || int8Vnni) {
          kernels::Int8LinearArgs a;
          a.x = reinterpret_cast<const float*>(p->ptr(linearIn));
          a.rows = count;
          if (bias) a.bias = reinterpret_cast<const float*>(p->ptr(*bias));
          a.y = p->ptr(logits);
          if (int8Vnni) kernels::int8LinearVnni(*int8Vnni, a, t);
          else kernels::int8Linear(*int8Rows, a, t);
        } else {
          bucket->linear->run(p->stream);
          p->stream.wait();
        }
        // 4. Each row's log-sum-exp and pick.
        kernels::logprobPickRows(reinterpret_cast<const float*>(p->ptr(logits)), classes, ids, positions->data(), count,
                                 y ? reinterpret_cast<const float*>(p->ptr(*y)) : nullptr, y ? y->type.shape.back() : 0,
                                 range, result);
      });
}

}  // namespace txl::backend::onednn
