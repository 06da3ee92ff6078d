// driver/runtime_libraries.cpp - runtimeLibraries() from the ELF files' DT_NEEDED and dl_iterate_phdr;
// bundleRuntimeLibraries().
#include "driver/runtime_libraries.h"

#include <fcntl.h>
#include <elf.h>
#include <link.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <vector>

#include "frontend/atomic_file.h"
#include "frontend/input_file.h"
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

// Every library loaded in this process: file name -> the path it was opened by.
int collect(dl_phdr_info* info, std::size_t, void* data) {
  auto& loaded = *static_cast<std::map<std::string, std::string>*>(data);
  if (!info->dlpi_name || !*info->dlpi_name) return 0;  // the executable itself
  const std::string path = info->dlpi_name;
  loaded.emplace(std::filesystem::path(path).filename().string(), path);
  return 0;
}

// The DT_NEEDED names of the 64-bit little-endian ELF file `path`: its
// PT_DYNAMIC segment, with string offsets into DT_STRTAB mapped back to the
// file through the PT_LOAD segment holding it.
std::vector<std::string> neededLibraries(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto fail = [&](const std::string& what) { return Error(path + ": " + what + ", expected a 64-bit ELF file"); };
  if (!in.eof() && !in) throw Error(path + ": cannot read");
  if (bytes.size() < sizeof(Elf64_Ehdr) || bytes.compare(0, 4, ELFMAG) != 0 || bytes[EI_CLASS] != ELFCLASS64)
    throw fail("no ELF header");
  auto at = [&](std::uint64_t offset, std::uint64_t size) {
    if (offset > bytes.size() || size > bytes.size() - offset) throw fail("a table past the end of the file");
    return bytes.data() + offset;
  };
  Elf64_Ehdr eh;
  std::memcpy(&eh, bytes.data(), sizeof eh);
  std::vector<Elf64_Phdr> ph(eh.e_phnum);
  if (eh.e_phnum)
    std::memcpy(ph.data(), at(eh.e_phoff, std::uint64_t(eh.e_phnum) * sizeof(Elf64_Phdr)),
                ph.size() * sizeof(Elf64_Phdr));
  auto fileOffset = [&](std::uint64_t vaddr) -> std::uint64_t {
    for (const Elf64_Phdr& p : ph)
      if (p.p_type == PT_LOAD && vaddr >= p.p_vaddr && vaddr - p.p_vaddr < p.p_filesz)
        return p.p_offset + (vaddr - p.p_vaddr);
    throw fail("a dynamic table outside the loaded segments");
  };
  std::vector<Elf64_Dyn> dyn;
  for (const Elf64_Phdr& p : ph)
    if (p.p_type == PT_DYNAMIC) {
      dyn.resize(p.p_filesz / sizeof(Elf64_Dyn));
      if (!dyn.empty())
        std::memcpy(dyn.data(), at(p.p_offset, dyn.size() * sizeof(Elf64_Dyn)), dyn.size() * sizeof(Elf64_Dyn));
    }
  std::uint64_t strtab = 0, strsz = 0;
  for (const Elf64_Dyn& d : dyn) {
    if (d.d_tag == DT_STRTAB) strtab = d.d_un.d_ptr;
    if (d.d_tag == DT_STRSZ) strsz = d.d_un.d_val;
  }
  std::vector<std::string> names;
  if (dyn.empty()) return names;  // statically linked
  const char* table = at(fileOffset(strtab), strsz);
  for (const Elf64_Dyn& d : dyn) {
    if (d.d_tag == DT_NULL) break;
    if (d.d_tag != DT_NEEDED) continue;
    if (d.d_un.d_val >= strsz) throw fail("a library name past its string table");
    names.emplace_back(table + d.d_un.d_val, strnlen(table + d.d_un.d_val, strsz - d.d_un.d_val));
  }
  return names;
}

// A library this process has not loaded (the Python module does without
// some of txlc's), where the dynamic loader's default folders hold it.
std::string systemLibraryPath(const std::string& name) {
  static const char* const kFolders[] = {
      "/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64", "/lib", "/usr/lib",
      "/usr/local/lib"};
  for (const char* f : kFolders) {
    const std::string p = std::string(f) + "/" + name;
    if (::access(p.c_str(), R_OK) == 0) return p;
  }
  return "";
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

std::vector<RuntimeLibrary> runtimeLibraries(const std::string& executable) {
  std::map<std::string, std::string> loaded;
  dl_iterate_phdr(collect, &loaded);
  std::vector<RuntimeLibrary> libs;
  std::set<std::string> seen;
  std::vector<std::pair<std::string, std::string>> pending;  // (name, needed by)
  for (const std::string& n : neededLibraries(executable)) pending.emplace_back(n, executable);
  for (std::size_t i = 0; i < pending.size(); ++i) {
    const auto [name, by] = pending[i];
    if (isSystemLibrary(name) || !seen.insert(name).second) continue;
    std::string path;
    if (const auto it = loaded.find(name); it != loaded.end()) path = it->second;
    else path = systemLibraryPath(name);
    if (path.empty())
      throw Error(by + ": needs " + name + ", found neither loaded nor in the system's library folders");
    libs.push_back({name, path});
    for (const std::string& n : neededLibraries(path)) pending.emplace_back(n, path);
  }
  return libs;
}

RuntimeLibraryBundle::RuntimeLibraryBundle(RuntimeLibraryBundle&& o) noexcept
    : names(std::move(o.names)),
      folder_(std::move(o.folder_)),
      createdFolder_(o.createdFolder_),
      created_(std::move(o.created_)),
      slots_(std::move(o.slots_)) {
  o.created_.clear();
  o.slots_.clear();
  o.createdFolder_ = false;
}

RuntimeLibraryBundle::~RuntimeLibraryBundle() {
  for (const std::string& f : created_) ::unlink(f.c_str());
  if (createdFolder_) ::rmdir(folder_.c_str());
  for (int s : slots_) frontend::releaseTemporary(s);
}

void RuntimeLibraryBundle::keep() {
  for (int s : slots_) frontend::releaseTemporary(s);
  slots_.clear();
  created_.clear();
  createdFolder_ = false;
}

RuntimeLibraryBundle bundleRuntimeLibraries(const std::string& executable, const std::string& folder) {
  const std::vector<RuntimeLibrary> libs = runtimeLibraries(executable);
  RuntimeLibraryBundle b;
  b.folder_ = folder;
  struct stat st {};
  if (::lstat(folder.c_str(), &st) == 0) {
    // Never written through: a planted link would send the libraries elsewhere.
    if (S_ISLNK(st.st_mode))
      throw Error(oneLine(folder) + ": is a symbolic link; expected the folder of the executable's libraries");
    if (!S_ISDIR(st.st_mode))
      throw Error(oneLine(folder) + ": is " + frontend::fileKind(st.st_mode) +
                  "; expected the folder of the executable's libraries");
  } else {
    if (::mkdir(folder.c_str(), 0755) != 0)
      throw Error(oneLine(folder) +
                  ": cannot create the folder of the executable's libraries: " + std::strerror(errno));
    b.createdFolder_ = true;
    b.slots_.push_back(frontend::registerTemporary(folder, true));
  }
  for (const RuntimeLibrary& lib : libs) {
    const std::string to = folder + "/" + lib.name;
    if (::lstat(to.c_str(), &st) != 0) {  // a new file: removed with the bundle until keep()
      b.created_.push_back(to);
      b.slots_.push_back(frontend::registerTemporary(to, false));
    }
    copyFile(lib.path, to);
    b.names.push_back(lib.name);
  }
  return b;
}

}  // namespace txl::driver
