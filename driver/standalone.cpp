// driver/standalone.cpp - writing and finding the standalone trailer.
#include "driver/standalone.h"
#include "frontend/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "ir/check.h"

namespace txl::driver {

namespace {

constexpr std::uint64_t kAlign = 64;

std::uint64_t get64(const unsigned char* p) {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}
void put64(unsigned char* p, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<unsigned char>((v >> (8 * i)) & 0xff);
}

// The bytes of a 64-bit little-endian ELF file's image, to the end of its
// section header table (where a linker ends the file); 0 for anything else.
std::uint64_t elfImageBytes(int fd) {
  unsigned char h[64];
  if (::pread(fd, h, sizeof h, 0) != ssize_t(sizeof h)) return 0;
  if (std::memcmp(h,
                  "\x7f"
                  "ELF",
                  4) != 0 ||
      h[4] != 2 || h[5] != 1)
    return 0;  // ELFCLASS64, little-endian
  const std::uint64_t shoff = get64(h + 0x28);
  const std::uint64_t shentsize = std::uint64_t(h[0x3a]) | std::uint64_t(h[0x3b]) << 8;
  const std::uint64_t shnum = std::uint64_t(h[0x3c]) | std::uint64_t(h[0x3d]) << 8;
  if (shoff == 0 || shnum == 0 || shoff > (std::uint64_t(1) << 48)) return 0;
  return shoff + shentsize * shnum;
}

}  // namespace

std::optional<StandaloneTrailer> readStandaloneTrailer(const std::string& path, const std::string& name) {
  // O_NONBLOCK: a FIFO named as a model must not block here; only a regular file can carry a trailer.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) return std::nullopt;
  struct stat st {};
  std::optional<StandaloneTrailer> result;
  unsigned char buf[kStandaloneTrailerBytes];
  const bool trailer = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
                       std::uint64_t(st.st_size) >= kStandaloneTrailerBytes &&
                       ::pread(fd, buf, sizeof buf, st.st_size - off_t(sizeof buf)) == ssize_t(sizeof buf);
  if (trailer && std::memcmp(buf + 16, kStandaloneMagic, 8) != 0) {
    // No magic. An ELF file with bytes after its image carried something:
    // a damaged standalone executable must not run as plain txlc.
    const std::uint64_t image = elfImageBytes(fd);
    ::close(fd);
    if (image != 0 && image < std::uint64_t(st.st_size))
      throw Error((name.empty() ? path : name) +
                  ": corrupt standalone trailer: " + std::to_string(std::uint64_t(st.st_size) - image) +
                  " bytes follow the executable's ELF image, but its last 8 bytes are not the magic \"TXLCEXE\\0\"; "
                  "rebuild it with txlc compile --emit exe");
    return std::nullopt;
  }
  if (trailer) {
    StandaloneTrailer t{get64(buf), get64(buf + 8)};
    const std::uint64_t end = std::uint64_t(st.st_size) - kStandaloneTrailerBytes;
    if (t.offset <= end && t.length <= end - t.offset && t.offset + t.length == end) {
      result = t;
    } else {
      ::close(fd);
      throw Error((name.empty() ? path : name) + ": corrupt standalone trailer: the artifact at offset " +
                  std::to_string(t.offset) + ", " + std::to_string(t.length) + " bytes, does not end at byte " +
                  std::to_string(end) + " of the executable; rebuild it with txlc compile --emit exe");
    }
  }
  ::close(fd);
  return result;
}

void writeStandalone(const std::string& path, const std::vector<std::byte>& artifact, const std::string& txlc) {
  const char* self = txlc.c_str();
  int in = ::open(self, O_RDONLY | O_CLOEXEC);
  if (in < 0) throw Error(std::string(self) + ": cannot open the txlc executable: " + std::strerror(errno));
  struct stat st {};
  if (::fstat(in, &st) != 0) {
    ::close(in);
    throw Error(std::string(self) + ": cannot stat: " + std::strerror(errno));
  }
  // A standalone executable compiling another one copies only its txlc part.
  std::uint64_t exeBytes = std::uint64_t(st.st_size);
  if (auto t = readStandaloneTrailer(self)) exeBytes = t->offset;

  struct CloseIn {
    int fd;
    ~CloseIn() { ::close(fd); }
  } closeIn{in};
  frontend::AtomicFile out(path, 0755);
  std::vector<char> buf(1 << 20);
  std::uint64_t copied = 0;
  while (copied < exeBytes) {
    ssize_t n = ::pread(in, buf.data(), std::min<std::uint64_t>(buf.size(), exeBytes - copied), off_t(copied));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw Error(std::string(self) + ": cannot read: " + std::strerror(errno));
    out.write(buf.data(), std::size_t(n));
    copied += std::uint64_t(n);
  }
  const std::uint64_t offset = (exeBytes + kAlign - 1) / kAlign * kAlign;
  std::vector<char> pad(offset - exeBytes, 0);
  out.write(pad.data(), pad.size());
  out.write(artifact.data(), artifact.size());
  unsigned char trailer[kStandaloneTrailerBytes];
  put64(trailer, offset);
  put64(trailer + 8, artifact.size());
  std::memcpy(trailer + 16, kStandaloneMagic, 8);
  out.write(trailer, sizeof trailer);
  out.commit();  // created 0755: no fchmod needed
}

}  // namespace txl::driver
