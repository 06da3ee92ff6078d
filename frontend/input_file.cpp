// frontend/input_file.cpp - non-blocking opens, the regular-file check, bounded reads.
#include "frontend/input_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <new>

#include "frontend/atomic_file.h"
#include "ir/check.h"

namespace txl::frontend {

std::string fileKind(unsigned mode) {
  if (S_ISREG(mode)) return "a regular file";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISLNK(mode)) return "a symbolic link";
  return "a special file";
}

namespace {

std::string readLimitMessage(const std::string& path, std::uint64_t limit, const std::string& what) {
  return oneLine(path) + ": more than " + std::to_string(limit) + " bytes; expected " + what + " of at most " +
         std::to_string(limit) + " bytes";
}

// Reads fd to its end, failing past `limit` bytes.
std::string readAll(int fd, const std::string& path, std::uint64_t limit, const std::string& what,
                    std::uint64_t sizeHint) {
  std::string out;
  try {
    out.reserve(std::size_t(std::min<std::uint64_t>(sizeHint, limit)));
    char buf[1 << 16];
    for (;;) {
      ssize_t n = ::read(fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) throw Error(oneLine(path) + ": cannot read: " + std::strerror(errno));
      if (n == 0) return out;
      if (out.size() + std::size_t(n) > limit) throw Error(readLimitMessage(path, limit, what));
      out.append(buf, std::size_t(n));
    }
  } catch (const std::bad_alloc&) {
    // Under a memory limit (ulimit -v, a cgroup) the file is named.
    throw Error(oneLine(path) + ": out of memory reading " + what + " (" +
                std::to_string(std::max<std::uint64_t>(sizeHint, out.size())) + " bytes)");
  }
}

}  // namespace

int openRegularFile(const std::string& path, const std::string& what, std::uint64_t* size) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) {
    const int err = errno;
    throw Error(oneLine(path) + ": cannot open: " + std::strerror(err));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    throw Error(oneLine(path) + ": cannot stat: " + std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw Error(oneLine(path) + ": is " + fileKind(st.st_mode) + ", expected " + what + " (a regular file)");
  }
  noteInputFile(path, st.st_dev, st.st_ino);
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  if (size) *size = std::uint64_t(st.st_size);
  return fd;
}

std::string readInputFile(const std::string& path, std::uint64_t limit, const std::string& what, bool allowStdin) {
  if (allowStdin && path == "-") return readAll(STDIN_FILENO, "standard input", limit, what, 0);
  std::uint64_t size = 0;
  const int fd = openRegularFile(path, what, &size);
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  if (size > limit)
    throw Error(oneLine(path) + ": " + std::to_string(size) + " bytes; expected " + what + " of at most " +
                std::to_string(limit) + " bytes");
  return readAll(fd, path, limit, what, size);
}

namespace {

constexpr int kMappings = 64;
struct Mapping {
  std::atomic<int> state{0};  // 0 free, 1 being filled, 2 live
  std::uintptr_t start = 0, end = 0;
  char message[640];  // "txlc: error: PATH: ...\n", built when registered
  std::size_t length = 0;
};
Mapping mappings[kMappings];
// Set by the first thread that reports a lost page: the threads of a team
// reading the same truncated file fault together, and one line is written.
std::atomic<bool> busReported{false};
static_assert(std::atomic<bool>::is_always_lock_free);  // so a signal handler may use it

void onBus(int sig, siginfo_t* info, void*) {
  const auto at = reinterpret_cast<std::uintptr_t>(info->si_addr);
  for (const Mapping& m : mappings)
    if (m.state.load(std::memory_order_acquire) == 2 && at >= m.start && at < m.end) {
      if (busReported.exchange(true)) {
        for (;;) ::pause();  // another thread is writing the line and ending the process
      }
      ssize_t ignored = ::write(STDERR_FILENO, m.message, m.length);
      (void)ignored;
      ::_exit(3);
    }
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

}  // namespace

void guardMappedFiles() {
  struct sigaction sa {};
  sa.sa_sigaction = onBus;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGBUS, &sa, nullptr);
}

int registerMapping(const void* addr, std::size_t size, const std::string& path) {
  std::string message = "txlc: error: " + oneLine(path.substr(0, 400)) +
                        ": the file changed while txlc was reading it (truncated in place); a weights file or artifact "
                        "must not be modified during a run\n";
  for (int i = 0; i < kMappings; ++i) {
    int expected = 0;
    if (mappings[i].state.compare_exchange_strong(expected, 1, std::memory_order_acq_rel)) {
      Mapping& m = mappings[i];
      m.start = reinterpret_cast<std::uintptr_t>(addr);
      m.end = m.start + size;
      m.length = std::min(message.size(), sizeof m.message);
      std::memcpy(m.message, message.data(), m.length);
      m.state.store(2, std::memory_order_release);
      return i;
    }
  }
  return -1;
}

void releaseMapping(int slot) {
  if (slot >= 0 && slot < kMappings) mappings[slot].state.store(0, std::memory_order_release);
}

MappedFile mapInputFile(const std::string& path, const std::string& what, const std::string& displayName) {
  std::uint64_t fileSize = 0;
  const int fd = openRegularFile(path, what, &fileSize);
  const auto size = static_cast<std::size_t>(fileSize);
  if (size == 0) {
    ::close(fd);
    return {};
  }
  void* addr = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  const int err = errno;
  ::close(fd);
  if (addr == MAP_FAILED) throw Error(oneLine(path) + ": cannot map: " + std::strerror(err));
  const int slot = registerMapping(addr, size, displayName.empty() ? path : displayName);
  MappedFile m;
  m.owner = std::shared_ptr<void>(addr, [size, slot](void* p) {
    releaseMapping(slot);
    ::munmap(p, size);
  });
  m.bytes = {static_cast<const std::byte*>(addr), size};
  return m;
}

bool isFile(const std::filesystem::path& p) {
  std::error_code ec;
  return std::filesystem::is_regular_file(p, ec);
}

}  // namespace txl::frontend
