// tests/backend/window_read_order_test.cpp - how fast this machine reads a
// batch-8 state window from memory in the orders a one-row attention could
// take (a benchmark, hidden: run it by name).
//
// The row-wise attention (backend/kernels/rel_attention_rows.cpp) reads
// every key and value row of the window once per generated token, so its
// speed at batch 8 is bounded by how fast the two threads can stream the
// window in the kernel's order. This bench reads 12 layers of enwik8-base
// windows (8 streams x 2 x 512 bf16 per position) with no arithmetic but a
// running sum, in three orders, alternated in one process:
//   - kernel: the window as the session lays it out ([positions, batch,
//     k|v, heads x d]) in the kernel's order: tasks of (128 keys, 4
//     streams), per group of 32 keys each stream's key rows in turn, then
//     the chunk's value rows the same way;
//   - planes: the same order over a window laid out per stream, keys and
//     values in separate planes ([batch, k|v, positions, heads x d]);
//   - rows: the session's layout, each thread a half of the positions, each
//     position's 16 KB (every stream's key and value rows) in address order.
// All three prefetch 4 keys ahead, as the kernel does.
#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <vector>

#include <catch2/catch.hpp>

#include "backend/platform.h"

namespace {

using I = std::int64_t;

constexpr I kBatch = 8, kWidth = 512, kLayers = 12, kPrefetch = 4, kChunk = 128, kGroup = 32, kBlock = 4;

enum class Order { Kernel, Planes, Rows };

// The sum of a row of kWidth bf16 words (as 32-bit lanes) into acc, with the
// row `ahead` elements further prefetched.
__attribute__((target("avx512f"))) inline void readRow(const std::uint16_t* row, I ahead, __m512i& acc) {
  for (I line = 0; line < kWidth * 2 / 64; ++line) {
    _mm_prefetch(reinterpret_cast<const char*>(row + ahead) + 64 * line, _MM_HINT_T0);
    acc = _mm512_add_epi32(acc, _mm512_loadu_si512(row + 32 * line));
  }
}

__attribute__((target("avx512f"))) double readWindows(const std::vector<std::uint16_t>& data, I keys, Order order) {
  const auto t0 = std::chrono::steady_clock::now();
  std::uint64_t total = 0;
  for (I layer = 0; layer < kLayers; ++layer) {
    const std::uint16_t* window = data.data() + layer * kBatch * keys * 2 * kWidth;
    // Element offset of (position j, stream b, part 0 = key / 1 = value) and
    // the distance to the same row kPrefetch keys on.
    const bool planes = order == Order::Planes;
    const auto at = [&](I j, I b, I part) {
      return planes ? (b * 2 + part) * keys * kWidth + j * kWidth : (j * kBatch + b) * 2 * kWidth + part * kWidth;
    };
    const I ahead = kPrefetch * (planes ? kWidth : kBatch * 2 * kWidth);
#pragma omp parallel reduction(+ : total)
    {
      __m512i acc = _mm512_setzero_si512();
      if (order == Order::Rows) {
        const int t = omp_get_thread_num(), n = omp_get_num_threads();
        const I first = keys * t / n, last = keys * (t + 1) / n;
        for (I j = first; j < last; ++j)
          for (I b = 0; b < kBatch; ++b)
            for (I part = 0; part < 2; ++part) readRow(window + at(j, b, part), ahead, acc);
      } else {
        const I chunks = (keys + kChunk - 1) / kChunk, blocks = kBatch / kBlock;
#pragma omp for schedule(dynamic)
        for (I task = 0; task < chunks * blocks; ++task) {
          const I j1 = task / blocks * kChunk, j2 = std::min(j1 + kChunk, keys), b1 = task % blocks * kBlock;
          for (I part = 0; part < 2; ++part)
            for (I g = j1; g < j2; g += kGroup)
              for (I b = b1; b < b1 + kBlock; ++b)
                for (I j = g; j < std::min(g + kGroup, j2); ++j) readRow(window + at(j, b, part), ahead, acc);
        }
      }
      alignas(64) std::uint32_t lanes[16];
      _mm512_store_si512(lanes, acc);
      for (std::uint32_t x : lanes) total += x;
    }
  }
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  CHECK(total > 0);
  return ms;
}

}  // namespace

TEST_CASE("window reads: a batch-8 window in the row-wise kernel's order and in others", "[.bench]") {
  if (!txl::backend::platform().avx512) {
    WARN("window reads: skipped (this CPU has no AVX-512)");
    return;
  }
  for (const I keys : {I(513), I(2101)}) {
    // One window per layer, and a row of slack for the prefetches past the end.
    std::vector<std::uint16_t> data(std::size_t((kLayers * keys + kPrefetch + 1) * kBatch * 2 * kWidth), 1);
    const Order orders[] = {Order::Kernel, Order::Planes, Order::Rows};
    const char* names[] = {"kernel", "planes", "rows"};
    std::vector<double> ms[3];
    for (int round = 0; round < 30; ++round)
      for (int o = 0; o < 3; ++o) ms[o].push_back(readWindows(data, keys, orders[o]));
    const double bytes = double(kLayers * kBatch * keys * 2 * kWidth * 2);
    for (int o = 0; o < 3; ++o) {
      std::sort(ms[o].begin(), ms[o].end());
      const double median = ms[o][ms[o].size() / 2];
      std::printf("window reads, batch 8, %lld keys, 12 layers, threads %d, %s order: median %.3f ms (%.1f GB/s)\n",
                  static_cast<long long>(keys), omp_get_max_threads(), names[o], median, bytes / median * 1e-6);
    }
  }
}
