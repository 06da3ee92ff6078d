// backend/onednn/onednn_probe.cpp - matmul peak and read bandwidth (onednn_probe.h).
#include "backend/onednn/onednn_probe.h"

#include <omp.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "ir/check.h"

namespace txl::backend {

void setThreads(int n) {
  if (n > 0) omp_set_num_threads(n);
}

int threadCount() { return omp_get_max_threads(); }

namespace {

double seconds(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

}  // namespace

MatmulPeak measureMatmulPeak(bool bf16, int repeats) {
  using dnnl::memory;
  struct Shape {
    std::int64_t m, k, n;
  };
  // Square, wide and tall: the rate the best kernel reaches on large blocks.
  const Shape shapes[] = {{2048, 2048, 2048}, {1024, 4096, 2048}, {4096, 1024, 1024}};
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream s(eng);
  MatmulPeak best;
  try {
    const auto in = bf16 ? memory::data_type::bf16 : memory::data_type::f32;
    for (const Shape& sh : shapes) {
      memory::desc srcF32({sh.m, sh.k}, memory::data_type::f32, memory::format_tag::ab);
      memory::desc srcMd({sh.m, sh.k}, in, memory::format_tag::ab);
      memory::desc wAny({sh.k, sh.n}, in, memory::format_tag::any);
      memory::desc wPlain({sh.k, sh.n}, memory::data_type::f32, memory::format_tag::ab);
      memory::desc dstMd({sh.m, sh.n}, memory::data_type::f32, memory::format_tag::ab);
      dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(srcMd, wAny, dstMd), eng);
      memory srcPlain(srcF32, eng), src(srcMd, eng), plain(wPlain, eng), w(pd.weights_desc(), eng), dst(dstMd, eng);
      for (auto* m : {&srcPlain, &plain}) {
        float* p = static_cast<float*>(m->get_data_handle());
        const std::size_t count = m->get_desc().get_size() / sizeof(float);
        for (std::size_t i = 0; i < count; ++i) p[i] = float((i * 7919) % 1000) * 1e-3f - 0.5f;
      }
      dnnl::reorder(srcPlain, src).execute(s, srcPlain, src);  // f32 to the input type (a copy for f32)
      dnnl::reorder(plain, w).execute(s, plain, w);
      dnnl::matmul mm(pd);
      std::unordered_map<int, memory> args{{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_DST, dst}};
      mm.execute(s, args);  // warm-up
      s.wait();
      double bestTime = 1e30;
      for (int r = 0; r < repeats; ++r) {
        auto t0 = std::chrono::steady_clock::now();
        mm.execute(s, args);
        s.wait();
        bestTime = std::min(bestTime, seconds(t0, std::chrono::steady_clock::now()));
      }
      const double gflops = 2.0 * double(sh.m) * double(sh.k) * double(sh.n) / bestTime / 1e9;
      if (gflops > best.gflops)
        best = {gflops, std::to_string(sh.m) + "x" + std::to_string(sh.k) + "x" + std::to_string(sh.n),
                pd.impl_info_str()};
    }
  } catch (const dnnl::error& e) {
    throw InternalError(std::string("oneDNN ") + (bf16 ? "bf16" : "f32") + " matmul probe: " + e.what());
  }
  return best;
}

double measureReadBandwidth(std::size_t bytes, int repeats) {
  const std::size_t words = bytes / sizeof(std::uint64_t);
  auto* data = static_cast<std::uint64_t*>(std::aligned_alloc(64, words * sizeof(std::uint64_t)));
  if (!data) throw Error("bandwidth probe: out of memory allocating " + std::to_string(bytes) + " bytes");
  const std::int64_t n = std::int64_t(words);
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < n; ++i) data[i] = std::uint64_t(i);  // first touch by the reading thread
  double best = 1e30;
  for (int r = 0; r < repeats; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    std::uint64_t sum = 0;
#pragma omp parallel for schedule(static) reduction(+ : sum)
    for (std::int64_t i = 0; i < n; ++i) sum += data[i];
    best = std::min(best, seconds(t0, std::chrono::steady_clock::now()));
    asm volatile("" : : "r"(sum));  // the sum is used, so the loop must run
  }
  std::free(data);
  return double(words * sizeof(std::uint64_t)) / best / 1e9;
}

}  // namespace txl::backend
