// frontend/checkpoint_model.h - a model given as PyTorch checkpoint files.
//
// The files people have: a Hugging Face model folder (config.json +
// pytorch_model.bin, optionally vocab.pkl or vocab.txt), a bare
// pytorch_model.bin or state dict (the spec from --spec or a config.json
// beside it), or the authors' whole-model `torch.save(model)` (model.pt: the
// spec is read from the pickled module's attributes). Everything is read by
// frontend/torch_checkpoint.h, which interprets the pickles without running
// any of their code. The result keeps the source's tensor names and
// convention (a Hugging Face checkpoint stays a Hugging Face model); tied
// duplicates are dropped, half-precision tensors widened to f32.
//
// writeImportedModel() turns it into a txlc model folder (config.json,
// model.safetensors, vocab.txt, and for Hugging Face's tokenizer its
// tokenizer_config.json) that later runs map directly.
//
//   CheckpointModel m = readCheckpointModel("hf_tiny", std::nullopt);
//   writeImportedModel(m, "hf_tiny.txlc");
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "frontend/checkpoint_source.h"
#include "frontend/hf_word_tokenizer.h"
#include "frontend/model_spec.h"
#include "frontend/safetensors.h"
#include "ir/tensor.h"

namespace txl::frontend {

struct CheckpointModel {
  std::string source;        // as the user named it
  std::string configText;    // config.json of the imported folder
  std::string configSource;  // the file it came from, or "<source>: pickled module attributes"
  ModelSpec spec;
  std::vector<std::pair<std::string, ir::Tensor>> tensors;  // f32, the source's names, file order
  std::vector<std::string> notes;                           // what the reader changed (widening, ties)
  std::vector<std::string> vocabulary;                      // symbols by id; empty when there is none
  std::string vocabularySource;
  // transformers' tokenizer options, when the vocabulary is Hugging Face's
  // (vocab.pkl, or vocab.txt with a TransfoXLTokenizer's tokenizer_config.json).
  std::optional<HfTokenizerOptions> tokenizer;
};

// True when the file starts like a torch.save file (a zip archive, or the
// legacy format's pickled magic number).
bool isTorchCheckpointFile(const std::string& path);

// The checkpoint file a folder holds: pytorch_model.bin, else exactly one
// *.bin or *.pt file; empty when there is none.
std::string checkpointFileIn(const std::string& dir);

// Reads SRC (a folder or a checkpoint file). `specPath` gives the spec where
// the source has none of its own, or overrides it. Every problem is one
// txl::Error line naming the file.
CheckpointModel readCheckpointModel(const std::string& src, const std::optional<std::string>& specPath);

// The tensors as a tensor source, for bindWeights() (shared, not copied).
CheckpointSource tensorSource(const CheckpointModel& m);

// Writes config.json, model.safetensors and (with a vocabulary) vocab.txt,
// with Hugging Face's tokenizer options tokenizer_config.json, into `dir`, atomically: the files are written to a
// temporary folder beside it, which is renamed to `dir` once everything is on disk. `dir` must not exist, or be an
// empty folder.
void writeImportedModel(const CheckpointModel& m, const std::string& dir);

}  // namespace txl::frontend
