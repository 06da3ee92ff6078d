// frontend/graph_builder.h - the literal Transformer-XL graph of one segment step.
//
// buildSegmentGraph() writes the reference's computation op for op
// (kimiyoung/transformer-xl, pytorch/mem_transformer.py, eval mode; see
// tests/conformance/SEMANTICS.md): adaptive embedding,
// relative position table, r_net, the u/v bias adds as separate ops, the
// reference's pad-reshape-slice rel-shift, mask, softmax, feed-forward, the
// memory update and the (adaptive) log-softmax. Passes are judged against it.
//
// Signature of the graph (ir/segment_abi.h declares the names; the builder
// checks its graph against it):
//   inputs   "tokens" i64[qlen, batch], "targets" i64[qlen, batch] (when nll)
//   memory   mem_read slot l = 0..n_layer: f32[mlen, batch, d_model] (when mlen > 0)
//   outputs  "hidden" f32[qlen, batch, d_model], "logprob" f32[qlen, batch, n_token],
//            "nll" f32[qlen, batch]; mem_write slot l = 0..n_layer: the last
//            min(mem_len, mlen + qlen) positions of [memory; layer input l]
//            (when mem_len > 0). Slot 0 is the embedding, slot l the output
//            of layer l-1; slot n_layer is kept, as by the reference, but never read.
#pragma once

#include <cstdint>

#include "frontend/model_spec.h"
#include "ir/graph.h"

namespace txl::frontend {

// The shapes and run-time settings one segment graph is built for.
struct SegmentShape {
  std::int64_t batch = 1;
  std::int64_t qlen = 1;
  std::int64_t mlen = 0;       // positions in memory when the segment starts
  std::int64_t memLen = 0;     // mem_len in force (memory kept after the segment)
  std::int64_t clampLen = -1;  // clamp_len in force
  bool sameLength = false;
  // The first of the mlen remembered positions may be padding: a run-time
  // input "pad_mask" f32[batch, 1, 1, klen] (1: a padding key of that
  // stream, so that each stream may remember fewer positions) masks them after the
  // attention mask. A session runs every warm-up segment (fewer than mem_len
  // positions remembered) on the padded graph of mlen = mem_len, one plan
  // per qlen instead of one per (qlen, mlen) (docs/MEMORY.md).
  bool padded = false;
  std::int64_t klen() const { return mlen + qlen; }
};

// The settings a spec trains with: its own mem_len, clamp_len, same_length.
SegmentShape defaultShape(const ModelSpec& spec, std::int64_t batch, std::int64_t qlen, std::int64_t mlen);

struct GraphOutputs {
  bool logprob = true;  // the full log-probabilities
  bool nll = true;      // the NLL of "targets" (adds the "targets" input)
};

// Throws txl::Error if the shape is invalid for the spec (mlen > memLen, ...).
ir::Graph buildSegmentGraph(const ModelSpec& spec, const SegmentShape& shape, const GraphOutputs& outputs = {});

}  // namespace txl::frontend
