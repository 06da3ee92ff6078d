// frontend/atomic_file.cpp - AtomicFile: the destination checks, an exclusive
// temporary with an unpredictable name, fsync and rename, and the signal-safe
// registry that removes temporaries when the process is interrupted.
#include "frontend/atomic_file.h"

#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <utility>
#include <vector>

#include "frontend/input_file.h"
#include "ir/check.h"

namespace txl::frontend {

namespace {

// ---- the registry of temporaries, read by the signal handler -----------------

constexpr int kSlots = 64;
struct Slot {
  std::atomic<int> state{0};  // 0 free, 1 being filled, 2 a file, 3 a directory
  char path[PATH_MAX];
};
Slot slots[kSlots];

// Threads between creating a temporary and registering it. Each holds the
// signals back meanwhile, so the handler runs on another thread (an OpenMP
// worker, say) and waits there until the temporary is registered.
std::atomic<int> creating{0};

// catchInterrupts(): the first SIGINT or SIGTERM is only noted.
std::atomic<bool> graceful{false};
std::atomic<int> pendingSignal{0};
static_assert(std::atomic<int>::is_always_lock_free && std::atomic<bool>::is_always_lock_free);

void onSignal(int sig) {
  if (graceful.load(std::memory_order_relaxed) && (sig == SIGINT || sig == SIGTERM)) {
    int none = 0;
    if (pendingSignal.compare_exchange_strong(none, sig)) return;  // the command ends at its next check
  }
  while (creating.load(std::memory_order_acquire) > 0) ::sched_yield();
  for (int pass = 0; pass < 2; ++pass)  // files first, then the directories they were in
    for (Slot& s : slots)
      if (s.state.load(std::memory_order_acquire) == (pass == 0 ? 2 : 3)) {
        if (pass == 0) ::unlink(s.path);
        else ::rmdir(s.path);
      }
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

void installHandlers() {
  static std::once_flag once;
  std::call_once(once, [] {
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
      struct sigaction old {};
      ::sigaction(sig, nullptr, &old);
      if (old.sa_handler == SIG_IGN) continue;  // e.g. under nohup: stay ignored
      struct sigaction sa {};
      sa.sa_handler = onSignal;
      sigemptyset(&sa.sa_mask);
      ::sigaction(sig, &sa, nullptr);
    }
  });
}

}  // namespace

void catchInterrupts() {
  graceful.store(true);
  installHandlers();
}

int interruptSignal() { return pendingSignal.load(std::memory_order_relaxed); }

namespace {

// ---- the inputs read in this process ------------------------------------------

struct InputId {
  unsigned long long device, inode;
  std::string path;
};
std::mutex inputsMutex;
std::vector<InputId>& inputs() {
  static std::vector<InputId> v;
  return v;
}

std::string randomSuffix() {
  static const char* const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789";
  unsigned char bytes[12];
  std::size_t got = 0;
  while (got < sizeof bytes) {
    ssize_t n = ::getrandom(bytes + got, sizeof bytes - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw Error(std::string("cannot get random bytes for a temporary name: ") + std::strerror(errno));
    got += std::size_t(n);
  }
  std::string s;
  for (unsigned char b : bytes) s += alphabet[b % 36];
  return s;
}

// `.<name>.txlc-<random>` in the folder of `path`.
std::string temporaryName(const std::string& path) {
  const std::filesystem::path p(path);
  std::string name = p.filename().string();
  if (name.size() > 200) name.resize(200);
  return (p.parent_path() / ("." + name + ".txlc-" + randomSuffix())).string();
}

}  // namespace

// Runs `create` (which makes a file or folder and says whether it did) and
// registers `path` if it did, with SIGINT/SIGTERM/SIGHUP held back on this
// thread and `creating` counted meanwhile: a signal in between would leave
// the new path behind. Returns the slot (-1: not created, or registry full)
// and whether it was created.
template <typename Create>
std::pair<int, bool> createRegistered(const std::string& path, bool directory, Create create) {
  installHandlers();
  sigset_t block, old;
  sigemptyset(&block);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&block, sig);
  ::pthread_sigmask(SIG_BLOCK, &block, &old);
  creating.fetch_add(1, std::memory_order_acq_rel);
  const bool made = create();
  const int err = errno;
  const int slot = made ? registerTemporary(path, directory) : -1;  // only once it is ours: never remove another's
  creating.fetch_sub(1, std::memory_order_acq_rel);
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  errno = err;
  return {slot, made};
}

int registerTemporary(const std::string& path, bool directory) {
  installHandlers();
  if (path.size() >= PATH_MAX) return -1;
  for (int i = 0; i < kSlots; ++i) {
    int expected = 0;
    if (slots[i].state.compare_exchange_strong(expected, 1, std::memory_order_acq_rel)) {
      std::memcpy(slots[i].path, path.c_str(), path.size() + 1);
      slots[i].state.store(directory ? 3 : 2, std::memory_order_release);
      return i;
    }
  }
  return -1;
}

void releaseTemporary(int slot) {
  if (slot >= 0 && slot < kSlots) slots[slot].state.store(0, std::memory_order_release);
}

std::atomic<bool> protecting{false};

void protectInputs() { protecting = true; }

void noteInputFile(const std::string& path, unsigned long long device, unsigned long long inode) {
  if (!protecting) return;
  std::lock_guard<std::mutex> lock(inputsMutex);
  for (const InputId& i : inputs())
    if (i.device == device && i.inode == inode) return;
  inputs().push_back({device, inode, path});
}

void forgetInputFile(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return;
  std::lock_guard<std::mutex> lock(inputsMutex);
  std::erase_if(inputs(), [&](const InputId& i) { return i.device == st.st_dev && i.inode == st.st_ino; });
}

bool checkOutputPath(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return false;
    throw Error(oneLine(path) + ": cannot write: " + std::strerror(errno));
  }
  if (S_ISLNK(st.st_mode))
    throw Error(oneLine(path) + ": is a symbolic link; txlc does not write through or replace one (give its target)");
  if (!S_ISREG(st.st_mode) && !S_ISCHR(st.st_mode) && !S_ISFIFO(st.st_mode))
    throw Error(oneLine(path) + ": is " + fileKind(st.st_mode) +
                "; expected a regular file, a character device or a FIFO to write");
  {
    std::lock_guard<std::mutex> lock(inputsMutex);
    for (const InputId& i : inputs())
      if (i.device == st.st_dev && i.inode == st.st_ino && S_ISREG(st.st_mode))
        throw Error(oneLine(path) + ": is an input of this command (" + oneLine(i.path) +
                    "); txlc never overwrites its inputs");
  }
  return S_ISREG(st.st_mode);
}

AtomicFile::AtomicFile(std::string path, mode_t mode) : path_(std::move(path)) {
  struct stat st {};
  checkOutputPath(path_);
  if (::lstat(path_.c_str(), &st) == 0 && (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode))) {
    // Written in place: O_NONBLOCK makes a FIFO without a reader ENXIO, not a hang.
    fd_ = ::open(path_.c_str(), O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd_ < 0)
      throw Error(oneLine(path_) +
                  ": cannot write: " + (errno == ENXIO ? std::string("a FIFO with no reader") : std::strerror(errno)));
    struct stat now {};
    if (::fstat(fd_, &now) != 0 || now.st_ino != st.st_ino || now.st_dev != st.st_dev) {
      ::close(fd_);
      fd_ = -1;
      throw Error(oneLine(path_) + ": changed while it was opened");
    }
    const int flags = ::fcntl(fd_, F_GETFL);
    if (flags >= 0) ::fcntl(fd_, F_SETFL, flags & ~O_NONBLOCK);
    return;
  }
  for (int attempt = 0; fd_ < 0; ++attempt) {
    tmp_ = temporaryName(path_);
    registered_ = createRegistered(tmp_, false, [&] {
                    fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
                    return fd_ >= 0;
                  }).first;
    const int err = errno;
    if (fd_ >= 0) break;
    if (err != EEXIST || attempt >= 8) {
      tmp_.clear();
      throw Error(oneLine(path_) + ": cannot create a temporary file beside it: " + std::strerror(err));
    }
  }
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_ && !tmp_.empty()) ::unlink(tmp_.c_str());
  releaseTemporary(registered_);
}

void AtomicFile::write(const void* data, std::size_t size) { writeAll(fd_, data, size, path_); }

void writeAll(int fd, const void* data, std::size_t size, const std::string& path) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    ssize_t n = ::write(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw Error(oneLine(path) + ": cannot write: " + std::strerror(errno));
    p += n;
    size -= std::size_t(n);
  }
}

int openContinuedFile(const std::string& path) {
  checkOutputPath(path);
  // A hard link is refused after the open; another process's lock before anything is read or truncated.
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK, 0644);
  if (fd < 0) throw Error(oneLine(path) + ": cannot create: " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_nlink > 1) {
    ::close(fd);
    throw Error(oneLine(path) + ": expected a regular file of its own to continue; found another kind or a hard link");
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    ::close(fd);
    if (err == EWOULDBLOCK)
      throw Error(oneLine(path) +
                  ": expected no other process writing it, found it locked by another run (wait for it, or give "
                  "another -o)");
    throw Error(oneLine(path) + ": cannot lock: " + std::strerror(err));
  }
  return fd;
}

void AtomicFile::commit() {
  if (tmp_.empty()) {  // a device or FIFO: nothing to rename
    const int rc = ::close(fd_);
    fd_ = -1;
    if (rc != 0) throw Error(oneLine(path_) + ": cannot close: " + std::strerror(errno));
    committed_ = true;
    return;
  }
  if (::fsync(fd_) != 0) throw Error(oneLine(path_) + ": cannot sync: " + std::strerror(errno));
  int rc = ::close(fd_);
  fd_ = -1;
  if (rc != 0) throw Error(oneLine(path_) + ": cannot close: " + std::strerror(errno));
  checkOutputPath(path_);  // again: the destination may have become a symlink meanwhile
  if (::rename(tmp_.c_str(), path_.c_str()) != 0)
    throw Error(oneLine(path_) + ": cannot rename the temporary into place: " + std::strerror(errno));
  committed_ = true;
  releaseTemporary(registered_);
  registered_ = -1;
  // Make the rename itself durable; failing here leaves a complete file.
  std::string dir = std::filesystem::path(path_).parent_path().string();
  int dfd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

TemporaryDirectory makeTemporaryDirectory(const std::string& path) {
  for (int attempt = 0;; ++attempt) {
    const std::string dir = temporaryName(path);
    const auto [slot, made] = createRegistered(dir, true, [&] { return ::mkdir(dir.c_str(), 0755) == 0; });
    if (made) return {dir, slot};
    if (errno != EEXIST || attempt >= 8)
      throw Error(oneLine(path) + ": cannot create a temporary folder beside it: " + std::strerror(errno));
  }
}

}  // namespace txl::frontend
