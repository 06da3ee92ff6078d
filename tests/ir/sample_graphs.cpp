// tests/ir/sample_graphs.cpp - builders of the sample graphs.
#include "tests/ir/sample_graphs.h"

#include <limits>

namespace txl::testing {

using namespace ir;

Graph attentionSample() {
  const std::int64_t q = 3, m = 2, k = q + m, b = 1, d = 4;
  Graph g("attention");
  Node tokens = g.addInput("tokens", {DType::I64, {q, b}});
  Node table = g.addWeight("emb", {DType::F32, {10, d}});
  Node h = g.add(OpKind::Embedding, {table, tokens}, {{"lo", std::int64_t(0)}});
  Node mem = g.add(OpKind::MemRead, {}, {{"slot", std::int64_t(0)}}, TensorType{DType::F32, {m, b, d}});
  Node c = g.add(OpKind::Concat, {mem, h}, {{"axis", std::int64_t(0)}});
  Node wq = g.addWeight("wq", {DType::F32, {d, d}});
  Node qv = g.add(OpKind::Linear, {h, wq});
  Node kv = g.add(OpKind::Linear, {c, wq});
  Node u = g.addWeight("u", {DType::F32, {d}});
  Node qu = g.add(OpKind::Add, {qv, u});
  Node q2 = g.add(OpKind::Reshape, {qu}, {{"shape", std::vector<std::int64_t>{q, d}}});
  Node k2 = g.add(OpKind::Reshape, {kv}, {{"shape", std::vector<std::int64_t>{k, d}}});
  Node ac = g.add(OpKind::MatMul, {q2, k2}, {{"transpose_b", true}});
  Node pos = g.add(OpKind::PosEncoding, {}, {{"klen", k}, {"d", d}, {"clamp_len", std::int64_t(-1)}});
  Node bd = g.add(OpKind::MatMul, {q2, pos}, {{"transpose_b", true}});
  Node padded =
      g.add(OpKind::Pad, {bd},
            {{"axis", std::int64_t(1)}, {"before", std::int64_t(1)}, {"after", std::int64_t(0)}, {"value", 0.0}});
  Node viewed = g.add(OpKind::Reshape, {padded}, {{"shape", std::vector<std::int64_t>{k + 1, q}}});
  Node dropped =
      g.add(OpKind::Slice, {viewed}, {{"axis", std::int64_t(0)}, {"start", std::int64_t(1)}, {"end", k + 1}});
  Node shifted = g.add(OpKind::Reshape, {dropped}, {{"shape", std::vector<std::int64_t>{q, k}}});
  Node shifted2 = g.add(OpKind::RelShift, {bd});
  Node scores = g.add(OpKind::Add, {ac, shifted});
  Node scores2 = g.add(OpKind::Sub, {scores, shifted2});
  Node scaled = g.add(OpKind::Scale, {scores2}, {{"factor", 0.5}});
  Node mask = g.add(OpKind::AttnMask, {}, {{"qlen", q}, {"mlen", m}, {"mem_len", m}, {"same_length", true}});
  Node masked = g.add(OpKind::MaskedFill, {scaled, mask}, {{"value", -std::numeric_limits<double>::infinity()}});
  Node probs = g.add(OpKind::Softmax, {masked}, {{"axis", std::int64_t(-1)}});
  Node ctx = g.add(OpKind::MatMul, {probs, k2});
  Node ctx3 = g.add(OpKind::Reshape, {ctx}, {{"shape", std::vector<std::int64_t>{q, b, d}}});
  Node res = g.add(OpKind::Add, {h, ctx3});
  Node gamma = g.addWeight("ln.weight", {DType::F32, {d}});
  Node beta = g.addWeight("ln.bias", {DType::F32, {d}});
  Node out = g.add(OpKind::LayerNorm, {res, gamma, beta}, {{"eps", 1e-5}});
  Node perm = g.add(OpKind::Permute, {out}, {{"perm", std::vector<std::int64_t>{1, 0, 2}}});
  Node logp = g.add(OpKind::LogSoftmax, {perm}, {{"axis", std::int64_t(2)}});
  Node targets = g.addInput("targets", {DType::I64, {b, q}});
  Node nll = g.add(OpKind::Pick, {logp, targets});
  Node neg = g.add(OpKind::Scale, {nll}, {{"factor", -1.0}});
  Node newMem = g.add(OpKind::Slice, {c}, {{"axis", std::int64_t(0)}, {"start", k - m}, {"end", k}});
  g.add(OpKind::MemWrite, {newMem}, {{"slot", std::int64_t(0)}});
  g.addOutput("hidden", out);
  g.addOutput("nll", neg);
  return g;
}

Graph mlpSample() {
  Graph g("mlp");
  Node x = g.addInput("x", {DType::F32, {4, 2, 8}});
  Node w = g.addWeight("w1", {DType::F32, {16, 8}});
  Node bias = g.addWeight("b1", {DType::F32, {16}});
  Node y = g.add(OpKind::Linear, {x, w, bias});
  Node r = g.add(OpKind::Relu, {y});
  Node one = g.add(OpKind::Constant, {}, {{"value", 1.0}}, TensorType{DType::F32, {16}});
  Node z = g.add(OpKind::Mul, {r, one});
  g.addOutput("y", z);
  return g;
}

std::vector<NamedGraph> allSamples() { return {{"attention", attentionSample}, {"mlp", mlpSample}}; }

}  // namespace txl::testing
