// fuzz/artifact_image.h - the fuzzer's bytes as an artifact image the reader accepts past its checksum.
//
// The artifact targets copy the input into 64-byte aligned memory (as a
// mapped file is) and, when the header's total length matches the input,
// rewrite the trailing checksum: a checksum is for accidents, not attackers,
// so the mutations must reach the manifest and graph checks behind it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "driver/artifact.h"
#include "driver/content_hash.h"

namespace txl::fuzz {

inline std::shared_ptr<std::byte> artifactImage(const std::uint8_t* data, std::size_t size) {
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
  return image;
}

}  // namespace txl::fuzz
