// fuzz/safetensors_fuzzer.cpp - libFuzzer target: safetensors images.
//
// Bytes -> frontend::SafetensorsFile::fromBytes (header, dtypes, shapes,
// byte ranges, overlaps), then every tensor through toF32 (all three
// non-finite policies' code paths) and toI64, and bytes(). Every element read
// must lie inside the image: ASan watches the byte vector's bounds.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <vector>

#include "frontend/safetensors.h"
#include "fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace txl;
  std::vector<std::byte> bytes(size);
  if (size) std::memcpy(bytes.data(), data, size);
  std::optional<frontend::SafetensorsFile> file;
  try {
    file.emplace(frontend::SafetensorsFile::fromBytes(std::move(bytes), "m.safetensors"));
  } catch (const Error& e) {
    fuzz::requireOneLine(e);
    return 0;
  }
  frontend::ConvertOptions warn;
  warn.nonFinite = frontend::NonFinitePolicy::Warn;
  warn.warn = [](const std::string& w) { fuzz::require(w.find('\n') == std::string::npos, "multi-line warning"); };
  frontend::ConvertOptions allow;
  allow.nonFinite = frontend::NonFinitePolicy::Allow;
  for (const std::string& name : file->names()) {
    const frontend::TensorInfo& info = file->info(name);
    fuzz::require(info.begin <= info.end, "accepted a tensor whose range ends before it begins");
    (void)file->bytes(name);
    const frontend::ConvertOptions* policies[] = {&allow, &warn, nullptr};  // nullptr: the default, Refuse
    for (const frontend::ConvertOptions* options : policies) {
      try {
        ir::Tensor t = options ? file->toF32(name, *options) : file->toF32(name);
        fuzz::require(t.numel() == info.numel(), "toF32 changed the element count");
      } catch (const Error& e) {
        fuzz::requireOneLine(e);
      }
    }
    try {
      (void)file->toI64(name);
    } catch (const Error& e) {
      fuzz::requireOneLine(e);
    }
  }
  return 0;
}
