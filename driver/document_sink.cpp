// driver/document_sink.cpp - a document job's lines to a stream, FILE.partial then FILE, a device or FIFO.
#include "driver/document_sink.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "ir/check.h"

namespace txl::driver {

DocumentSink::DocumentSink(const std::string& output, std::ostream* stream, std::uint64_t maxBytes)
    : output_(output), stream_(stream), maxBytes_(maxBytes) {
  if (output_.empty()) return;
  if (!frontend::checkOutputPath(output_) && ::access(output_.c_str(), F_OK) == 0) {
    direct_.emplace(output_, 0644);  // a device or FIFO: written in place
    return;
  }
  partial_ = output_ + ".partial";
  struct stat before {};
  const bool existed = ::lstat(partial_.c_str(), &before) == 0;
  fd_ = frontend::openContinuedFile(partial_);
  struct stat st {};
  if (::fstat(fd_, &st) != 0) {
    const int err = errno;
    ::close(fd_);
    fd_ = -1;
    throw Error(oneLine(partial_) + ": cannot stat: " + std::strerror(err));
  }
  device_ = st.st_dev;
  inode_ = st.st_ino;
  created_ = !existed;
}

DocumentSink::DocumentSink(const std::string& output, const std::string& kept, std::ostream* stream)
    : DocumentSink(output, stream) {
  start(kept);
}

DocumentSink::~DocumentSink() {
  if (fd_ < 0) return;
  // A run that failed before it began leaves no FILE.partial it created (still its own file, locked).
  struct stat st {};
  if (created_ && !started_ && ::lstat(partial_.c_str(), &st) == 0 && st.st_dev == device_ && st.st_ino == inode_)
    ::unlink(partial_.c_str());
  ::close(fd_);
}

std::string DocumentSink::earlier() const {
  if (fd_ < 0) return "";
  struct stat st {};
  if (::fstat(fd_, &st) != 0) throw Error(oneLine(partial_) + ": cannot stat: " + std::strerror(errno));
  if (std::uint64_t(st.st_size) > maxBytes_)
    throw Error(oneLine(partial_) + ": " + std::to_string(st.st_size) + " bytes, expected at most " +
                std::to_string(maxBytes_) + " (the limit of a documents output)");
  std::string text(std::size_t(st.st_size), '\0');
  std::size_t got = 0;
  while (got < text.size()) {
    const ssize_t n = ::pread(fd_, text.data() + got, text.size() - got, off_t(got));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw Error(oneLine(partial_) + ": cannot read: " + std::strerror(errno));
    if (n == 0) break;  // shortened meanwhile
    got += std::size_t(n);
  }
  text.resize(got);
  return text;
}

void DocumentSink::start(const std::string& kept) {
  TXL_CHECK(!started_, "a document sink started twice");
  started_ = true;
  if (fd_ >= 0 && ::ftruncate(fd_, 0) != 0)
    throw Error(oneLine(partial_) + ": cannot truncate: " + std::strerror(errno));
  write(kept);
}

void DocumentSink::write(const std::string& bytes) {
  if (bytes.empty()) return;
  if (direct_) {
    direct_->write(bytes.data(), bytes.size());
  } else if (fd_ >= 0) {
    if (written_ + bytes.size() > maxBytes_)
      throw Error(oneLine(partial_) + ": the lines would pass " + std::to_string(maxBytes_) +
                  " bytes, expected a documents output of at most that (what --resume reads back; split the corpus)");
    // pwrite at the run's own offset: the descriptor's position is never shared.
    for (std::size_t done = 0; done < bytes.size();) {
      const ssize_t n = ::pwrite(fd_, bytes.data() + done, bytes.size() - done, off_t(written_ + done));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) throw Error(oneLine(partial_) + ": cannot write: " + std::strerror(n < 0 ? errno : ENOSPC));
      done += std::size_t(n);
    }
  }
  written_ += bytes.size();
}

void DocumentSink::line(const std::string& l) {
  buffer_ += l;
  buffer_ += '\n';
}

void DocumentSink::flush() {
  TXL_CHECK(started_, "a document sink written before start()");
  if (output_.empty()) {
    if (stream_) *stream_ << buffer_ << std::flush;
  } else {
    write(buffer_);
  }
  buffer_.clear();
}

void DocumentSink::stop() {
  flush();
  if (direct_) direct_->commit();
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

void DocumentSink::commit() {
  flush();
  if (output_.empty()) return;
  if (direct_) {
    direct_->commit();
    return;
  }
  if (::fsync(fd_) != 0) throw Error(oneLine(partial_) + ": cannot sync: " + std::strerror(errno));
  // Only the file this run wrote becomes FILE.
  struct stat st {};
  const bool present = ::lstat(partial_.c_str(), &st) == 0;
  if (!present || st.st_dev != device_ || st.st_ino != inode_)
    throw Error(oneLine(partial_) + ": expected the file this run wrote, found " +
                (present ? "another file in its place" : "none") + " (replaced or removed behind the run); " +
                oneLine(output_) + " not written");
  frontend::checkOutputPath(output_);
  if (::rename(partial_.c_str(), output_.c_str()) != 0)
    throw Error(oneLine(output_) + ": cannot rename " + oneLine(partial_) + " into place: " + std::strerror(errno));
  const std::string dir = std::filesystem::path(output_).parent_path().string();
  if (const int dfd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
  ::close(fd_);  // releases the lock, now on FILE
  fd_ = -1;
}

}  // namespace txl::driver
