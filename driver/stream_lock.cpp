// driver/stream_lock.cpp - StreamLock: flock(2) on a stream's lock file.
#include "driver/stream_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "ir/check.h"

namespace txl::driver {

std::optional<StreamLock> StreamLock::claim(const std::string& dir, const std::string& id) {
  const std::string path = (std::filesystem::path(dir) / (id + ".lock")).string();
  for (;;) {
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) throw Error(path + ": cannot open the stream's lock file (" + std::strerror(errno) + ")");
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      const int error = errno;
      ::close(fd);
      if (error == EWOULDBLOCK) return std::nullopt;
      throw Error(path + ": cannot lock the stream's lock file (" + std::strerror(error) + ")");
    }
    // Locked: still the file at `path`? (Its holder may have removed it meanwhile.)
    struct stat held {
    }, named{};
    if (::fstat(fd, &held) == 0 && ::stat(path.c_str(), &named) == 0 && held.st_ino == named.st_ino &&
        held.st_dev == named.st_dev)
      return StreamLock(fd, path);
    ::close(fd);
  }
}

StreamLock::StreamLock(StreamLock&& other) noexcept : fd_(other.fd_), path_(std::move(other.path_)) { other.fd_ = -1; }

StreamLock& StreamLock::operator=(StreamLock&& other) noexcept {
  if (this != &other) {
    release();
    fd_ = other.fd_;
    path_ = std::move(other.path_);
    other.fd_ = -1;
  }
  return *this;
}

StreamLock::~StreamLock() { release(); }

void StreamLock::release() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

void StreamLock::remove() {
  if (fd_ >= 0) ::unlink(path_.c_str());
  release();
}

}  // namespace txl::driver
