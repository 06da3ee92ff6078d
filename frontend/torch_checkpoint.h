// frontend/torch_checkpoint.h - PyTorch checkpoints (torch.save) read without running pickle code.
//
// Reads the files people have for a Transformer-XL: Hugging Face's
// pytorch_model.bin (a state dict), the authors' model.pt (torch.save of the
// whole MemTransformerLM), a bare state_dict.pt, and vocab.pkl vocabularies,
// in torch's zip format (torch >= 1.6) and in the legacy format before it.
// The pickles are run by frontend/pickle.h with an allow-list of globals, so
// nothing is ever imported or called; docs/CHECKPOINTS.md lists the
// allow-list, what is refused and every bound.
//
//   TorchCheckpoint ck = readTorchCheckpoint("hf/pytorch_model.bin");
//   for (const CheckpointTensor& t : ck.tensors)
//     if (t.tiedTo.empty()) use(t.name, t.tensor);        // a tie repeats an earlier tensor
//   nlohmann::json spec = authorsModelSpec(readTorchCheckpoint("model.pt"));
//   std::vector<std::string> idx2sym = readVocabularyPickle("hf/vocab.pkl");
//
// Every problem is one txl::Error line naming the file, the place (zip entry,
// tensor name, pickle opcode and byte offset), what was expected and what was
// found:
//   pytorch_model.bin: tensor "transformer.layers.0.dec_attn.o_net.weight": storage offset 4096 is past
//   storage "0"'s 1024 elements
#pragma once

#include <cstddef>
#include <map>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "frontend/hf_word_tokenizer.h"
#include "ir/tensor.h"

namespace txl::frontend {

// One tensor of a checkpoint, widened to F32.
struct CheckpointTensor {
  std::string name;         // state-dict name, in file order
  ir::Tensor tensor;        // f32, contiguous (an F32 storage read from a file may be a view of its read-only mapping)
  std::string storedDType;  // "F32", "F16", "BF16", "F64"
  std::string tiedTo;       // non-empty: the same storage, offset, shape and stride as this earlier tensor (a tie)
};

struct TorchCheckpoint {
  std::string path;
  std::string format;                     // "zip" or "legacy"
  std::vector<CheckpointTensor> tensors;  // a state dict's entries, or a whole model's parameters and buffers
  // For a whole pickled nn.Module (the authors' model.pt): the root module's
  // class ("mem_transformer.MemTransformerLM") and the plain attributes of
  // every module by dotted path ("" = the root, "crit", "layers.0.pos_ff", ...)
  // as JSON (ints, floats, bools, strings, lists and tuples as arrays, None as
  // null; attributes whose names start with "_" are left out). Empty for a state dict.
  std::string moduleClass;
  std::map<std::string, nlohmann::json> moduleAttributes;
  // Each module's class by dotted path (same keys as moduleAttributes).
  std::map<std::string, std::string> moduleClasses;
};

// Reads the checkpoint at `path` (zip or legacy, detected from the first bytes).
TorchCheckpoint readTorchCheckpoint(const std::string& path);
// The same from an image in memory (tests, fuzzing); errors name `name`. The
// tensors are copies: nothing refers to `bytes` afterwards.
TorchCheckpoint readTorchCheckpoint(std::span<const std::byte> bytes, const std::string& name);

// A vocabulary pickle: Hugging Face's vocab.pkl (pickle.dump of a
// TransfoXLTokenizer's __dict__) or the hub's torch.save'd Vocab.__dict__
// (legacy torch format, no storages). Returns idx2sym (the symbols in id order).
std::vector<std::string> readVocabularyPickle(const std::string& path);
std::vector<std::string> readVocabularyPickle(std::span<const std::byte> bytes, const std::string& name);

// The same pickle's symbols and the tokenizer options it records:
// lower_case (a bool; None or absent: false), delimiter (a string or None),
// language (absent: "en"), and the `special` and `never_split` lists, added to
// transformers' default special tokens.
struct VocabularyPickle {
  std::vector<std::string> symbols;
  HfTokenizerOptions tokenizer;
};
VocabularyPickle readVocabularyPickleWithOptions(const std::string& path);
VocabularyPickle readVocabularyPickleWithOptions(std::span<const std::byte> bytes, const std::string& name);

// The reference-style spec (frontend/model_spec.h's reference dialect: n_token,
// n_layer, n_head, d_model, d_head, d_inner, d_embed, div_val, cutoffs,
// tie_weight, tie_projs, pre_lnorm, tgt_len, ext_len, mem_len, same_length,
// attn_type, clamp_len, untie_r, dropout, dropatt, layer_norm_epsilon,
// sample_softmax) of a whole-model checkpoint, from its modules' attributes
// and, for the ties, from which parameters are one object. txl::Error naming
// the missing attribute when the pickle is not a MemTransformerLM.
nlohmann::json authorsModelSpec(const TorchCheckpoint& ckpt);

}  // namespace txl::frontend
