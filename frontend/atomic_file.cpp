// frontend/atomic_file.cpp - AtomicFile: temporary, fsync, rename.
#include "frontend/atomic_file.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <unistd.h>

#include "ir/check.h"

namespace txl::frontend {

AtomicFile::AtomicFile(std::string path, mode_t mode)
    : path_(std::move(path)), tmp_(path_ + ".tmp." + std::to_string(::getpid())) {
  fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd_ < 0) throw Error(path_ + ": cannot create " + tmp_ + ": " + std::strerror(errno));
}

AtomicFile::~AtomicFile() {
  if (committed_) return;
  if (fd_ >= 0) ::close(fd_);
  ::unlink(tmp_.c_str());
}

void AtomicFile::write(const void* data, std::size_t size) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    ssize_t n = ::write(fd_, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw Error(tmp_ + ": cannot write: " + std::strerror(errno));
    p += n;
    size -= std::size_t(n);
  }
}

void AtomicFile::commit() {
  if (::fsync(fd_) != 0) throw Error(tmp_ + ": cannot sync: " + std::strerror(errno));
  int rc = ::close(fd_);
  fd_ = -1;
  if (rc != 0) throw Error(tmp_ + ": cannot close: " + std::strerror(errno));
  if (::rename(tmp_.c_str(), path_.c_str()) != 0)
    throw Error(path_ + ": cannot rename " + tmp_ + " into place: " + std::strerror(errno));
  committed_ = true;
  // Make the rename itself durable; failing here leaves a complete file.
  std::string dir = std::filesystem::path(path_).parent_path().string();
  int dfd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

}  // namespace txl::frontend
