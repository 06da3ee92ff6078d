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

#include "fuzz/artifact_image.h"
#include "fuzz/fuzz_common.h"
#include "driver/artifact.h"
#include "driver/content_hash.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace txl;
  std::shared_ptr<std::byte> image = fuzz::artifactImage(data, size);
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
