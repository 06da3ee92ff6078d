// frontend/weights.h - the model's tensors, bound by the reference's state_dict names.
//
// weightSlots(spec) lists every tensor a model with that spec has, under the
// reference's names (kimiyoung/transformer-xl `state_dict()`), with its shape;
// tied tensors (tie_weight, tie_projs) are slots that alias another one.
// bindWeights() finds each slot in a tensor source (frontend/tensor_source.h:
// a safetensors file, a PyTorch checkpoint), by reference names or
// by Hugging Face names (`transformer.` prefix on everything but `crit.*`,
// per-layer `r_w_bias` / `r_r_bias` with untie_r), checks shapes, converts to
// f32 and returns a WeightMap holding every canonical name; a tied name maps
// to the same buffer as its target. docs/WEIGHTS.md describes the rules.
//
//   SafetensorsFile file = SafetensorsFile::open("model.safetensors");
//   WeightMap w = bindWeights(spec, file);
//   const ir::Tensor& qkv = w.at("layers.0.dec_attn.qkv_net.weight");  // [3*H*D, d_model]
//
// Canonical names, attn_type 0 (attn_type 2: q_net and kv_net instead of
// qkv_net and r_net, and no r_w_bias / r_r_bias):
//   word_emb.emb_layers.{i}.weight     [rows_i, e_i]   (div_val 1: one table [n_token, d_embed])
//   word_emb.emb_projs.{i}             [d_model, e_i]  (div_val > 1; div_val 1: only .0, when d_embed != d_model)
//   layers.{l}.dec_attn.qkv_net.weight [3*H*D, d_model]
//   layers.{l}.dec_attn.r_net.weight   [H*D, d_model]
//   layers.{l}.dec_attn.o_net.weight   [d_model, H*D]
//   layers.{l}.dec_attn.layer_norm.{weight,bias}, layers.{l}.pos_ff.layer_norm.{weight,bias}  [d_model]
//   layers.{l}.pos_ff.CoreNet.0.{weight,bias}  [d_inner, d_model], [d_inner]
//   layers.{l}.pos_ff.CoreNet.3.{weight,bias}  [d_model, d_inner], [d_model]
//   r_w_bias, r_r_bias                 [n_layer, H, D] with untie_r, else [H, D]
//   crit.out_layers.{i}.weight/.bias   [rows_i, e_i], [rows_i]  (div_val 1: only .0, [n_token, d_embed])
//   crit.out_projs.{i}                 [d_model, e_i]  (every cluster, when div_val > 1 or d_embed != d_model)
//   crit.cluster_weight, crit.cluster_bias  [clusters-1, d_embed], [clusters-1]  (with cutoffs)
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "frontend/model_spec.h"
#include "frontend/safetensors.h"
#include "frontend/tensor_source.h"
#include "ir/tensor.h"

namespace txl::frontend {

using WeightMap = std::map<std::string, ir::Tensor>;

struct WeightSlot {
  std::string name;  // canonical (reference) name
  ir::Shape shape;
  std::string aliasOf;  // non-empty: tied, the same tensor as this earlier slot
};

// Every tensor of the model, targets before the slots that alias them.
std::vector<WeightSlot> weightSlots(const ModelSpec& spec);

// The Hugging Face name of a canonical name ("transformer." + name, except
// crit.*; with untie_r, r_w_bias and r_r_bias are per layer and have no single
// Hugging Face name: this returns the name of layer 0's).
std::string huggingFaceName(const ModelSpec& spec, const std::string& canonical);

struct BindOptions {
  NonFinitePolicy nonFinite = NonFinitePolicy::Refuse;
  std::function<void(const std::string&)> warn;  // null: "warning: ..." on stderr
};

// Binds every slot of `spec` to a tensor of `file` (f32), converting one
// tensor at a time; a tensor the source holds as f32 is bound in place. A missing,
// unexpected or mis-shaped tensor, a stored tied copy that differs from its
// target, or a name given twice (reference and Hugging Face spellings) is a
// txl::Error naming the tensor(s).
WeightMap bindWeights(const ModelSpec& spec, const TensorSource& file, const BindOptions& options = {});

// Deterministic weights for `--random-weights`: uniform in ±0.02·√3 (standard
// deviation 0.02, like the reference's init_std), layer norms weight 1 and
// bias 0; tied slots alias their targets. Each tensor's values depend only on
// `seed` and its name.
WeightMap randomWeights(const ModelSpec& spec, std::uint64_t seed);

}  // namespace txl::frontend
