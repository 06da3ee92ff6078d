// backend/platform.h - what txlc runs on: the CPU, its cores, and the oneDNN
// library with the instruction set it dispatches to.
//
// Every machine-readable benchmark record and `txlc --version` carry these,
// so a figure can always be traced to the machine and library that made it.
//
//   const Platform& p = platform();
//   std::cout << p.cpu << ", oneDNN " << p.onednnVersion << " (" << p.onednnIsa << ")\n";
#pragma once

#include <string>

namespace txl::backend {

struct Platform {
  std::string cpu;            // /proc/cpuinfo's "model name" ("unknown" if absent)
  int physicalCores = 0;      // distinct (physical id, core id) pairs; the logical CPUs when unknown
  int logicalCpus = 0;        // CPUs this process may run on (its affinity mask)
  std::string onednnVersion;  // "2.6.0 (52b5f107)"
  std::string onednnIsa;      // the ISA oneDNN's CPU engine dispatches to ("avx512_core_bf16")
  // That ISA includes AVX512-BF16 (avx512_core_bf16, or AMX, which implies it):
  // oneDNN runs bf16 matmuls natively. DNNL_MAX_CPU_ISA lowers the ISA, so it
  // can turn this off on a machine that has it.
  bool bf16Matmuls = false;
  // What the own kernels (rel_attention, int8_linear) may use, as the CPU
  // reports it (DNNL_MAX_CPU_ISA does not lower these): AVX-512 F/BW/DQ/VL
  // with FMA, and on top of it AVX512-BF16's dot products.
  bool avx512 = false;
  bool avx512Bf16 = false;
  // AVX512-VNNI's byte dot products (vpdpbusd): int8_linear's path for many rows.
  bool avx512Vnni = false;
  // AMX (amx-bf16): not used, but it marks the cores whose AVX512-BF16 dot
  // products are no faster than f32 FMAs (rel_attention's choice of path).
  bool amx = false;
};

// Read once, on first use.
const Platform& platform();

}  // namespace txl::backend
