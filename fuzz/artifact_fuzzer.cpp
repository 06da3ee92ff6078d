// fuzz/artifact_fuzzer.cpp - libFuzzer target: compiled artifacts.
//
// Bytes -> driver::parseArtifact. The image is copied into a 64-byte aligned
// buffer, as a mapped file would be. Random bytes almost never carry a valid
// checksum, which would stop every input at the first check; so for images
// long enough to hold one, the harness first writes the correct checksum
// over the last 8 bytes of the length the header claims, letting the fuzzer
// reach the header, manifest and weight-table checks. The checksum check
// itself is exercised by inputs whose claimed length is not the image's.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "fuzz/fuzz_common.h"
#include "driver/artifact.h"
#include "driver/content_hash.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace txl;
  const std::size_t capacity = (size + 63) / 64 * 64 + 64;
  std::shared_ptr<std::byte> image(static_cast<std::byte*>(std::aligned_alloc(64, capacity)), std::free);
  if (size) std::memcpy(image.get(), data, size);
  if (size >= driver::kArtifactHeaderBytes + 8) {
    std::uint64_t total = 0;
    for (int i = 7; i >= 0; --i) total = total << 8 | std::uint64_t(std::to_integer<unsigned>(image.get()[48 + i]));
    if (total == size) {
      std::uint64_t sum = driver::contentHash(image.get(), size - 8);
      for (int i = 0; i < 8; ++i) image.get()[size - 8 + i] = std::byte(sum >> (8 * i) & 0xff);
    }
  }
  try {
    driver::Artifact a = driver::parseArtifact(image, image.get(), size, "fuzz.txla");
    for (const auto& [name, t] : a.weights)
      if (t.bytes()) {
        // Every weight must view the image: touch its first and last byte.
        volatile std::byte first = static_cast<const std::byte*>(t.raw())[0];
        volatile std::byte last = static_cast<const std::byte*>(t.raw())[t.bytes() - 1];
        (void)first, (void)last;
      }
  } catch (const Error& e) {
    fuzz::requireOneLine(e);
  }
  return 0;
}
