// driver/content_hash.h - a fast 64-bit content hash for checksums and model ids.
//
// Not cryptographic: it detects corruption and tells models apart. Four
// 64-bit lanes each take one little-endian word of every 32-byte block
// (lane = rotl(lane + word * kP2, 31) * kP1); the tail is folded in byte by
// byte; the lanes are merged and avalanched at the end. docs/ARTIFACT.md gives
// the exact definition. Streaming: update() may be called with any split of
// the input and gives the same digest.
//
//   ContentHash h;
//   h.update(data, size);
//   std::uint64_t d = h.digest();
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace txl::driver {

class ContentHash {
 public:
  ContentHash();
  void update(const void* data, std::size_t size);
  void update(std::string_view s) { update(s.data(), s.size()); }
  std::uint64_t digest() const;

 private:
  void block(const unsigned char* p);
  std::uint64_t lanes_[4];
  unsigned char buffer_[32];
  std::size_t buffered_ = 0;
  std::uint64_t total_ = 0;
};

std::uint64_t contentHash(const void* data, std::size_t size);
std::string hex64(std::uint64_t v);  // 16 lowercase hex digits

}  // namespace txl::driver
