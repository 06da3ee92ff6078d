// tests/ir/host_memory_test.cpp - allocateZeroed / allocateUntouched: sizes,
// alignment, zeros, and the huge-page advice on large buffers.
#include "ir/host_memory.h"

#include <catch2/catch.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <sys/stat.h>

using txl::ir::allocateUntouched;
using txl::ir::allocateZeroed;
using txl::ir::kHugePageBytes;

namespace {

std::uintptr_t address(const std::shared_ptr<void>& p) { return reinterpret_cast<std::uintptr_t>(p.get()); }

bool allZero(const void* p, std::size_t bytes) {
  const auto* b = static_cast<const unsigned char*>(p);
  for (std::size_t i = 0; i < bytes; ++i)
    if (b[i] != 0) return false;
  return true;
}

// The VmFlags line of the /proc/self/smaps mapping that contains `p` (a
// mapping's header line is "lo-hi perms ...", in hex; no field line parses so).
std::string vmFlagsOf(const void* p) {
  std::ifstream smaps("/proc/self/smaps");
  const auto at = reinterpret_cast<std::uintptr_t>(p);
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    unsigned long lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx", &lo, &hi) == 2) inside = lo <= at && at < hi;
    else if (inside && line.rfind("VmFlags:", 0) == 0) return line;
  }
  return "";
}

bool systemHasThp() {
  struct stat st {};
  return ::stat("/sys/kernel/mm/transparent_hugepage/enabled", &st) == 0;
}

}  // namespace

TEST_CASE("host memory: small buffers are zeroed and 64-byte aligned", "[host_memory]") {
  for (std::size_t bytes : {std::size_t{0}, std::size_t{1}, std::size_t{100}, std::size_t{4096}, kHugePageBytes - 64}) {
    const auto p = allocateZeroed(bytes);
    REQUIRE(p);
    CHECK(address(p) % 64 == 0);
    CHECK(allZero(p.get(), bytes));
    std::memset(p.get(), 0xab, bytes);  // writable over its whole length (ASan checks the bounds)
  }
}

TEST_CASE("host memory: large buffers start at a huge-page boundary, advised MADV_HUGEPAGE", "[host_memory]") {
  const char* env = std::getenv("TXL_HUGE_PAGES");
  if (env && std::string(env) == "0") {
    WARN("TXL_HUGE_PAGES=0: large buffers are on small pages, nothing to check");
    return;
  }
  for (std::size_t bytes : {kHugePageBytes, 3 * kHugePageBytes + 12345}) {
    const auto zeroed = allocateZeroed(bytes), untouched = allocateUntouched(bytes);
    CHECK(address(zeroed) % kHugePageBytes == 0);
    CHECK(address(untouched) % kHugePageBytes == 0);
    CHECK(allZero(zeroed.get(), bytes));
    std::memset(zeroed.get(), 0xab, bytes);
    std::memset(untouched.get(), 0xcd, bytes);
    if (systemHasThp()) {
      CHECK(vmFlagsOf(zeroed.get()).find(" hg") != std::string::npos);
      CHECK(vmFlagsOf(untouched.get()).find(" hg") != std::string::npos);
    }
  }
}
