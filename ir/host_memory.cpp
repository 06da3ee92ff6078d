// ir/host_memory.cpp - allocateZeroed() and allocateUntouched(): aligned_alloc
// for small buffers, a huge-page-advised anonymous mapping for large ones
// (host_memory.h).
#include "ir/host_memory.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>

namespace txl::ir {

namespace {

std::size_t roundUp(std::size_t n, std::size_t to) { return (n + to - 1) / to * to; }

struct Buffer {
  std::shared_ptr<void> owner;
  std::size_t length;  // bytes usable from owner.get()
};

// `bytes` (rounded to pages) at a 2 MiB boundary: map 2 MiB more, unmap the
// slack on both sides. Anonymous pages read as zero until written.
Buffer hugePageBuffer(std::size_t bytes) {
  static const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  const std::size_t length = roundUp(bytes, page), mapped = length + kHugePageBytes;
  void* raw = ::mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) throw std::bad_alloc();
  const auto base = reinterpret_cast<std::uintptr_t>(raw);
  const std::uintptr_t aligned = roundUp(base, kHugePageBytes), end = aligned + length;
  if (aligned > base) ::munmap(raw, aligned - base);
  if (base + mapped > end) ::munmap(reinterpret_cast<void*>(end), base + mapped - end);
  void* p = reinterpret_cast<void*>(aligned);
  ::madvise(p, length, MADV_HUGEPAGE);  // advice only: without THP these stay small pages
  return {std::shared_ptr<void>(p, [length](void* q) { ::munmap(q, length); }), length};
}

Buffer smallBuffer(std::size_t bytes) {
  const std::size_t length = roundUp(bytes == 0 ? 1 : bytes, 64);
  void* p = std::aligned_alloc(64, length);
  if (!p) throw std::bad_alloc();
  return {std::shared_ptr<void>(p, [](void* q) { std::free(q); }), length};
}

// TXL_HUGE_PAGES=0 in the environment: every buffer on small pages (to
// measure what huge pages buy, or where THP's memory cost is unwelcome).
bool hugePagesWanted() {
  static const bool wanted = [] {
    const char* v = std::getenv("TXL_HUGE_PAGES");
    return !(v && std::strcmp(v, "0") == 0);
  }();
  return wanted;
}

Buffer buffer(std::size_t bytes) {
  return bytes >= kHugePageBytes && hugePagesWanted() ? hugePageBuffer(bytes) : smallBuffer(bytes);
}

}  // namespace

std::shared_ptr<void> allocateZeroed(std::size_t bytes) {
  Buffer b = buffer(bytes);
  std::memset(b.owner.get(), 0, b.length);  // faults every page in
  return std::move(b.owner);
}

std::shared_ptr<void> allocateUntouched(std::size_t bytes) { return buffer(bytes).owner; }

}  // namespace txl::ir
