// tests/backend/onednn_executor_test.cpp - every op lowered to oneDNN, run on
// small graphs and compared with the reference interpreter on seeded random
// data; the implementations oneDNN picks for transformer-sized primitives.
#include <catch2/catch.hpp>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "backend/kernels/int8_linear.h"
#include "backend/kernels/int8_vnni.h"
#include "backend/onednn/onednn_executor.h"
#include "backend/onednn/onednn_lowering.h"
#include "backend/onednn/onednn_target_info.h"
#include "backend/platform.h"
#include "backend/reference/reference_interpreter.h"
#include "ir/check.h"
#include "ir/graph.h"
#include "ir/int8.h"

using namespace txl;
using namespace txl::backend;
using ir::DType;
using ir::Node;
using ir::OpKind;
using ir::Shape;
using ir::Tensor;

namespace {

using I = std::int64_t;
constexpr float kInf = std::numeric_limits<float>::infinity();

Tensor randomF32(const Shape& shape, std::uint32_t seed) {
  Tensor t = Tensor::zeros({DType::F32, shape});
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (float& v : t.span<float>()) v = dist(rng);
  return t;
}

Tensor randomI64(const Shape& shape, I lo, I hi, std::uint32_t seed) {
  Tensor t = Tensor::zeros({DType::I64, shape});
  std::mt19937 rng(seed);
  std::uniform_int_distribution<I> dist(lo, hi);
  for (I& v : t.span<I>()) v = dist(rng);
  return t;
}

// Random data for every input, mem_read and weight of `g` that `given` lacks.
void fillRandom(const ir::Graph& g, TensorMap& inputs, TensorMap& weights) {
  std::uint32_t seed = 1;
  for (Node n : g.nodes()) {
    const auto& op = g.op(n);
    TensorMap* map = nullptr;
    std::string name;
    if (op.kind == OpKind::Input) map = &inputs, name = op.attrs.getString("name");
    if (op.kind == OpKind::MemRead) map = &inputs, name = memName(op.attrs.getInt("slot"));
    if (op.kind == OpKind::Weight) map = &weights, name = op.attrs.getString("name");
    if (!map || map->count(name)) continue;
    (*map)[name] =
        op.type->dtype == DType::I64 ? randomI64(op.type->shape, 0, 3, seed++) : randomF32(op.type->shape, seed++);
  }
}

// Runs `g` on both executors and checks every output: same type, every
// element within 1e-5 relative (1e-5 absolute near zero); infinities equal.
// The oneDNN executor takes `base`'s options but for its thread settings.
std::unique_ptr<CompiledGraph> compareWithReference(const ir::Graph& g, TensorMap inputs = {}, TensorMap weights = {},
                                                    const OnednnOptions& base = {}) {
  fillRandom(g, inputs, weights);
  auto refPlan = makeReferenceExecutor()->compile(g, weights);
  const TensorMap want = refPlan->run(inputs);
  // Every step in both thread variants (ThreadPolicy::Auto), whose first
  // three runs take the loaded, idle and loaded variant
  // (backend/onednn/thread_policy.h), then every step on the thread team,
  // then every step on one thread (serial small steps: the primitives are
  // created for one thread); the last plan is returned.
  std::unique_ptr<CompiledGraph> plan;
  for (const double serialBelowNs : {-1.0, 0.0, 1e18}) {
    OnednnOptions options = base;
    options.threadPolicy = serialBelowNs < 0 ? ThreadPolicy::Auto : ThreadPolicy::Loaded;
    options.serialBelowNs = serialBelowNs < 0 ? 1e18 : serialBelowNs;
    options.idleSerialBelowNs = 0;
    plan = makeOnednnExecutor(options)->compile(g, weights);
    for (int round = 0; round < 3; ++round) {  // later runs must give the same answer
      INFO("serialBelowNs " << serialBelowNs);
      const TensorMap& got = plan->run(inputs);
      REQUIRE(got.size() == want.size());
      for (const auto& [name, w] : want) {
        INFO("output " << name << " (run " << round << ")");
        REQUIRE(got.count(name));
        const Tensor& t = got.at(name);
        REQUIRE(t.type() == w.type());
        if (w.dtype() == DType::I64) {
          for (I i = 0; i < w.numel(); ++i) REQUIRE(t.data<I>()[i] == w.data<I>()[i]);
          continue;
        }
        for (I i = 0; i < w.numel(); ++i) {
          const float a = t.data<float>()[i], b = w.data<float>()[i];
          INFO("element " << i << ": onednn " << a << ", reference " << b);
          if (std::isinf(b) || std::isnan(b)) REQUIRE((a == b || (std::isnan(a) && std::isnan(b))));
          else REQUIRE(std::fabs(a - b) <= 1e-5f * std::max(1.0f, std::fabs(b)));
        }
      }
    }
  }
  return plan;
}

const std::vector<StepInfo>& stepsOf(const CompiledGraph& plan) {
  return dynamic_cast<const OnednnCompiledGraph&>(plan).steps();
}

ir::TensorType f32(Shape s) { return {DType::F32, std::move(s)}; }
ir::TensorType i64(Shape s) { return {DType::I64, std::move(s)}; }

// rel_attention over a [k, batch 1, 2 heads, 2 d] key-value window (k =
// mlen + q; bf16 when bf16), q rows of qu and qv, and a position table
// [heads, d, k + 4] (a weight or an input) viewed from its position 4.
ir::Graph attentionGraph(I q, I mlen, I dim, bool bf16, bool weightTable, bool sameLength) {
  const I batch = 1, heads = 2, k = mlen + q;
  ir::Graph g;
  Node kv = g.addInput("kv", f32({k, batch, heads, 2 * dim}));
  if (bf16) kv = g.add(OpKind::Convert, {kv}, {{"dtype", std::string("bf16")}});
  const auto half = [&](I start) {
    return g.add(OpKind::Slice, {kv}, {{"axis", I(3)}, {"start", start}, {"end", start + dim}});
  };
  const Node qu = g.addInput("qu", f32({q, batch, heads, dim})), qv = g.addInput("qv", f32({q, batch, heads, dim}));
  const Node table =
      weightTable ? g.addWeight("table", f32({heads, dim, k + 4})) : g.addInput("table", f32({heads, dim, k + 4}));
  const Node rt = g.add(OpKind::Slice, {table}, {{"axis", I(2)}, {"start", I(4)}, {"end", k + 4}});
  const Node mask =
      g.add(OpKind::AttnMask, {}, {{"qlen", q}, {"mlen", mlen}, {"mem_len", mlen}, {"same_length", sameLength}});
  g.addOutput("y", g.add(OpKind::RelAttention, {qu, qv, half(0), half(dim), rt, mask}, {{"scale", 0.4}}));
  return g;
}

// The attention's output y against the reference executor's: pair products
// (bf16) round qu, qv, the table and the probabilities to bf16, within 2^-6
// of the outputs' largest magnitude; f32 within 1e-4 of it.
void requireNearReference(const Tensor& y, const Tensor& want, bool bf16) {
  float largest = 0;
  for (I i = 0; i < y.numel(); ++i) largest = std::max(largest, std::abs(want.data<float>()[i]));
  for (I i = 0; i < y.numel(); ++i)
    REQUIRE(std::abs(y.data<float>()[i] - want.data<float>()[i]) <= (bf16 ? 1.0f / 64 : 1e-4f) * largest);
}

}  // namespace

TEST_CASE("onednn: add, sub, mul broadcast either way", "[onednn]") {
  struct Shapes {
    Shape a, b;
  };
  const std::vector<Shapes> cases = {
      {{2, 3, 4}, {2, 3, 4}}, {{2, 3, 4}, {4}},       {{2, 3, 4}, {3, 1}}, {{4}, {2, 3, 4}},
      {{3, 1}, {2, 1, 4}},    {{2, 1, 4}, {2, 3, 1}}, {{}, {5}},           {{5, 1, 3}, {5, 7, 3}}};
  for (OpKind kind : {OpKind::Add, OpKind::Sub, OpKind::Mul})
    for (const auto& c : cases) {
      INFO(ir::opInfo(kind).name << " " << ir::shapeStr(c.a) << " " << ir::shapeStr(c.b));
      ir::Graph g;
      g.addOutput("y", g.add(kind, {g.addInput("a", f32(c.a)), g.addInput("b", f32(c.b))}));
      compareWithReference(g);
    }
}

TEST_CASE("onednn: i64 add, sub, mul run as own kernels", "[onednn]") {
  for (OpKind kind : {OpKind::Add, OpKind::Sub, OpKind::Mul}) {
    ir::Graph g;
    g.addOutput("y", g.add(kind, {g.addInput("a", i64({2, 3})), g.addInput("b", i64({3}))}));
    compareWithReference(g);
  }
}

TEST_CASE("onednn: scale, relu, masked_fill", "[onednn]") {
  ir::Graph g;
  Node x = g.addInput("x", f32({3, 5, 2}));
  g.addOutput("scaled", g.add(OpKind::Scale, {x}, {{"factor", 0.125}}));
  g.addOutput("relu", g.add(OpKind::Relu, {x}));
  Node mask = g.add(OpKind::AttnMask, {}, {{"qlen", I(3)}, {"mlen", I(2)}, {"mem_len", I(2)}, {"same_length", false}});
  Node scores = g.addInput("s", f32({3, 5, 2, 4}));
  Node mask4 = g.add(OpKind::Reshape, {mask}, {{"shape", std::vector<I>{3, 5, 1, 1}}});
  g.addOutput("filled", g.add(OpKind::MaskedFill, {scores, mask4}, {{"value", -kInf}}));
  g.addOutput("filled_i64", g.add(OpKind::MaskedFill, {x, g.addInput("m", i64({5, 1}))}, {{"value", 7.5}}));
  g.addOutput("filled_rt", g.add(OpKind::MaskedFill, {x, g.addInput("mf", f32({5, 2}))}, {{"value", kInf}}));
  auto plan = compareWithReference(g);
  // The constant -inf mask runs as a binary min; the run-time masks on the own kernel.
  int kernels = 0, binaries = 0;
  for (const auto& s : stepsOf(*plan))
    if (s.op == "masked_fill") (s.primitive == "binary" ? binaries : kernels) += 1;
  CHECK(binaries == 1);
  CHECK(kernels == 2);
}

TEST_CASE("onednn: concat, including an empty memory", "[onednn]") {
  ir::Graph g;
  Node m = g.addInput("m", f32({0, 2, 3}));
  Node h = g.addInput("h", f32({4, 2, 3}));
  g.addOutput("c0", g.add(OpKind::Concat, {m, h}, {{"axis", I(0)}}));
  Node a = g.addInput("a", f32({4, 1, 3}));
  g.addOutput("c1", g.add(OpKind::Concat, {h, a, h}, {{"axis", I(1)}}));
  g.addOutput("c2", g.add(OpKind::Concat, {h, h}, {{"axis", I(-1)}}));
  g.addOutput("ci",
              g.add(OpKind::Concat, {g.addInput("t", i64({2, 3})), g.addInput("u", i64({2, 1}))}, {{"axis", I(1)}}));
  compareWithReference(g);
}

TEST_CASE("onednn: slice, reshape, permute with non-trivial strides", "[onednn]") {
  ir::Graph g;
  Node x = g.addInput("x", f32({6, 2, 15}));
  Node lin = g.add(OpKind::Scale, {x}, {{"factor", 2.0}});  // an arena value, so slices can alias it
  g.addOutput("rows", g.add(OpKind::Slice, {lin}, {{"axis", I(0)}, {"start", I(2)}, {"end", I(5)}}));
  Node k = g.add(OpKind::Slice, {lin}, {{"axis", I(2)}, {"start", I(5)}, {"end", I(10)}});
  Node heads = g.add(OpKind::Reshape, {k}, {{"shape", std::vector<I>{6, 2, 1, 5}}});
  g.addOutput("perm", g.add(OpKind::Permute, {heads}, {{"perm", std::vector<I>{1, 2, 0, 3}}}));
  g.addOutput("mid", g.add(OpKind::Slice, {x}, {{"axis", I(1)}, {"start", I(1)}, {"end", I(2)}}));
  g.addOutput("input_rows", g.add(OpKind::Slice, {x}, {{"axis", I(0)}, {"start", I(4)}, {"end", I(6)}}));
  g.addOutput("input_itself", x);
  Node ids = g.addInput("ids", i64({4, 3}));
  g.addOutput("ids_t", g.add(OpKind::Permute, {ids}, {{"perm", std::vector<I>{1, 0}}}));
  g.addOutput("ids_s", g.add(OpKind::Slice, {ids}, {{"axis", I(1)}, {"start", I(1)}, {"end", I(3)}}));
  compareWithReference(g);
}

TEST_CASE("onednn: pad before and after an axis", "[onednn]") {
  ir::Graph g;
  Node x = g.addInput("x", f32({3, 4, 2}));
  g.addOutput("p1", g.add(OpKind::Pad, {x}, {{"axis", I(1)}, {"before", I(1)}, {"after", I(2)}, {"value", 0.0}}));
  g.addOutput("p0", g.add(OpKind::Pad, {x}, {{"axis", I(0)}, {"before", I(0)}, {"after", I(1)}, {"value", -1.5}}));
  g.addOutput("p2", g.add(OpKind::Pad, {x}, {{"axis", I(-1)}, {"before", I(2)}, {"after", I(0)}, {"value", 3.0}}));
  compareWithReference(g);
}

TEST_CASE("onednn: embedding with an id range, pick", "[onednn]") {
  ir::Graph g;
  Node table = g.addWeight("emb", f32({5, 6}));
  Node ids = g.addInput("ids", i64({3, 2}));
  g.addOutput("e", g.add(OpKind::Embedding, {table, ids}, {{"lo", I(2)}}));
  Node x = g.addInput("x", f32({3, 2, 9}));
  g.addOutput("p", g.add(OpKind::Pick, {x, g.addInput("idx", i64({3, 2}))}));
  TensorMap inputs{{"ids", randomI64({3, 2}, 0, 9, 7)}, {"idx", randomI64({3, 2}, 0, 8, 8)}};
  compareWithReference(g, inputs);

  inputs["idx"].data<I>()[3] = 9;
  TensorMap weights{{"emb", randomF32({5, 6}, 1)}};
  fillRandom(g, inputs, weights);
  auto plan = makeOnednnExecutor()->compile(g, weights);
  CHECK_THROWS_AS(plan->run(inputs), Error);
}

TEST_CASE("onednn: linear with and without bias, odd sizes, runtime weights", "[onednn]") {
  ir::Graph g;
  Node x = g.addInput("x", f32({4, 3, 5}));
  Node w = g.addWeight("w", f32({7, 5}));
  g.addOutput("y", g.add(OpKind::Linear, {x, w, g.addWeight("b", f32({7}))}));
  g.addOutput("z", g.add(OpKind::Linear, {x, w}));
  Node w2 = g.add(OpKind::Scale, {g.addInput("w2", f32({3, 5}))}, {{"factor", 1.0}});  // not a constant
  g.addOutput("r", g.add(OpKind::Linear, {x, w2}));
  g.addOutput("v", g.add(OpKind::Linear, {g.addInput("v", f32({5})), w}));
  auto plan = compareWithReference(g);
  for (const auto& s : stepsOf(*plan))
    if (s.op == "linear") CHECK(s.impl.rfind("ref", 0) != 0);
}

TEST_CASE("onednn: linears over quantized weights run txl:int8_linear, epilogues included", "[onednn]") {
  ir::Graph g;
  Node x = g.addInput("x", f32({4, 3, 37}));
  Node w = g.add(OpKind::Quantize, {g.addWeight("w", f32({21, 37}))});
  const ir::Attrs toF32{{"out_dtype", std::string("f32")}};
  g.addOutput("y", g.add(OpKind::Linear, {x, w, g.addWeight("b", f32({21}))}, toF32));
  g.addOutput("z", g.add(OpKind::Linear, {g.addInput("v", f32({37})), w}, toF32));  // one row
  Node w2 = g.add(OpKind::Quantize, {g.addWeight("w2", f32({37, 37}))});
  g.addOutput("f", g.add(OpKind::FusedLinear, {x, w2, g.addWeight("b2", f32({37})), x},
                         {{"bias", true}, {"relu", true}, {"residual", true}, {"out_dtype", std::string("f32")}}));
  // f32 activations: the reference's arithmetic (int8 weights' values times
  // f32 inputs) up to the order of the sums.
  OnednnOptions f32Activations;
  f32Activations.int8Activations = false;
  auto plan = compareWithReference(g, {}, {}, f32Activations);
  int int8 = 0;
  for (const auto& s : stepsOf(*plan)) {
    CHECK(s.op != "quantize");  // quantized as the linears pack their weights
    int8 += s.impl == "txl:int8_linear";
  }
  CHECK(int8 == 3);
}

namespace {

// linear(x, quantize(w)) + bias, relu, + residual as int8LinearVnni's scalar
// form computes it over the weight's int8 rows: x [rows, k], w [n, k].
std::vector<float> vnniScalar(const Tensor& x, const Tensor& w, const float* bias, const float* residual, bool relu) {
  const I n = w.shape()[0], k = w.shape()[1], rows = x.numel() / k;
  kernels::Int8Rows q = kernels::allocateInt8Rows(n, k);
  kernels::quantizeInt8Rows(w.data<float>(), 0, n, q, 1);
  const auto packed = kernels::packInt8Vnni(q, 1);
  std::vector<float> y(std::size_t(rows * n));
  kernels::int8LinearVnniPortable(*packed, {x.data<float>(), rows, bias, residual, relu, y.data(), false});
  return y;
}

// The most an output of linear(x, quantize(w)) moves when each activation
// row is rounded as int8_vnni.h defines: half the row's step (its span with
// zero over 255) times Σ_j |ŵ[c, j]| of the weight's int8 values ŵ, plus the
// f32 rounding of the sums (relative to Σ_j |x[j] ŵ[c, j]|).
double activationBound(const float* x, const Tensor& wq, I c) {
  const I k = wq.shape()[1];
  float lo = 0, hi = 0;
  for (I j = 0; j < k; ++j) lo = std::min(lo, x[j]), hi = std::max(hi, x[j]);
  const double step = (double(hi) - double(lo)) / 255;
  double weights = 0, products = 0;
  for (I j = 0; j < k; ++j) {
    const double wj = std::fabs(double(wq.data<float>()[c * k + j]));
    weights += wj;
    products += wj * std::fabs(double(x[j]));
  }
  return 0.5 * step * weights * 1.0001 + 1e-5 * products + 1e-6;
}

}  // namespace

TEST_CASE("onednn: int8 activations: rows quantized on VNNI, exact against the kernel, within the rounding's bound",
          "[onednn]") {
  const I n = 21, k = 37, rows = 12;
  ir::Graph g;
  Node x = g.addInput("x", f32({4, 3, k}));
  Node w = g.add(OpKind::Quantize, {g.addWeight("w", f32({n, k}))});
  const ir::Attrs toF32{{"out_dtype", std::string("f32")}};
  Node bias = g.addWeight("b", f32({n}));
  g.addOutput("y", g.add(OpKind::Linear, {x, w, bias}, toF32));
  // One row (a generated token's linear): the same kernel and sums as a row of many.
  g.addOutput("z", g.add(OpKind::Linear, {g.addInput("v", f32({k})), w, bias}, toF32));
  Node w2 = g.add(OpKind::Quantize, {g.addWeight("w2", f32({k, k}))});
  g.addOutput("f", g.add(OpKind::FusedLinear, {x, w2, g.addWeight("b2", f32({k})), x},
                         {{"bias", true}, {"relu", true}, {"residual", true}, {"out_dtype", std::string("f32")}}));
  TensorMap inputs, weights;
  fillRandom(g, inputs, weights);
  for (I j = 0; j < k; ++j)
    inputs.at("x").data<float>()[j] = std::fabs(inputs.at("x").data<float>()[j]);  // a ReLU's row
  std::copy_n(inputs.at("x").data<float>(), k, inputs.at("v").data<float>());      // v = x's first row
  const TensorMap want = makeReferenceExecutor()->compile(g, weights)->run(inputs);
  const Tensor wq = ir::int8RoundTrip(weights.at("w")), w2q = ir::int8RoundTrip(weights.at("w2"));
  const bool vnni = platform().avx512Vnni;
  INFO("AVX512-VNNI: " << vnni);
  for (const int threads : {1, 2}) {
    OnednnOptions options;
    options.threadPolicy = ThreadPolicy::Loaded;
    options.serialBelowNs = threads == 1 ? 1e18 : 0;
    auto plan = makeOnednnExecutor(options)->compile(g, weights);
    std::vector<std::string> impls;
    for (const auto& s : stepsOf(*plan))
      if (s.op == "linear" || s.op == "fused_linear") impls.push_back(s.impl);
    const std::string many = vnni ? "txl:int8_linear:vnni" : "txl:int8_linear";
    CHECK(impls == std::vector<std::string>{many, many, many});
    const TensorMap& got = plan->run(inputs);
    // The one row gives the bits of the same row among many.
    REQUIRE(std::memcmp(got.at("z").data<float>(), got.at("y").data<float>(), n * sizeof(float)) == 0);
    if (!vnni) continue;  // the widening kernel: compareWithReference's cases
    const float* xs = inputs.at("x").data<float>();
    const auto y = vnniScalar(inputs.at("x"), weights.at("w"), weights.at("b").data<float>(), nullptr, false);
    const auto f = vnniScalar(inputs.at("x"), weights.at("w2"), weights.at("b2").data<float>(), xs, true);
    for (I r = 0; r < rows; ++r) {
      INFO("row " << r);
      for (I c = 0; c < n; ++c) {
        const float v = got.at("y").data<float>()[r * n + c];
        CHECK(v == y[std::size_t(r * n + c)]);  // bit for bit the kernel's scalar form
        CHECK(std::fabs(v - want.at("y").data<float>()[r * n + c]) <= activationBound(xs + r * k, wq, c));
      }
      for (I c = 0; c < k; ++c) {
        const float v = got.at("f").data<float>()[r * k + c];
        CHECK(v == f[std::size_t(r * k + c)]);
        // ReLU moves nothing further; the residual is added exactly as in the reference.
        CHECK(std::fabs(v - want.at("f").data<float>()[r * k + c]) <=
              activationBound(xs + r * k, w2q, c) + 1e-6 * std::fabs(xs[r * k + c]));
      }
    }
  }
  // The bound is not vacuous: the rounding moves outputs by a good part of it.
  if (vnni) {
    auto plan = makeOnednnExecutor()->compile(g, weights);
    const TensorMap& got = plan->run(inputs);
    double worst = 0;
    for (I r = 0; r < rows; ++r)
      for (I c = 0; c < n; ++c)
        worst =
            std::max(worst, std::fabs(got.at("y").data<float>()[r * n + c] - want.at("y").data<float>()[r * n + c]) /
                                activationBound(inputs.at("x").data<float>() + r * k, wq, c));
    CHECK(worst > 0.05);
  }
}

TEST_CASE("onednn: int8 activations: a linear over a constant or the embedding keeps f32 activations", "[onednn]") {
  const I d = 16, rows = 6;
  const ir::Attrs toF32{{"out_dtype", std::string("f32")}};
  ir::Graph g;
  const Node w = g.add(OpKind::Quantize, {g.addWeight("w", f32({d, d}))});
  // The position table: a constant, computed once per plan.
  const Node pos = g.add(OpKind::PosEncoding, {}, {{"klen", rows}, {"d", d}, {"clamp_len", I(-1)}});
  g.addOutput("r", g.add(OpKind::Linear, {pos, w}, toF32));
  // The scaled sum of two embedding projections, and its remembered rows
  // (the hidden memory form: the slot's write reads the slot).
  const Node ids = g.addInput("ids", ir::TensorType{DType::I64, {rows, 1}});
  const Node e1 = g.add(OpKind::Embedding, {g.addWeight("t1", f32({4, d})), ids}, {{"lo", I(0)}});
  const Node e2 = g.add(OpKind::Embedding, {g.addWeight("t2", f32({4, 8})), ids}, {{"lo", I(4)}});
  const Node p2 = g.add(OpKind::Linear, {e2, g.add(OpKind::Quantize, {g.addWeight("p2", f32({d, 8}))})}, toF32);
  const Node h = g.add(OpKind::Scale, {g.add(OpKind::Add, {e1, p2})}, {{"factor", 4.0}});
  const Node mem = g.add(OpKind::MemRead, {}, {{"slot", I(0)}}, f32({3, 1, d}));
  const Node cat = g.add(OpKind::Concat, {mem, h}, {{"axis", I(0)}});
  g.add(OpKind::MemWrite, {g.add(OpKind::Slice, {cat}, {{"axis", I(0)}, {"start", I(rows)}, {"end", I(rows + 3)}})},
        {{"slot", I(0)}});
  g.addOutput("k", g.add(OpKind::Linear, {cat, w}, toF32));
  // After a layer norm: int8 activations.
  const Node ln =
      g.add(OpKind::LayerNorm, {h, g.addWeight("gamma", f32({d})), g.addWeight("beta", f32({d}))}, {{"eps", 1e-5}});
  g.addOutput("n", g.add(OpKind::Linear, {ln, w}, toF32));
  TensorMap inputs, weights;
  fillRandom(g, inputs, weights);
  inputs["ids"] = randomI64({rows, 1}, 0, 7, 9);
  const TensorMap want = makeReferenceExecutor()->compile(g, weights)->run(inputs);
  auto plan = makeOnednnExecutor()->compile(g, weights);
  const TensorMap& got = plan->run(inputs);
  int widened = 0, vnni = 0;
  for (const auto& s : stepsOf(*plan)) {
    widened += s.impl == "txl:int8_linear";
    vnni += s.impl == "txl:int8_linear:vnni";
  }
  CHECK(vnni == (platform().avx512Vnni ? 1 : 0));
  CHECK(widened + vnni == 4);
  for (const char* name : {"r", "k"}) {  // as compareWithReference: the reference's arithmetic
    INFO(name);
    const Tensor& a = got.at(name);
    for (I i = 0; i < a.numel(); ++i) {
      const float b = want.at(name).data<float>()[i];
      CHECK(std::fabs(a.data<float>()[i] - b) <= 1e-5f * std::max(1.0f, std::fabs(b)));
    }
  }
}

TEST_CASE("onednn: a quantize another op reads is computed, and its linear multiplies its f32 values", "[onednn]") {
  ir::Graph g;
  Node q = g.add(OpKind::Quantize, {g.addWeight("w", f32({9, 20}))});
  g.addOutput("q", q);
  g.addOutput("y", g.add(OpKind::Linear, {g.addInput("x", f32({5, 20})), q}));
  auto plan = compareWithReference(g);
  int computed = 0;
  for (const auto& s : stepsOf(*plan)) computed += s.impl == "txl:quantize";
  CHECK(computed == 1);
}

TEST_CASE("onednn: batched matmul with transposes and broadcast batches", "[onednn]") {
  struct Case {
    Shape a, b;
    bool ta, tb;
  };
  const std::vector<Case> cases = {
      {{3, 5, 4}, {3, 4, 6}, false, false}, {{3, 4, 5}, {3, 4, 6}, true, false},
      {{3, 5, 4}, {3, 6, 4}, false, true},  {{3, 4, 5}, {3, 6, 4}, true, true},
      {{1, 5, 4}, {3, 4, 6}, false, false}, {{3, 5, 4}, {1, 6, 4}, false, true},
      {{5, 4}, {2, 3, 4, 6}, false, false}, {{2, 1, 7, 5}, {1, 3, 5, 7}, false, false},
      {{7, 3, 5}, {3, 5, 9}, false, false},  // 3 heads of 5 after a permute of [7, 3, 5]
  };
  for (const auto& c : cases) {
    INFO(ir::shapeStr(c.a) << (c.ta ? "^T" : "") << " x " << ir::shapeStr(c.b) << (c.tb ? "^T" : ""));
    ir::Graph g;
    Node a = g.addInput("a", f32(c.a));
    if (c.a == Shape{7, 3, 5}) a = g.add(OpKind::Permute, {a}, {{"perm", std::vector<I>{1, 0, 2}}});
    g.addOutput("y",
                g.add(OpKind::MatMul, {a, g.addInput("b", f32(c.b))}, {{"transpose_a", c.ta}, {"transpose_b", c.tb}}));
    auto plan = compareWithReference(g);
    for (const auto& s : stepsOf(*plan))
      if (s.op == "matmul") CHECK(s.impl.rfind("ref", 0) != 0);
  }
}

// Keys and values of a [klen, batch, 2·H·D] window, split into heads by
// slice / reshape / permute, against a query block of `rows`: up to
// kMaxRowsForStridedMatMulOperand rows the matmuls read them in place (no
// reorder step), above it after the permute's copy; both as the reference.
TEST_CASE("onednn: permuted keys and values read in place by small-M matmuls", "[onednn]") {
  const I klen = 6, batch = 2, heads = 2, dim = 4, width = 2 * heads * dim;
  for (I rows : {I(1), onednn::kMaxRowsForStridedMatMulOperand, onednn::kMaxRowsForStridedMatMulOperand + 1}) {
    INFO("query rows " << rows);
    ir::Graph g;
    const Node kv = g.addInput("kv", f32({klen, batch, width}));
    auto heads_of = [&](I start) {
      Node s = g.add(OpKind::Slice, {kv}, {{"axis", I(2)}, {"start", start}, {"end", start + heads * dim}});
      Node r = g.add(OpKind::Reshape, {s}, {{"shape", std::vector<I>{klen, batch, heads, dim}}});
      return g.add(OpKind::Permute, {r}, {{"perm", std::vector<I>{1, 2, 0, 3}}});  // [batch, heads, klen, dim]
    };
    const Node q = g.addInput("q", f32({batch, heads, rows, dim}));
    const Node scores = g.add(OpKind::MatMul, {q, heads_of(0)}, {{"transpose_b", true}});
    g.addOutput("scores", scores);
    g.addOutput("attended", g.add(OpKind::MatMul, {scores, heads_of(heads * dim)}));
    auto plan = compareWithReference(g);
    int copies = 0, gemvs = 0;
    for (const auto& s : stepsOf(*plan)) {
      copies += s.op == "permute";
      gemvs += s.impl == "txl:gemv";
    }
    CHECK(copies == (rows <= onednn::kMaxRowsForStridedMatMulOperand ? 0 : 2));
    // One query row: p · V reads V's rows (unit stride along n) on the own
    // kernel; q · Kᵀ (unit stride along k) stays on oneDNN.
    CHECK(gemvs == (rows == 1 ? 1 : 0));
  }
}

TEST_CASE("onednn: one-row matmuls over B's rows run on txl:gemv, blocks of n and batch offsets included", "[onednn]") {
  for (I n : {I(1), I(255), I(600)}) {
    INFO("n " << n);
    ir::Graph g;
    const Node a = g.addInput("a", f32({2, 3, 1, 70}));
    const Node table = g.addInput("table", f32({3, 70, n}));  // broadcast over the leading batch: oneDNN's
    const Node b = g.addInput("b", f32({2, 3, 70, n}));
    g.addOutput("y", g.add(OpKind::MatMul, {a, b}));
    g.addOutput("z", g.add(OpKind::MatMul, {a, table}));
    auto plan = compareWithReference(g);
    std::vector<std::string> impls;
    for (const auto& s : stepsOf(*plan))
      if (s.op == "matmul") impls.push_back(s.impl);
    REQUIRE(impls.size() == 2);
    CHECK(impls[0] == "txl:gemv");
    CHECK(impls[1] != "txl:gemv");
  }
  // Off: oneDNN's matmul, the same results.
  ir::Graph g;
  g.addOutput("y", g.add(OpKind::MatMul, {g.addInput("a", f32({4, 1, 9})), g.addInput("b", f32({4, 9, 300}))}));
  backend::OnednnOptions options;
  options.ownGemv = false;
  auto plan = backend::makeOnednnExecutor(options)->compile(g, {});
  for (const auto& s : dynamic_cast<const OnednnCompiledGraph&>(*plan).steps()) CHECK(s.impl != "txl:gemv");
}

TEST_CASE("onednn: layer_norm, softmax, log_softmax over any axis", "[onednn]") {
  ir::Graph g;
  Node x = g.addInput("x", f32({4, 3, 7}));
  g.addOutput("ln", g.add(OpKind::LayerNorm, {x, g.addWeight("gamma", f32({7})), g.addWeight("beta", f32({7}))},
                          {{"eps", 1e-5}}));
  Node s = g.addInput("s", f32({4, 6, 2, 3}));
  g.addOutput("sm_last", g.add(OpKind::Softmax, {s}, {{"axis", I(-1)}}));
  g.addOutput("sm_keys", g.add(OpKind::Softmax, {s}, {{"axis", I(1)}}));
  g.addOutput("lsm_last", g.add(OpKind::LogSoftmax, {x}, {{"axis", I(2)}}));
  g.addOutput("lsm_first", g.add(OpKind::LogSoftmax, {x}, {{"axis", I(0)}}));
  auto plan = compareWithReference(g);
  for (const auto& st : stepsOf(*plan))
    if (st.primitive != "reorder" && st.primitive != "kernel") CHECK(st.impl.rfind("ref", 0) != 0);
}

TEST_CASE("onednn: softmax after a -inf mask", "[onednn]") {
  ir::Graph g;
  Node mask = g.add(OpKind::AttnMask, {}, {{"qlen", I(4)}, {"mlen", I(3)}, {"mem_len", I(3)}, {"same_length", true}});
  Node s = g.add(OpKind::MaskedFill, {g.addInput("s", f32({4, 7})), mask}, {{"value", -kInf}});
  g.addOutput("p", g.add(OpKind::Softmax, {s}, {{"axis", I(1)}}));
  compareWithReference(g);
}

TEST_CASE("onednn: rel_shift as the reference _rel_shift", "[onednn]") {
  for (Shape shape : {Shape{3, 3}, Shape{3, 7}, Shape{2, 3, 4, 9}, Shape{1, 5}}) {
    INFO(ir::shapeStr(shape));
    ir::Graph g;
    g.addOutput("y", g.add(OpKind::RelShift, {g.addInput("x", f32(shape))}));
    compareWithReference(g);
  }
  // By hand: x [2, 3] = [[1 2 3] [4 5 6]] -> padded [[0 1 2 3] [0 4 5 6]] -> rows of 2 from flat index 2.
  ir::Graph g;
  g.addOutput("y", g.add(OpKind::RelShift, {g.addInput("x", f32({2, 3}))}));
  Tensor x = Tensor::zeros(f32({2, 3}));
  for (int i = 0; i < 6; ++i) x.data<float>()[i] = float(i + 1);
  auto plan = makeOnednnExecutor()->compile(g, {});
  const Tensor& y = plan->run({{"x", x}}).at("y");
  const std::vector<float> want = {2, 3, 0, 4, 5, 6};
  for (int i = 0; i < 6; ++i) CHECK(y.data<float>()[i] == want[i]);
}

TEST_CASE("onednn: constants, position table, masks", "[onednn]") {
  ir::Graph g;
  g.addOutput("c", g.add(OpKind::Constant, {}, {{"value", 0.5}}, f32({2, 3})));
  g.addOutput("pos", g.add(OpKind::PosEncoding, {}, {{"klen", I(9)}, {"d", I(6)}, {"clamp_len", I(4)}}));
  g.addOutput("pos_free", g.add(OpKind::PosEncoding, {}, {{"klen", I(5)}, {"d", I(8)}, {"clamp_len", I(-1)}}));
  for (bool same : {false, true})
    for (I mlen : {0, 3, 6})
      g.addOutput(
          "mask" + std::to_string(same) + std::to_string(mlen),
          g.add(OpKind::AttnMask, {}, {{"qlen", I(4)}, {"mlen", mlen}, {"mem_len", I(5)}, {"same_length", same}}));
  compareWithReference(g);
}

TEST_CASE("onednn: memory passes through, outputs never alias user buffers", "[onednn]") {
  ir::Graph g;
  Node m = g.add(OpKind::MemRead, {}, {{"slot", I(0)}}, f32({3, 1, 4}));
  Node h = g.addInput("h", f32({2, 1, 4}));
  Node c = g.add(OpKind::Concat, {m, h}, {{"axis", I(0)}});
  g.add(OpKind::MemWrite, {g.add(OpKind::Slice, {c}, {{"axis", I(0)}, {"start", I(2)}, {"end", I(5)}})},
        {{"slot", I(0)}});
  g.add(OpKind::MemWrite, {m}, {{"slot", I(1)}});
  g.addOutput("w", g.addWeight("w", f32({2, 2})));
  TensorMap inputs, weights;
  fillRandom(g, inputs, weights);
  auto plan = compareWithReference(g, inputs, weights);
  const TensorMap& out = plan->run(inputs);
  CHECK(out.at("mem.1").raw() != inputs.at("mem.0").raw());
  CHECK(out.at("w").raw() != weights.at("w").raw());
}

TEST_CASE("onednn: a missing or mistyped input is a user error", "[onednn]") {
  ir::Graph g;
  g.addOutput("y", g.add(OpKind::Relu, {g.addInput("x", f32({2}))}));
  auto plan = makeOnednnExecutor()->compile(g, {});
  CHECK_THROWS_AS(plan->run({}), Error);
  CHECK_THROWS_AS(plan->run({{"x", Tensor::zeros(f32({3}))}}), Error);
  ir::Graph h;
  h.addOutput("y", h.addWeight("w", f32({2})));
  CHECK_THROWS_AS(makeOnednnExecutor()->compile(h, {}), Error);
}

TEST_CASE("onednn: no ref implementation on a transformer-shaped graph", "[onednn][perf]") {
  // enwik8 base shapes: 64 rows through 512x512, scores of 8 heads [80 x 64] x [64 x 2180],
  // softmax over 2180 keys, layer norm over 512.
  ir::Graph g;
  Node x = g.addInput("x", f32({64, 1, 512}));
  Node y = g.add(OpKind::Linear, {x, g.addWeight("w", f32({512, 512})), g.addWeight("b", f32({512}))});
  g.addOutput("ln", g.add(OpKind::LayerNorm, {y, g.addWeight("g", f32({512})), g.addWeight("beta", f32({512}))},
                          {{"eps", 1e-5}}));
  Node q = g.addInput("q", f32({8, 80, 64}));
  Node k = g.addInput("k", f32({8, 2180, 64}));
  Node s = g.add(OpKind::MatMul, {q, k}, {{"transpose_a", false}, {"transpose_b", true}});
  Node kt = g.addInput("kt", f32({8, 64, 2180}));
  Node s2 = g.add(OpKind::MatMul, {q, kt}, {{"transpose_a", false}, {"transpose_b", false}});
  Node p = g.add(OpKind::Softmax, {g.add(OpKind::Add, {s, s2})}, {{"axis", I(-1)}});
  Node v = g.addInput("v", f32({8, 2180, 64}));
  g.addOutput("o", g.add(OpKind::MatMul, {p, v}, {{"transpose_a", false}, {"transpose_b", false}}));
  // The reference layout of scores: [qlen, klen, batch, heads], softmax over keys.
  g.addOutput("p4", g.add(OpKind::Softmax, {g.addInput("s4", f32({80, 2180, 1, 8}))}, {{"axis", I(1)}}));
  TensorMap inputs, weights;
  fillRandom(g, inputs, weights);
  auto plan = makeOnednnExecutor()->compile(g, weights);
  plan->run(inputs);
  int hot = 0;
  for (const auto& st : stepsOf(*plan)) {
    INFO(st.op << " " << st.primitive << " " << st.impl);
    CHECK(st.impl.rfind("ref", 0) != 0);
    hot += st.primitive == "matmul" || st.primitive == "softmax" || st.primitive == "layer_normalization";
  }
  CHECK(hot == 7);
  OnednnTargetInfo target;
  for (Node n : g.nodes()) CHECK_FALSE(target.slowPathReason(g, n));
}

TEST_CASE("onednn: steps estimated under serialBelowNs run on one thread; the team's count is restored", "[onednn]") {
  // A tiny add (a few hundred bytes) and a 256 x 1024 x 1024 linear
  // (0.5 GFLOP: milliseconds on one core).
  ir::Graph g;
  Node a = g.addInput("a", f32({4, 8}));
  g.addOutput("sum", g.add(OpKind::Add, {a, g.addInput("b", f32({4, 8}))}));
  Node x = g.addInput("x", f32({256, 1024}));
  g.addOutput("y", g.add(OpKind::Linear, {x, g.addWeight("w", f32({1024, 1024}))}));
  TensorMap inputs, weights;
  fillRandom(g, inputs, weights);
  const int team = omp_get_max_threads();
  auto serialOf = [&](const CompiledGraph& plan, const char* op) {
    for (const auto& st : stepsOf(plan))
      if (st.op == op) return st.serial;
    FAIL("no " << op << " step");
    return false;
  };
  {
    auto plan = makeOnednnExecutor()->compile(g, weights);
    CHECK(omp_get_max_threads() == team);  // the lowering restores the count too
    plan->run(inputs);
    CHECK(omp_get_max_threads() == team);
    CHECK(serialOf(*plan, "add") == (team > 1));  // with one thread there is no team to leave
    CHECK_FALSE(serialOf(*plan, "linear"));
  }
  {
    OnednnOptions none;
    none.serialBelowNs = 0;
    auto plan = makeOnednnExecutor(none)->compile(g, weights);
    plan->run(inputs);
    for (const auto& st : stepsOf(*plan)) CHECK_FALSE(st.serial);
  }
  if (team > 1) {
    // One row through a 1500 x 1500 weight: its stream (9 MB at 20 GB/s,
    // about 450 µs) outlasts its products (4.5 MFLOP at 60 GFLOP/s, 75 µs)
    // and the estimate is the larger, under 500 µs; their sum is above.
    ir::Graph row;
    Node r = row.addInput("x", f32({1, 1500}));
    row.addOutput("y", row.add(OpKind::Linear, {r, row.addWeight("w", f32({1500, 1500}))}));
    TensorMap rowInputs, rowWeights;
    fillRandom(row, rowInputs, rowWeights);
    OnednnOptions loaded;
    loaded.threadPolicy = ThreadPolicy::Loaded;
    auto plan = makeOnednnExecutor(loaded)->compile(row, rowWeights);
    CHECK(serialOf(*plan, "linear"));
  }
  {  // with the team set to one thread, nothing is marked
    omp_set_num_threads(1);
    auto plan = makeOnednnExecutor()->compile(g, weights);
    plan->run(inputs);
    CHECK(omp_get_max_threads() == 1);
    for (const auto& st : stepsOf(*plan)) CHECK_FALSE(st.serial);
    omp_set_num_threads(team);
  }
}

TEST_CASE("onednn: target info finds no slow path where the lowering has a fast one", "[onednn]") {
  ir::Graph g;
  Node s = g.add(OpKind::Softmax, {g.addInput("s", f32({5, 7}))}, {{"axis", I(0)}});  // runs in the acb layout
  Node x = g.addInput("x", f32({2}));
  OnednnTargetInfo target;
  CHECK(target.name() == "onednn");
  CHECK_FALSE(target.slowPathReason(g, s));
  CHECK_FALSE(target.slowPathReason(g, x));
}

TEST_CASE("onednn: random graphs plan an arena that never overlaps live buffers, in place included", "[onednn]") {
  // Random DAGs of [4, 8] values: binaries of any two earlier values,
  // eltwise, layer norm, softmax, masked_fill and linear layers, with random
  // earlier values made outputs too. The executor checks its own plan
  // (findConflict) and the results must match the reference's.
  std::mt19937 rng(11);
  int inPlace = 0;
  for (int trial = 0; trial < 40; ++trial) {
    INFO("trial " << trial);
    ir::Graph g;
    std::vector<Node> values = {g.addInput("x0", f32({4, 8})), g.addInput("x1", f32({4, 8}))};
    const Node gamma = g.addWeight("gamma", f32({8})), beta = g.addWeight("beta", f32({8}));
    const Node w = g.addWeight("w", f32({8, 8}));
    const Node mask = g.addInput("mask", f32({4, 8}));
    auto pick = [&] { return values[std::uniform_int_distribution<std::size_t>(0, values.size() - 1)(rng)]; };
    const int ops = std::uniform_int_distribution<int>(3, 25)(rng);
    for (int i = 0; i < ops; ++i) {
      Node x = pick();
      switch (std::uniform_int_distribution<int>(0, 7)(rng)) {
        case 0:
          values.push_back(g.add(OpKind::Add, {x, pick()}));
          break;
        case 1:
          values.push_back(g.add(OpKind::Mul, {pick(), x}));
          break;
        case 2:
          values.push_back(g.add(OpKind::Relu, {x}));
          break;
        case 3:
          values.push_back(g.add(OpKind::Scale, {x}, {{"factor", 0.5}}));
          break;
        case 4:
          values.push_back(g.add(OpKind::LayerNorm, {x, gamma, beta}, {{"eps", 1e-5}}));
          break;
        case 5:
          values.push_back(g.add(OpKind::Softmax, {x}, {{"axis", I(-1)}}));
          break;
        case 6:
          values.push_back(g.add(OpKind::MaskedFill, {x, mask}, {{"value", 0.25}}));
          break;
        default:
          values.push_back(g.add(OpKind::Linear, {x, w}));
          break;
      }
      // append, not "o" + to_string: GCC 12 at -O3 misreports that as -Wrestrict (bug 105651)
      if (std::uniform_int_distribution<int>(0, 5)(rng) == 0)
        g.addOutput(std::string("o").append(std::to_string(i)), values.back());
    }
    g.addOutput("y", values.back());
    auto plan = compareWithReference(g);
    const MemoryPlan& mp = dynamic_cast<const OnednnCompiledGraph&>(*plan).memoryPlan();
    REQUIRE(findConflict(mp).empty());
    REQUIRE(mp.lowerBoundBytes <= mp.arenaBytes);
    for (const auto& b : mp.buffers) inPlace += b.request.label.find("in place") != std::string::npos;
  }
  CHECK(inPlace > 10);  // the random graphs do exercise computing in place
}

TEST_CASE("onednn: an op computes in place only over an operand that dies at it", "[onednn]") {
  ir::Graph g;
  Node x = g.addInput("x", f32({4, 8}));
  Node a = g.add(OpKind::Scale, {x}, {{"factor", 2.0}});  // a dies at r: r may take its memory
  Node r = g.add(OpKind::Relu, {a});
  Node b = g.add(OpKind::Scale, {r}, {{"factor", 3.0}});  // r is read again by the add: b gets its own
  g.addOutput("y", g.add(OpKind::Add, {b, r}));
  auto plan = compareWithReference(g);
  const MemoryPlan& mp = dynamic_cast<const OnednnCompiledGraph&>(*plan).memoryPlan();
  std::vector<std::string> labels;
  for (const auto& bf : mp.buffers) labels.push_back(bf.request.label);
  INFO(labels.size());
  // scale, relu and the add share one buffer (the add over b: it dies there); b owns another.
  REQUIRE(mp.buffers.size() == 2);
  CHECK(mp.arenaBytes == 2 * 4 * 8 * 4);
  int shared = 0;
  for (const auto& l : labels) shared += l.find("relu") != std::string::npos && l.find("in place") != std::string::npos;
  CHECK(shared == 1);
}

TEST_CASE("onednn: rel_scores computes into AC's memory when AC dies at it", "[onednn]") {
  const I q = 5, m = 7, k = q + m;
  ir::Graph g;
  Node x = g.addInput("x", f32({2, 3, q, k})), bd = g.addInput("bd", f32({2, 3, q, k}));
  Node ac = g.add(OpKind::Scale, {x}, {{"factor", 0.5}});  // an arena value only rel_scores reads
  Node mask = g.add(OpKind::AttnMask, {}, {{"qlen", q}, {"mlen", m}, {"mem_len", m}, {"same_length", true}});
  ir::Attrs attrs{{"scale", 0.125}, {"value", -kInf}};
  attrs.set("softmax", true);
  g.addOutput("y", g.add(OpKind::RelScores, {ac, bd, mask}, attrs));
  auto plan = compareWithReference(g);
  const MemoryPlan& mp = dynamic_cast<const OnednnCompiledGraph&>(*plan).memoryPlan();
  int shared = 0;
  for (const auto& b : mp.buffers)
    shared += b.request.label.find("rel_scores") != std::string::npos &&
              b.request.label.find("in place") != std::string::npos;
  CHECK(shared == 1);
  CHECK(mp.buffers.size() == 1);  // AC's buffer holds the scores too
  CHECK(mp.arenaBytes < std::size_t(2 * (2 * 3 * q * k * 4)));
}

TEST_CASE("onednn: rel_scores with and without its row softmax, against the reference", "[onednn]") {
  for (const bool softmax : {false, true})
    for (const bool sameLength : {false, true}) {
      INFO("softmax " << softmax << ", same_length " << sameLength);
      ir::Graph g;
      const I q = 5, m = 7, k = q + m;
      Node ac = g.addInput("ac", f32({2, 3, q, k})), bd = g.addInput("bd", f32({2, 3, q, k}));
      Node mask = g.add(OpKind::AttnMask, {}, {{"qlen", q}, {"mlen", m}, {"mem_len", m}, {"same_length", sameLength}});
      ir::Attrs attrs{{"scale", 0.125}, {"value", -kInf}};
      if (softmax) attrs.set("softmax", true);
      g.addOutput("y", g.add(OpKind::RelScores, {ac, bd, mask}, attrs));
      auto plan = compareWithReference(g);
      CHECK(stepsOf(*plan).back().impl == "txl:rel_scores");
    }
  // A row with every key masked normalizes to NaN, as the unfused softmax does.
  ir::Graph g;
  Node ac = g.addInput("ac", f32({1, 1, 2, 3})), bd = g.addInput("bd", f32({1, 1, 2, 3}));
  Tensor full = Tensor::zeros(f32({2, 3}));
  for (I j = 0; j < 3; ++j) full.data<float>()[j] = 1.0f;  // row 0 all masked
  Node mask = g.addInput("mask", f32({2, 3}));
  g.addOutput("y", g.add(OpKind::RelScores, {ac, bd, mask}, {{"scale", 1.0}, {"value", -kInf}, {"softmax", true}}));
  TensorMap inputs{{"mask", full}};
  compareWithReference(g, inputs);
}

TEST_CASE("onednn: rel_attention reads k and v in place from [keys, B, 2·H·D] rows, against the reference",
          "[onednn]") {
  // A suffix of a longer position table, as a shorter segment reads it; with
  // and without the padding keys' vector; 1 and 7 query rows.
  const I batch = 2, heads = 3, dim = 5, width = 2 * heads * dim, mlen = 9;
  for (const I q : {I(1), I(7)})
    for (const bool padded : {false, true}) {
      INFO("q " << q << ", padded " << padded);
      const I k = mlen + q;
      ir::Graph g;
      const Node kv = g.addInput("kv", f32({k, batch, width}));
      auto columns = [&](I start) {
        Node s = g.add(OpKind::Slice, {kv}, {{"axis", I(2)}, {"start", start}, {"end", start + heads * dim}});
        return g.add(OpKind::Reshape, {s}, {{"shape", std::vector<I>{k, batch, heads, dim}}});
      };
      const Node qu = g.addInput("qu", f32({q, batch, heads, dim})), qv = g.addInput("qv", f32({q, batch, heads, dim}));
      const Node table = g.addInput("table", f32({heads, dim, k + 4}));
      const Node rt = g.add(OpKind::Slice, {table}, {{"axis", I(2)}, {"start", I(4)}, {"end", k + 4}});
      const Node mask =
          g.add(OpKind::AttnMask, {}, {{"qlen", q}, {"mlen", mlen}, {"mem_len", mlen}, {"same_length", true}});
      std::vector<Node> operands{qu, qv, columns(0), columns(heads * dim), rt, mask};
      TensorMap inputs;
      if (padded) {
        operands.push_back(g.addInput("pad", f32({batch, 1, 1, k})));
        Tensor pad = Tensor::zeros(f32({batch, 1, 1, k}));
        for (I b = 0; b < batch; ++b)  // a different count per stream
          for (I j = 0; j < 1 + b % 3; ++j) pad.data<float>()[b * k + j] = 1.0f;
        inputs["pad"] = pad;
      }
      g.addOutput("y", g.add(OpKind::RelAttention, operands, {{"scale", 0.4}}));
      auto plan = compareWithReference(g, inputs);
      for (const auto& step : stepsOf(*plan)) CHECK(step.op != "slice");  // no copy of k or v
      CHECK(stepsOf(*plan).back().impl.rfind("txl:rel_attention:", 0) == 0);
    }
}

TEST_CASE("onednn: rel_attention's step runs the path the lowering chose for it", "[onednn]") {
  // The step is named after the path in the kernel's arguments: each
  // (query rows, key dtype, position table) gets attentionPath's choice; a
  // packed table layout (bf16, or f32 rows) only for a table the lowering
  // can pack (a weight's suffix). Every path against the reference
  // executor, an odd d too (its packed bf16 pairs padded with zeros).
  const I batch = 1, heads = 2, mlen = 9;
  for (const I dim : {I(8), I(5)})
    for (const I q : {I(1), I(3), I(7)})
      for (const bool bf16 : {false, true})
        for (const bool weightTable : {false, true}) {
          INFO("d " << dim << ", q " << q << ", bf16 keys " << bf16 << ", table a weight " << weightTable);
          const I k = mlen + q;
          const ir::Graph g = attentionGraph(q, mlen, dim, bf16, weightTable, /*sameLength=*/true);
          TensorMap inputs, weights;
          fillRandom(g, inputs, weights);
          auto plan = makeOnednnExecutor()->compile(g, weights);
          const Tensor& y = plan->run(inputs).at("y");
          requireNearReference(y, makeReferenceExecutor()->compile(g, weights)->run(inputs).at("y"), bf16);
          const kernels::AttentionPath want = onednn::attentionPath({batch, heads, q, k, dim}, bf16, weightTable);
          const StepInfo* step = nullptr;
          for (const auto& s : stepsOf(*plan))
            if (s.op == "rel_attention") step = &s;
          REQUIRE(step);
          CHECK(step->impl == std::string("txl:rel_attention:") + kernels::attentionPathName(want));
          if (!bf16 && q == 1 && weightTable && platform().avx512)
            CHECK(want == kernels::AttentionPath{kernels::AttentionKernel::Rows, kernels::PositionLayout::F32Rows});
          else if (!bf16 || !platform().avx512Bf16)
            CHECK(want.kernel ==
                  (platform().avx512 ? kernels::AttentionKernel::Blocks : kernels::AttentionKernel::Portable));
          else if (q == 1 && weightTable)
            CHECK(want == kernels::AttentionPath{kernels::AttentionKernel::Rows, kernels::PositionLayout::Bf16Rows});
          else if (!platform().amx) CHECK(want.kernel == kernels::AttentionKernel::Pairs);
        }
}

TEST_CASE("onednn: rel_attention over a position table with a clamped prefix", "[onednn]") {
  // A weight table whose first positions hold one vector (distances clamped
  // at clamp_len): the lowering finds the prefix (packed bf16 pairs, or the
  // f32 table read in place) and key blocks wholly inside it take BD once
  // per row; against the reference executor, so a prefix found too long
  // (BD of unclamped positions replaced) fails.
  const I heads = 2, mlen = 200, q = 7, k = mlen + q, clamped = 130;
  for (const I dim : {I(8), I(5)})
    for (const bool bf16 : {false, true}) {
      INFO("d " << dim << ", bf16 keys " << bf16);
      const ir::Graph g = attentionGraph(q, mlen, dim, bf16, /*weightTable=*/true, /*sameLength=*/false);
      TensorMap inputs, weights;
      fillRandom(g, inputs, weights);
      float* t = weights.at("table").data<float>();
      for (I row = 0; row < heads * dim; ++row)
        for (I p = 1; p < 4 + clamped; ++p) t[row * (k + 4) + p] = t[row * (k + 4)];
      auto plan = makeOnednnExecutor()->compile(g, weights);
      requireNearReference(plan->run(inputs).at("y"), makeReferenceExecutor()->compile(g, weights)->run(inputs).at("y"),
                           bf16);
    }
}

TEST_CASE("onednn: logprob_pick against the reference, targets at the range's edges", "[onednn]") {
  // x spans several of the kernel's 2048-value blocks and ends in a partial
  // one; magnitudes up to 1000 (no -inf); rows whose maximum sits in the last
  // block rescale the running sum.
  const I rows0 = 6, rows1 = 7, n = 5000, m = 37;
  struct Range {
    I offset, start, end, classes;
    bool head;
  };
  const std::vector<Range> ranges = {{0, 0, n, n, false},           // no clusters: the whole row
                                     {0, 0, 4000, 9000, false},     // a shortlist: the head's first columns
                                     {4000, 0, n, 9000, true},      // a tail cluster plus its head column
                                     {6000, 1, 3001, 9000, true}};  // a slice of x in the middle of the ids
  for (const float magnitude : {1.0f, 80.0f, 1000.0f})
    for (const Range& r : ranges) {
      INFO("magnitude " << magnitude << ", offset " << r.offset << ", columns " << r.start << ".." << r.end
                        << ", classes " << r.classes << ", head " << r.head);
      ir::Graph g;
      Node x = g.addInput("x", f32({rows0, rows1, n}));
      Node idx = g.addInput("idx", i64({rows0, rows1}));
      ir::Attrs attrs{{"offset", r.offset}, {"start", r.start}, {"end", r.end}, {"classes", r.classes}};
      std::vector<Node> operands = {x, idx};
      if (r.head) {
        operands.push_back(g.addInput("y", f32({rows0, rows1, m})));
        attrs.set("column", I(m - 2));
      }
      g.addOutput("lp", g.add(OpKind::LogprobPick, operands, attrs));

      TensorMap inputs{{"x", randomF32({rows0, rows1, n}, 11)}, {"y", randomF32({rows0, rows1, m}, 12)}};
      for (float& v : inputs["x"].span<float>()) v *= magnitude;
      for (float& v : inputs["y"].span<float>()) v *= magnitude;
      float* x0 = inputs["x"].data<float>();
      for (I j = 0; j < n; ++j) x0[j] = magnitude * float(j) / float(n);  // row 0: increasing, max at the end
      Tensor t = randomI64({rows0, rows1}, 0, r.classes - 1, 13);
      const I width = r.end - r.start;
      const std::vector<I> edges = {0,
                                    r.offset - 1,
                                    r.offset,
                                    r.offset + 1,
                                    r.offset + width - 1,
                                    r.offset + width,
                                    r.classes - 1,
                                    r.offset + width / 2};
      for (std::size_t i = 0; i < edges.size(); ++i) t.data<I>()[i] = std::clamp<I>(edges[i], 0, r.classes - 1);
      t.data<I>()[0] = r.offset + width - 1;  // row 0 picks its largest value (when the range reaches it)
      inputs["idx"] = t;
      if (!r.head) inputs.erase("y");
      auto plan = compareWithReference(g, inputs);
      CHECK(stepsOf(*plan).back().impl == "txl:logprob_pick");
    }
}

TEST_CASE("onednn: logprob_pick of a row of -inf is NaN; an index outside classes is an error", "[onednn]") {
  ir::Graph g;
  Node x = g.addInput("x", f32({3, 4}));
  Node idx = g.addInput("idx", i64({3}));
  g.addOutput("lp", g.add(OpKind::LogprobPick, {x, idx},
                          {{"offset", I(2)}, {"start", I(0)}, {"end", I(4)}, {"classes", I(6)}}));
  Tensor xs = randomF32({3, 4}, 5);
  for (I j = 0; j < 4; ++j) xs.data<float>()[j] = -kInf;  // row 0 all -inf
  xs.data<float>()[4 + 1] = -kInf;                        // row 1 partly -inf: still finite elsewhere
  Tensor t = Tensor::zeros(i64({3}));
  t.data<I>()[0] = 3, t.data<I>()[1] = 5, t.data<I>()[2] = 1;  // row 2: outside the range, 0
  TensorMap inputs{{"x", xs}, {"idx", t}};
  compareWithReference(g, inputs);
  {
    auto plan = makeOnednnExecutor()->compile(g, {});
    const Tensor& lp = plan->run(inputs).at("lp");
    CHECK(std::isnan(lp.data<float>()[0]));
    CHECK(std::isfinite(lp.data<float>()[1]));
    CHECK(lp.data<float>()[2] == 0.0f);
  }
  t.data<I>()[2] = 6;
  inputs["idx"] = t;
  CHECK_THROWS_WITH(makeReferenceExecutor()->compile(g, {})->run(inputs),
                    Catch::Contains("index 6 at position 2 is outside [0, 6)"));
  CHECK_THROWS_WITH(makeOnednnExecutor()->compile(g, {})->run(inputs),
                    Catch::Contains("index 6 at position 2 is outside [0, 6)"));
}
