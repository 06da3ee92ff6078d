// driver/runtime_libraries.cpp - runtimeLibraries() from dl_iterate_phdr; bundleRuntimeLibraries().
#include "driver/runtime_libraries.h"

#include <fcntl.h>
#include <link.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <set>
#include <vector>

#include "frontend/atomic_file.h"
#include "ir/check.h"

namespace txl::driver {

namespace {

// Part of the C library, present on every glibc system and tied to its version.
bool isSystemLibrary(const std::string& name) {
  static const char* const kPrefixes[] = {"ld-linux", "libc.so",      "libm.so",    "libpthread.so", "libdl.so",
                                          "librt.so", "libresolv.so", "linux-vdso", "linux-gate"};
  for (const char* p : kPrefixes)
    if (name.rfind(p, 0) == 0) return true;
  return false;
}

int collect(dl_phdr_info* info, std::size_t, void* data) {
  auto& libs = *static_cast<std::vector<RuntimeLibrary>*>(data);
  if (!info->dlpi_name || !*info->dlpi_name) return 0;  // the executable itself
  const std::string path = info->dlpi_name;
  const std::string name = std::filesystem::path(path).filename().string();
  if (!isSystemLibrary(name)) libs.push_back({name, path});
  return 0;
}

void copyFile(const std::string& from, const std::string& to) {
  const int in = ::open(from.c_str(), O_RDONLY | O_CLOEXEC);
  if (in < 0) throw Error(from + ": cannot read: " + std::strerror(errno));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{in};
  frontend::AtomicFile out(to, 0755);
  std::vector<char> buf(1 << 20);
  for (;;) {
    const ssize_t n = ::read(in, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw Error(from + ": cannot read: " + std::strerror(errno));
    if (n == 0) break;
    out.write(buf.data(), std::size_t(n));
  }
  out.commit();
}

}  // namespace

std::vector<RuntimeLibrary> runtimeLibraries() {
  std::vector<RuntimeLibrary> libs;
  dl_iterate_phdr(collect, &libs);
  return libs;
}

std::vector<std::string> bundleRuntimeLibraries(const std::string& folder) {
  std::error_code ec;
  std::filesystem::create_directories(folder, ec);
  if (ec || !std::filesystem::is_directory(folder))
    throw Error(folder + ": cannot create the folder of the executable's libraries: " + ec.message());
  std::vector<std::string> names;
  std::set<std::string> seen;
  for (const RuntimeLibrary& lib : runtimeLibraries()) {
    if (!seen.insert(lib.name).second) continue;
    copyFile(lib.path, folder + "/" + lib.name);
    names.push_back(lib.name);
  }
  return names;
}

}  // namespace txl::driver
