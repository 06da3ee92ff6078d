// backend/onednn/onednn_probe.h - what this machine can do: the best f32 and bf16
// matmul rates oneDNN reaches and the memory read bandwidth, measured, plus the thread
// count oneDNN runs with. `txlc bench` runs the probes in a child process
// (`txlc bench-probe`) so that their gigabyte of memory never shows up in the
// benchmarked model's resident set.
//
//   setThreads(2);                                  // before any oneDNN work
//   MatmulPeak p = measureMatmulPeak(false);        // f32: p.gflops ~ 450 on 2 AVX-512 cores
//   double gbs = measureReadBandwidth(1ull << 30);  // ~ 27 GB/s
#pragma once

#include <cstddef>
#include <string>

namespace txl::backend {

// Sets the OpenMP thread count oneDNN (and the backend's own kernels) use;
// call before the first primitive runs. n <= 0 leaves the default.
void setThreads(int n);
int threadCount();

struct MatmulPeak {
  double gflops = 0;  // best over the shapes
  std::string shape;  // "MxKxN" of the best
  std::string impl;   // its impl_info_str()
};

// A matmul (weights in the layout oneDNN picks, reordered once, as the plan
// does) over a few large shapes; the best of `repeats` timed runs each. f32,
// or with `bf16` the form txlc's bf16 linears take: bf16 inputs and weights,
// f32 accumulation and output.
MatmulPeak measureMatmulPeak(bool bf16, int repeats = 4);

// Read bandwidth in GB/s (1e9 bytes/s): the best of `repeats` parallel sums
// over a `bytes`-byte array (touched once first).
double measureReadBandwidth(std::size_t bytes, int repeats = 5);

}  // namespace txl::backend
