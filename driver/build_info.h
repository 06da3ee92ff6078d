// driver/build_info.h - which txlc this is: version, commit, build type and
// compiler, with the platform it runs on (backend/platform.h).
//
// `txlc --version` prints versionText(); every machine-readable benchmark
// record embeds buildJson(), so a figure names the build and the machine.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace txl::driver {

struct BuildInfo {
  std::string version;    // "0.1.0"
  std::string commit;     // the source's git commit at configure time ("unknown" outside git)
  std::string buildType;  // CMAKE_BUILD_TYPE ("Release")
  std::string compiler;   // "GNU 12.2.0"
};
const BuildInfo& buildInfo();

// Several lines: txlc's version and commit, the build, oneDNN's version and ISA, the CPU.
std::string versionText();
// {"txlc_version", "commit", "build_type", "compiler", "cpu", "physical_cores",
//  "logical_cpus", "onednn_version", "onednn_isa"}
nlohmann::json buildJson();

}  // namespace txl::driver
