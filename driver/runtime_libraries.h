// driver/runtime_libraries.h - the shared libraries a standalone executable
// takes with it, so that it runs where oneDNN is not installed.
//
// txlc is linked with the run path `$ORIGIN/txlc-libs` (DT_RPATH, which also
// serves the libraries' own dependencies, e.g. oneDNN's libOpenCL), searched
// before the system's folders. `txlc compile --emit exe -o DIR/NAME` copies
// the libraries the running txlc loaded - all but the C library's own
// (libc, libm, libpthread, libdl, librt, the dynamic loader) - into
// DIR/txlc-libs/, under the names the loader looks for, so DIR can be copied
// to another machine whole. Executables written into one folder share it.
// What the target still needs: Linux on x86-64 with a glibc at least as new
// as the build machine's (docs/CLI.md, "Standalone executables").
//
//   std::vector<RuntimeLibrary> libs = runtimeLibraries();   // {"libdnnl.so.2", "/lib/x86_64-linux-gnu/libdnnl.so.2"},
//   ... bundleRuntimeLibraries("out/txlc-libs");
#pragma once

#include <string>
#include <vector>

namespace txl::driver {

inline constexpr const char* kRuntimeLibraryFolder = "txlc-libs";  // beside the executable

struct RuntimeLibrary {
  std::string name;  // the file name the loader looks up ("libdnnl.so.2")
  std::string path;  // where this process loaded it from
};

// The libraries the ELF file `executable` needs, transitively, but the C
// library's; txl::Error when one is found neither loaded nor in the system's
// library folders, or a file is not a 64-bit ELF.
std::vector<RuntimeLibrary> runtimeLibraries(const std::string& executable);

// Copies runtimeLibraries(executable) into `folder` (created if absent), each
// file atomically; returns the names copied. txl::Error naming the file on failure.
std::vector<std::string> bundleRuntimeLibraries(const std::string& executable, const std::string& folder);

}  // namespace txl::driver
