// frontend/initial_memory.h - the rows of Hugging Face's zero initial memory.
//
// Hugging Face's forward(mems=None), like the authors' TensorFlow code, starts
// every stream with mem_len positions per layer whose layer input is the zero
// vector; they are attended like real positions (docs/SEMANTICS.md). What one
// such position holds depends on the memory form of the slot:
//   hidden  the layer input itself: zeros [batch, d_model];
//   kv      layer l's projected keys and values (passes/cache_projected_memory):
//           the key and value columns of qkv_net applied to the layer's
//           attention input, which is the zero vector (post-norm) or
//           LayerNorm(0) = dec_attn.layer_norm.bias (pre-norm) [batch, 2·H·D].
//
//   ir::Tensor row = zeroMemoryRow(spec, weights, /*slot=*/1, {batch, 2 * H * D}, MemoryForm::Kv);
#pragma once

#include <cstdint>

#include "frontend/model_spec.h"
#include "frontend/weights.h"
#include "ir/segment_abi.h"
#include "ir/tensor.h"

namespace txl::frontend {

using ir::MemoryForm;

// One position of the zero initial memory of `slot`, f32[rowShape] with
// rowShape = [batch, width]. Throws txl::InternalError when the width does not
// fit the form (d_model for hidden, 2·n_head·d_head for kv) or the kv form is
// asked of a slot that has no attention (slot n_layer, attn_type 2).
ir::Tensor zeroMemoryRow(const ModelSpec& spec, const WeightMap& weights, std::int64_t slot, const ir::Shape& rowShape,
                         MemoryForm form);

}  // namespace txl::frontend
