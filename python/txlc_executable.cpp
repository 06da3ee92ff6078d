// python/txlc_executable.cpp - defaultTxlcExecutable(): the module's own path from dladdr, then the candidates in turn.
#include "python/txlc_executable.h"

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>

namespace txl::python {

namespace fs = std::filesystem;

namespace {

// The folder of the shared object this function is in (the module), or "".
fs::path moduleFolder() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<const void*>(&moduleFolder), &info) == 0 || info.dli_fname == nullptr) return {};
  std::error_code ec;
  const fs::path p = fs::weakly_canonical(fs::path(info.dli_fname), ec);
  return ec ? fs::path() : p.parent_path();
}

bool isExecutable(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec) && (fs::status(p, ec).permissions() & fs::perms::owner_exec) != fs::perms::none;
}

// `txlc` in a folder of $PATH, or "".
fs::path onPath() {
  const char* path = std::getenv("PATH");
  if (path == nullptr) return {};
  std::istringstream folders(path);
  for (std::string folder; std::getline(folders, folder, ':');)
    if (!folder.empty() && isExecutable(fs::path(folder) / "txlc")) return fs::path(folder) / "txlc";
  return {};
}

}  // namespace

std::string defaultTxlcExecutable() {
  if (const char* env = std::getenv("TXLC_EXECUTABLE")) return env;
  const fs::path build = TXLC_EXECUTABLE;
  const fs::path here = moduleFolder();
  std::error_code ec;
  const bool inBuildTree = !here.empty() && fs::equivalent(here, fs::path(TXLC_BUILD_MODULE_DIR), ec);
  if (inBuildTree) return build.string();
  if (!here.empty()) {
    const fs::path installed = (here / TXLC_FROM_MODULE).lexically_normal();
    if (isExecutable(installed)) return installed.string();
  }
  if (isExecutable(build)) return build.string();
  if (const fs::path p = onPath(); !p.empty()) return p.string();
  return build.string();
}

}  // namespace txl::python
