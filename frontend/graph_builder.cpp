// frontend/graph_builder.cpp - buildSegmentGraph(): the reference, op for op.
//
// Layout: activations are time-major [len, batch, features] as in the
// reference; attention scores are [batch, heads, qlen, klen] (the reference's
// [qlen, klen, batch, heads] with the two trailing axes moved in front — the
// rel-shift acts on the (qlen, klen) plane of each (batch, head) either way).
#include "frontend/graph_builder.h"

#include <cmath>
#include <limits>
#include <optional>
#include <string>

#include "ir/check.h"
#include "ir/segment_abi.h"
#include "ir/verifier.h"

namespace txl::frontend {

using ir::Attrs;
using ir::DType;
using ir::Node;
using ir::OpKind;
using ir::Shape;
using Ints = std::vector<std::int64_t>;

ir::Segment defaultSegment(const ModelSpec& spec, std::int64_t batch, std::int64_t qlen, std::int64_t mlen) {
  return ir::Segment{.batch = batch,
                     .qlen = qlen,
                     .mlen = mlen,
                     .memLen = spec.mem_len,
                     .clampLen = spec.clamp_len,
                     .sameLength = spec.same_length};
}

namespace {

class Builder {
 public:
  Builder(const ModelSpec& spec, const ir::Segment& segment) : s_(spec), sh_(segment), g_("txl_segment") {}

  ir::Graph build() {
    Node tokens = g_.addInput(ir::kTokens, {DType::I64, {sh_.qlen, sh_.batch}});
    Node h = embedding(tokens);
    Node pos = pos_encoding();
    if (s_.attn_type == 2) h = add(h, reshape(slice(pos, 0, sh_.mlen, sh_.klen()), {sh_.qlen, 1, s_.d_model}));
    Node mask =
        g_.add(OpKind::AttnMask, {},
               {{"qlen", sh_.qlen}, {"mlen", sh_.mlen}, {"mem_len", sh_.memLen}, {"same_length", sh_.sameLength}});
    if (sh_.padded) padMask_ = g_.addInput(ir::kPadMask, {DType::F32, {sh_.batch, 1, 1, sh_.klen()}});
    for (std::int64_t l = 0; l <= s_.n_layer; ++l) {
      Node mem = memory(l, h);
      if (l == s_.n_layer) break;
      h = s_.attn_type == 0 ? relativeAttention(l, h, mem, pos, mask) : absoluteAttention(l, h, mem, mask);
      h = feedForward(l, h);
    }
    g_.addOutput(ir::kHidden, h);
    if (sh_.logprob || sh_.nll) {
      Node logprob = logSoftmaxOutput(h);
      if (sh_.logprob) g_.addOutput(ir::kLogprob, logprob);
      if (sh_.nll) {
        Node targets = g_.addInput(ir::kTargets, {DType::I64, {sh_.qlen, sh_.batch}});
        g_.addOutput(ir::kNll, scale(g_.add(OpKind::Pick, {logprob, targets}), -1.0));
      }
    }
    ir::verifyOrThrow(g_, "internal error: the literal graph is invalid");
    ir::verifySegmentOrThrow(g_, signature(), "internal error: the literal graph breaks the segment ABI");
    return std::move(g_);
  }

 private:
  // The literal graph's side of the segment ABI: the hidden memory form,
  // slots 0..n_layer of [batch, d_model].
  ir::SegmentSignature signature() const {
    ir::SegmentSignature sig{sh_, s_.d_model, s_.n_token, std::vector<ir::MemorySlot>{}};
    if (sh_.memLen > 0)
      for (std::int64_t l = 0; l <= s_.n_layer; ++l) sig.memory->push_back({l, {sh_.batch, s_.d_model}, false});
    return sig;
  }

  // --- small op helpers ----------------------------------------------------
  Node weight(const std::string& name, Shape shape) { return g_.addWeight(name, {DType::F32, std::move(shape)}); }
  Node add(Node a, Node b) { return g_.add(OpKind::Add, {a, b}); }
  Node scale(Node x, double f) { return g_.add(OpKind::Scale, {x}, {{"factor", f}}); }
  Node linear(Node x, Node w) { return g_.add(OpKind::Linear, {x, w}); }
  Node linear(Node x, Node w, Node b) { return g_.add(OpKind::Linear, {x, w, b}); }
  Node reshape(Node x, Ints shape) { return g_.add(OpKind::Reshape, {x}, {{"shape", std::move(shape)}}); }
  Node permute(Node x, Ints perm) { return g_.add(OpKind::Permute, {x}, {{"perm", std::move(perm)}}); }
  Node slice(Node x, std::int64_t axis, std::int64_t start, std::int64_t end) {
    return g_.add(OpKind::Slice, {x}, {{"axis", axis}, {"start", start}, {"end", end}});
  }
  Node concat(std::vector<Node> xs, std::int64_t axis) { return g_.add(OpKind::Concat, xs, {{"axis", axis}}); }
  Node matmul(Node a, Node b, bool transposeB) {
    Attrs attrs;
    if (transposeB) attrs.set("transpose_b", true);
    return g_.add(OpKind::MatMul, {a, b}, attrs);
  }
  Node layerNorm(Node x, const std::string& prefix) {
    return g_.add(OpKind::LayerNorm,
                  {x, weight(prefix + ".weight", {s_.d_model}), weight(prefix + ".bias", {s_.d_model})},
                  {{"eps", s_.layer_norm_epsilon}});
  }
  std::string layer(std::int64_t l) const { return "layers." + std::to_string(l) + "."; }

  // --- model pieces --------------------------------------------------------

  // AdaptiveEmbedding: one table (plus an optional projection) or one table
  // and projection per cluster; rows of other clusters come out as zeros and
  // project to zeros, so the clusters sum. Then the sqrt(d_model) scale.
  Node embedding(Node tokens) {
    auto bounds = s_.clusterBounds();
    std::vector<Node> parts;
    std::int64_t clusters = s_.div_val == 1 ? 1 : s_.clusterCount();
    for (std::int64_t i = 0; i < clusters; ++i) {
      std::int64_t lo = s_.div_val == 1 ? 0 : bounds[i];
      std::int64_t rows = s_.div_val == 1 ? s_.n_token : bounds[i + 1] - bounds[i];
      std::int64_t e = s_.div_val == 1 ? s_.d_embed : s_.clusterEmbedDim(i);
      std::string idx = std::to_string(i);
      Node table = weight("word_emb.emb_layers." + idx + ".weight", {rows, e});
      Node emb = g_.add(OpKind::Embedding, {table, tokens}, {{"lo", lo}});
      if (s_.div_val > 1 || s_.d_embed != s_.d_model)
        emb = linear(emb, weight("word_emb.emb_projs." + idx, {s_.d_model, e}));
      parts.push_back(emb);
    }
    Node sum = parts[0];
    for (std::size_t i = 1; i < parts.size(); ++i) sum = add(sum, parts[i]);
    return scale(sum, std::sqrt(double(s_.d_model)));
  }

  Node pos_encoding() {
    return g_.add(OpKind::PosEncoding, {}, {{"klen", sh_.klen()}, {"d", s_.d_model}, {"clamp_len", sh_.clampLen}});
  }

  // Reads memory slot l (when there is any) and writes its update. Returns
  // [memory; h] along time (h itself without memory).
  Node memory(std::int64_t l, Node h) {
    Node cat = h;
    if (sh_.mlen > 0) {
      Node mem =
          g_.add(OpKind::MemRead, {}, {{"slot", l}}, ir::TensorType{DType::F32, {sh_.mlen, sh_.batch, s_.d_model}});
      cat = concat({mem, h}, 0);
    }
    if (sh_.memLen > 0) {
      std::int64_t klen = sh_.klen();
      Node kept = slice(cat, 0, std::max<std::int64_t>(0, klen - sh_.memLen), klen);
      g_.add(OpKind::MemWrite, {kept}, {{"slot", l}});
    }
    return cat;
  }

  // u or v of layer l as [H, D].
  Node headBias(const std::string& name, std::int64_t l) {
    const std::int64_t H = s_.n_head, D = s_.d_head;
    if (!s_.untie_r) return weight(name, {H, D});
    return reshape(slice(weight(name, {s_.n_layer, H, D}), 0, l, l + 1), {H, D});
  }

  // [len, B, H*D] -> [B, H, len, D]
  Node heads(Node x, std::int64_t len) {
    return permute(reshape(x, {len, sh_.batch, s_.n_head, s_.d_head}), {1, 2, 0, 3});
  }

  // softmax(scale * scores, masked) . values -> o_net -> residual (+ norm)
  Node attend(std::int64_t l, Node h, Node scores, Node values, Node mask) {
    const std::int64_t H = s_.n_head, D = s_.d_head, q = sh_.qlen, B = sh_.batch;
    Node scaled = scale(scores, 1.0 / std::sqrt(double(D)));
    // With same_length and no memory every key is masked. Hugging Face fills
    // masked scores with float32's lowest value, so such a row averages every
    // value uniformly; -inf elsewhere gives the same probabilities (exp
    // underflows to 0 either way) and keeps the fused attention's form.
    const bool fullyMasked = sh_.sameLength && sh_.memLen == 0;
    const double fill =
        fullyMasked ? double(std::numeric_limits<float>::lowest()) : -std::numeric_limits<double>::infinity();
    Node masked = g_.add(OpKind::MaskedFill, {scaled, mask}, {{"value", fill}});
    if (padMask_)
      masked = g_.add(OpKind::MaskedFill, {masked, *padMask_}, {{"value", -std::numeric_limits<double>::infinity()}});
    Node prob = g_.add(OpKind::Softmax, {masked}, {{"axis", std::int64_t(3)}});
    Node vec = matmul(prob, values, false);                          // [B, H, q, D]
    Node flat = reshape(permute(vec, {2, 0, 1, 3}), {q, B, H * D});  // [q, B, H*D]
    Node out = linear(flat, weight(layer(l) + "dec_attn.o_net.weight", {s_.d_model, H * D}));
    Node res = add(h, out);
    return s_.pre_lnorm ? res : layerNorm(res, layer(l) + "dec_attn.layer_norm");
  }

  // RelPartialLearnableMultiHeadAttn.
  Node relativeAttention(std::int64_t l, Node h, Node cat, Node pos, Node mask) {
    const std::int64_t H = s_.n_head, D = s_.d_head, q = sh_.qlen, k = sh_.klen(), m = sh_.mlen;
    Node x = s_.pre_lnorm ? layerNorm(cat, layer(l) + "dec_attn.layer_norm") : cat;
    Node w = linear(x, weight(layer(l) + "dec_attn.qkv_net.weight", {3 * H * D, s_.d_model}));  // [k, B, 3HD]
    Node r = linear(pos, weight(layer(l) + "dec_attn.r_net.weight", {H * D, s_.d_model}));      // [k, HD]
    Node wq = slice(slice(w, 2, 0, H * D), 0, m, k);                                            // [q, B, HD]
    Node wk = slice(w, 2, H * D, 2 * H * D);
    Node wv = slice(w, 2, 2 * H * D, 3 * H * D);
    Node qh = reshape(wq, {q, sh_.batch, H, D});
    Node rwq = heads(reshape(add(qh, headBias("r_w_bias", l)), {q, sh_.batch, H * D}), q);  // q + u
    Node rrq = heads(reshape(add(qh, headBias("r_r_bias", l)), {q, sh_.batch, H * D}), q);  // q + v
    Node kh = heads(wk, k);
    Node vh = heads(wv, k);
    Node rh = permute(reshape(r, {k, H, D}), {1, 0, 2});  // [H, k, D]
    Node ac = matmul(rwq, kh, true);                      // [B, H, q, k]
    Node bdRaw = matmul(rrq, rh, true);                   // [B, H, q, k]
    // The reference's _rel_shift: pad a zero column in front, view [k+1, q],
    // drop the first row, view [q, k].
    Node padded =
        g_.add(OpKind::Pad, {bdRaw},
               {{"axis", std::int64_t(3)}, {"before", std::int64_t(1)}, {"after", std::int64_t(0)}, {"value", 0.0}});
    Node viewed = reshape(padded, {sh_.batch, H, k + 1, q});
    Node bd = reshape(slice(viewed, 2, 1, k + 1), {sh_.batch, H, q, k});
    return attend(l, h, add(ac, bd), vh, mask);
  }

  // MultiHeadAttn of the absolute baseline: q from the un-normalized h.
  Node absoluteAttention(std::int64_t l, Node h, Node cat, Node mask) {
    const std::int64_t H = s_.n_head, D = s_.d_head, q = sh_.qlen, k = sh_.klen();
    Node x = s_.pre_lnorm ? layerNorm(cat, layer(l) + "dec_attn.layer_norm") : cat;
    Node wq = linear(h, weight(layer(l) + "dec_attn.q_net.weight", {H * D, s_.d_model}));
    Node kv = linear(x, weight(layer(l) + "dec_attn.kv_net.weight", {2 * H * D, s_.d_model}));
    Node kh = heads(slice(kv, 2, 0, H * D), k);
    Node vh = heads(slice(kv, 2, H * D, 2 * H * D), k);
    return attend(l, h, matmul(heads(wq, q), kh, true), vh, mask);
  }

  Node feedForward(std::int64_t l, Node y) {
    std::string p = layer(l) + "pos_ff.";
    Node in = s_.pre_lnorm ? layerNorm(y, p + "layer_norm") : y;
    Node hidden = g_.add(OpKind::Relu, {linear(in, weight(p + "CoreNet.0.weight", {s_.d_inner, s_.d_model}),
                                               weight(p + "CoreNet.0.bias", {s_.d_inner}))});
    Node out = linear(hidden, weight(p + "CoreNet.3.weight", {s_.d_model, s_.d_inner}),
                      weight(p + "CoreNet.3.bias", {s_.d_model}));
    Node res = add(y, out);
    return s_.pre_lnorm ? res : layerNorm(res, p + "layer_norm");
  }

  // ProjectedAdaptiveLogSoftmax, as full log-probabilities [q, B, n_token].
  Node clusterLogits(Node h, std::int64_t i, Node w, Node b) {
    if (s_.div_val > 1 || s_.d_embed != s_.d_model) {
      std::int64_t e = s_.div_val == 1 ? s_.d_embed : s_.clusterEmbedDim(i);
      h = matmul(h, weight("crit.out_projs." + std::to_string(i), {s_.d_model, e}), false);  // h . proj
    }
    return linear(h, w, b);
  }

  Node logSoftmaxOutput(Node h) {
    auto bounds = s_.clusterBounds();
    const std::int64_t nc = s_.clusterCount() - 1;  // tail clusters
    auto clusterWeights = [&](std::int64_t i) -> std::pair<Node, Node> {
      std::int64_t rows = bounds[i + 1] - bounds[i];
      if (s_.div_val == 1) {
        Node w = weight("crit.out_layers.0.weight", {s_.n_token, s_.d_embed});
        Node b = weight("crit.out_layers.0.bias", {s_.n_token});
        if (nc == 0) return {w, b};
        return {slice(w, 0, bounds[i], bounds[i + 1]), slice(b, 0, bounds[i], bounds[i + 1])};
      }
      std::string idx = std::to_string(i);
      return {weight("crit.out_layers." + idx + ".weight", {rows, s_.clusterEmbedDim(i)}),
              weight("crit.out_layers." + idx + ".bias", {rows})};
    };
    auto logSoftmax = [&](Node x) { return g_.add(OpKind::LogSoftmax, {x}, {{"axis", std::int64_t(2)}}); };
    auto [w0, b0] = clusterWeights(0);
    if (nc == 0) return logSoftmax(clusterLogits(h, 0, w0, b0));
    const std::int64_t shortlist = bounds[1];
    Node headW = concat({w0, weight("crit.cluster_weight", {nc, s_.d_embed})}, 0);
    Node headB = concat({b0, weight("crit.cluster_bias", {nc})}, 0);
    Node head = logSoftmax(clusterLogits(h, 0, headW, headB));  // [q, B, shortlist + nc]
    std::vector<Node> parts = {slice(head, 2, 0, shortlist)};
    for (std::int64_t i = 1; i <= nc; ++i) {
      auto [wi, bi] = clusterWeights(i);
      Node tail = logSoftmax(clusterLogits(h, i, wi, bi));
      const std::int64_t column = s_.tailClusterColumn(i);  // the semantics' cluster order
      parts.push_back(add(tail, slice(head, 2, column, column + 1)));
    }
    return concat(parts, 2);
  }

  const ModelSpec& s_;
  ir::Segment sh_;
  ir::Graph g_;
  std::optional<Node> padMask_;  // the "pad_mask" input of a padded segment
};

}  // namespace

ir::Graph buildSegmentGraph(const ModelSpec& spec, const ir::Segment& segment) {
  auto bad = [&](const std::string& what) { throw Error(spec.source + ": cannot build a segment: " + what); };
  if (segment.batch < 1) bad("batch must be at least 1, got " + std::to_string(segment.batch));
  if (segment.qlen < 1) bad("qlen must be at least 1, got " + std::to_string(segment.qlen));
  if (segment.mlen < 0 || segment.mlen > segment.memLen)
    bad("mlen must be in [0, mem_len " + std::to_string(segment.memLen) + "], got " + std::to_string(segment.mlen));
  if (segment.sameLength && segment.memLen == 0 && spec.semantics == Semantics::Authors)
    bad("same_length needs mem_len > 0 (every key would be masked, which the authors' semantics leaves undefined)");
  if (spec.attn_type == 2 && segment.memLen > 0) bad("attn_type 2 with mem_len > 0 is not supported");
  if (segment.padded && (spec.attn_type != 0 || segment.mlen == 0))
    bad("a padded segment needs attn_type 0 and mlen > 0");
  return Builder(spec, segment).build();
}

}  // namespace txl::frontend
