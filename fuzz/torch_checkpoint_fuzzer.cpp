// fuzz/torch_checkpoint_fuzzer.cpp - libFuzzer target: PyTorch checkpoint and vocabulary files.
//
// Bytes -> frontend::readTorchCheckpoint (zip directory and local headers,
// the legacy container, the object pickle under the torch allow-list, views
// against storages, ties, the memory bound, widening) and, when that gives a
// whole module, authorsModelSpec; then the same bytes as a vocabulary pickle.
// Every tensor must have the element count its shape says; nothing may
// escape but a one-line txl::Error.
#include <cstddef>
#include <cstdint>
#include <span>

#include "frontend/torch_checkpoint.h"
#include "fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace txl;
  std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  try {
    frontend::TorchCheckpoint ck = frontend::readTorchCheckpoint(bytes, "f.bin");
    for (const frontend::CheckpointTensor& t : ck.tensors) {
      fuzz::require(t.tensor.dtype() == ir::DType::F32, "a tensor that is not f32");
      fuzz::require(t.tensor.numel() == 0 || t.tensor.raw() != nullptr, "a tensor without data");
      float sum = 0;  // every element readable (ASan)
      for (float x : t.tensor.span<float>()) sum += x;
      (void)sum;
    }
    if (!ck.moduleClass.empty()) {
      try {
        (void)frontend::authorsModelSpec(ck);
      } catch (const Error& e) {
        fuzz::requireOneLine(e);
      }
    }
  } catch (const Error& e) {
    fuzz::requireOneLine(e);
  }
  try {
    (void)frontend::readVocabularyPickle(bytes, "f.pkl");
  } catch (const Error& e) {
    fuzz::requireOneLine(e);
  }
  return 0;
}
