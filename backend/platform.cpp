// backend/platform.cpp - platform(): /proc/cpuinfo, the affinity mask and oneDNN's own report.
#include "backend/platform.h"

#include <cpuid.h>
#include <sched.h>

#include <fstream>
#include <set>
#include <utility>

#include <oneapi/dnnl/dnnl.h>

namespace txl::backend {

namespace {

std::string isaName(dnnl_cpu_isa_t isa) {
  switch (isa) {
    case dnnl_cpu_isa_sse41:
      return "sse41";
    case dnnl_cpu_isa_avx:
      return "avx";
    case dnnl_cpu_isa_avx2:
      return "avx2";
    case dnnl_cpu_isa_avx2_vnni:
      return "avx2_vnni";
    case dnnl_cpu_isa_avx512_mic:
      return "avx512_mic";
    case dnnl_cpu_isa_avx512_mic_4ops:
      return "avx512_mic_4ops";
    case dnnl_cpu_isa_avx512_core:
      return "avx512_core";
    case dnnl_cpu_isa_avx512_core_vnni:
      return "avx512_core_vnni";
    case dnnl_cpu_isa_avx512_core_bf16:
      return "avx512_core_bf16";
    case dnnl_cpu_isa_avx512_core_amx:
      return "avx512_core_amx";
    default:
      return "isa " + std::to_string(int(isa));
  }
}

Platform probe() {
  Platform p;
  p.cpu = "unknown";
  std::ifstream in("/proc/cpuinfo");
  std::set<std::pair<std::string, std::string>> cores;  // (physical id, core id)
  std::string line, physical = "0";
  while (std::getline(in, line)) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = line.substr(0, colon), value = line.substr(colon + 1);
    while (!key.empty() && (key.back() == ' ' || key.back() == '\t')) key.pop_back();
    if (!value.empty() && value.front() == ' ') value.erase(0, 1);
    if (key == "model name" && p.cpu == "unknown") p.cpu = value;
    else if (key == "physical id") physical = value;
    else if (key == "core id") cores.insert({physical, value});
  }
  cpu_set_t set;
  CPU_ZERO(&set);
  p.logicalCpus = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
  p.physicalCores = cores.empty() ? p.logicalCpus : std::min(int(cores.size()), p.logicalCpus);
  if (p.physicalCores < 1) p.physicalCores = 1;
  const dnnl_version_t* v = dnnl_version();
  p.onednnVersion = std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch);
  const std::string hash = v->hash ? v->hash : "";
  if (!hash.empty() && hash != "N/A") p.onednnVersion += " (" + hash + ")";
  const dnnl_cpu_isa_t isa = dnnl_get_effective_cpu_isa();
  p.onednnIsa = isaName(isa);
  p.bf16Matmuls = (unsigned(isa) & unsigned(dnnl_cpu_isa_avx512_core_bf16)) == unsigned(dnnl_cpu_isa_avx512_core_bf16);
  p.avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("fma");
  p.avx512Bf16 = p.avx512 && __builtin_cpu_supports("avx512bf16");
  p.avx512Vnni = p.avx512 && __builtin_cpu_supports("avx512vnni");
  // CPUID leaf 7, EDX bit 22 (clang's __builtin_cpu_supports has no "amx-bf16").
  unsigned a = 0, b = 0, c = 0, d = 0;
  p.amx = __get_cpuid_count(7, 0, &a, &b, &c, &d) && (d & (1u << 22)) != 0;
  return p;
}

}  // namespace

const Platform& platform() {
  static const Platform p = probe();
  return p;
}

}  // namespace txl::backend
