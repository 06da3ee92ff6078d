// frontend/initial_memory.cpp - zeroMemoryRow().
#include "frontend/initial_memory.h"

#include <algorithm>

#include "ir/check.h"

namespace txl::frontend {

ir::Tensor zeroMemoryRow(const ModelSpec& spec, const WeightMap& weights, std::int64_t slot, const ir::Shape& rowShape,
                         MemoryForm form) {
  TXL_CHECK(rowShape.size() == 2, "a memory row has shape [batch, width]");
  const std::int64_t batch = rowShape[0], width = rowShape[1];
  ir::Tensor row = ir::Tensor::zeros({ir::DType::F32, rowShape});
  const std::int64_t hd = spec.n_head * spec.d_head;
  if (form == MemoryForm::Hidden) {
    TXL_CHECK(width == spec.d_model, "a hidden memory row of slot " + std::to_string(slot) + " has width " +
                                         std::to_string(width) + ", not d_model");
    return row;
  }
  TXL_CHECK(spec.attn_type == 0 && slot >= 0 && slot < spec.n_layer && width == 2 * hd,
            "slot " + std::to_string(slot) + " of width " + std::to_string(width) + " is not a kv memory slot");
  if (!spec.pre_lnorm) return row;  // qkv_net has no bias: the keys and values of a zero input are zero

  // Pre-norm: the attention reads LayerNorm(0) = beta. Keys and values are
  // rows [H·D, 3·H·D) of qkv_net's output, in that order.
  const std::string layer = "layers." + std::to_string(slot) + ".dec_attn.";
  const ir::Tensor& qkv = weights.at(layer + "qkv_net.weight");  // [3·H·D, d_model]
  const ir::Tensor& beta = weights.at(layer + "layer_norm.bias");
  TXL_CHECK(qkv.shape() == ir::Shape({3 * hd, spec.d_model}) && beta.numel() == spec.d_model,
            "unexpected qkv_net or layer_norm shapes in layer " + std::to_string(slot));
  const float* w = qkv.data<float>();
  const float* b = beta.data<float>();
  float* out = row.data<float>();
  for (std::int64_t c = 0; c < 2 * hd; ++c) {
    const float* wr = w + (hd + c) * spec.d_model;
    double sum = 0;
    for (std::int64_t k = 0; k < spec.d_model; ++k) sum += double(wr[k]) * double(b[k]);
    out[c] = float(sum);
  }
  for (std::int64_t s = 1; s < batch; ++s) std::copy(out, out + width, out + s * width);
  return row;
}

}  // namespace txl::frontend
