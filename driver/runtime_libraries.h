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
//   RuntimeLibraryBundle b = bundleRuntimeLibraries(txlc, "out/txlc-libs");
//   writeStandalone(...);
//   b.keep();  // else what the bundle created is removed
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

// The libraries copied into a folder. Until keep(), what the copy created
// (the folder, if it was absent, and the files that were not there) is
// removed when the bundle is destroyed (an error before the executable was
// written) or on SIGINT/SIGTERM/SIGHUP.
class RuntimeLibraryBundle {
 public:
  RuntimeLibraryBundle() = default;
  RuntimeLibraryBundle(RuntimeLibraryBundle&& other) noexcept;
  RuntimeLibraryBundle& operator=(RuntimeLibraryBundle&&) = delete;
  ~RuntimeLibraryBundle();
  void keep();
  std::vector<std::string> names;  // the file names copied

 private:
  friend RuntimeLibraryBundle bundleRuntimeLibraries(const std::string&, const std::string&);
  std::string folder_;
  bool createdFolder_ = false;
  std::vector<std::string> created_;  // files this copy made
  std::vector<int> slots_;            // their signal-time registrations (frontend/atomic_file.h)
};

// Copies runtimeLibraries(executable) into `folder` (made if absent; its
// parent must exist), each file atomically. txl::Error naming the path when
// `folder` is a symbolic link or not a folder, or a copy fails.
RuntimeLibraryBundle bundleRuntimeLibraries(const std::string& executable, const std::string& folder);

}  // namespace txl::driver
