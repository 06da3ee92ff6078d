// driver/content_hash.cpp - ContentHash.
#include "driver/content_hash.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace txl::driver {

namespace {

constexpr std::uint64_t kP1 = 0x9e3779b185ebca87ULL;
constexpr std::uint64_t kP2 = 0xc2b2ae3d27d4eb4fULL;
constexpr std::uint64_t kP3 = 0x165667b19e3779f9ULL;

std::uint64_t rotl(std::uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

std::uint64_t load64(const unsigned char* p) {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];  // little-endian on any host
  return v;
}

}  // namespace

ContentHash::ContentHash() : lanes_{kP1 + kP2, kP2, 0, 0 - kP1} {}

void ContentHash::block(const unsigned char* p) {
  for (int i = 0; i < 4; ++i) lanes_[i] = rotl(lanes_[i] + load64(p + 8 * i) * kP2, 31) * kP1;
}

void ContentHash::update(const void* data, std::size_t size) {
  const auto* p = static_cast<const unsigned char*>(data);
  total_ += size;
  if (buffered_ > 0) {
    std::size_t take = std::min(size, sizeof buffer_ - buffered_);
    std::memcpy(buffer_ + buffered_, p, take);
    buffered_ += take, p += take, size -= take;
    if (buffered_ < sizeof buffer_) return;
    block(buffer_);
    buffered_ = 0;
  }
  for (; size >= 32; p += 32, size -= 32) block(p);
  std::memcpy(buffer_, p, size);
  buffered_ = size;
}

std::uint64_t ContentHash::digest() const {
  std::uint64_t h = rotl(lanes_[0], 1) + rotl(lanes_[1], 7) + rotl(lanes_[2], 12) + rotl(lanes_[3], 18);
  h ^= total_ * kP3;
  for (std::size_t i = 0; i < buffered_; ++i) h = rotl(h ^ (buffer_[i] * kP3), 11) * kP1;
  h ^= h >> 33;
  h *= kP2;
  h ^= h >> 29;
  h *= kP3;
  h ^= h >> 32;
  return h;
}

std::uint64_t contentHash(const void* data, std::size_t size) {
  ContentHash h;
  h.update(data, size);
  return h.digest();
}

std::string hex64(std::uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace txl::driver
