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
#include "ir/segment.h"

namespace txl::frontend {

// The segment of `batch` streams, `qlen` tokens against `mlen` remembered
// positions, with the settings the spec trains with: its own mem_len,
// clamp_len, same_length; both outputs, no padding.
ir::Segment defaultSegment(const ModelSpec& spec, std::int64_t batch, std::int64_t qlen, std::int64_t mlen);

// Throws txl::Error if the segment is invalid for the spec (mlen > memLen, ...).
ir::Graph buildSegmentGraph(const ModelSpec& spec, const ir::Segment& segment);

}  // namespace txl::frontend
