// driver/build_info.cpp - buildInfo() from the definitions driver/CMakeLists.txt passes this file.
#include "driver/build_info.h"

#include "backend/platform.h"
#include "driver/artifact.h"

#ifndef TXLC_COMMIT
#define TXLC_COMMIT "unknown"
#endif
#ifndef TXLC_BUILD_TYPE
#define TXLC_BUILD_TYPE "unknown"
#endif
#ifndef TXLC_COMPILER
#define TXLC_COMPILER "unknown"
#endif

namespace txl::driver {

const BuildInfo& buildInfo() {
  static const BuildInfo b{kTxlcVersion, TXLC_COMMIT, TXLC_BUILD_TYPE, TXLC_COMPILER};
  return b;
}

std::string versionText() {
  const BuildInfo& b = buildInfo();
  const backend::Platform& p = backend::platform();
  return "txlc " + b.version + " (commit " + b.commit + ", " + b.buildType + ", " + b.compiler + ")\n" + "oneDNN " +
         p.onednnVersion + ", dispatching to " + p.onednnIsa + "\n" + "CPU " + p.cpu + ", " +
         std::to_string(p.physicalCores) + " physical cores, " + std::to_string(p.logicalCpus) + " logical CPUs";
}

nlohmann::json buildJson() {
  const BuildInfo& b = buildInfo();
  const backend::Platform& p = backend::platform();
  return {{"txlc_version", b.version},
          {"commit", b.commit},
          {"build_type", b.buildType},
          {"compiler", b.compiler},
          {"cpu", p.cpu},
          {"physical_cores", p.physicalCores},
          {"logical_cpus", p.logicalCpus},
          {"onednn_version", p.onednnVersion},
          {"onednn_isa", p.onednnIsa}};
}

}  // namespace txl::driver
