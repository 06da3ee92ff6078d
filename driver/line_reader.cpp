// driver/line_reader.cpp - lines of a descriptor as they arrive.
#include "driver/line_reader.h"

#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "ir/check.h"

namespace txl::driver {

LineReader::LineReader(int fd, std::string source, std::size_t maxLine)
    : fd_(fd), source_(std::move(source)), maxLine_(maxLine) {}

LineReader::Status LineReader::next(std::string& line, int timeoutMs) {
  const auto tooLong = [&] {
    return Error(source_ + ": line " + std::to_string(lines_ + 1) + ": a line of more than " +
                 std::to_string(maxLine_) + " bytes, expected at most " + std::to_string(maxLine_));
  };
  const auto take = [&](std::size_t end) {
    if (end - start_ > maxLine_) throw tooLong();
    line.assign(buffer_, start_, end - start_);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    start_ = scanned_ = end < buffer_.size() ? end + 1 : end;
    ++lines_;
    return Status::Line;
  };
  for (bool waited = false;; waited = true) {
    if (const std::size_t nl = buffer_.find('\n', scanned_); nl != std::string::npos) return take(nl);
    scanned_ = buffer_.size();
    if (scanned_ - start_ > maxLine_) throw tooLong();
    if (ended_) {
      if (start_ < buffer_.size()) return take(buffer_.size());
      return Status::End;
    }
    // One read per call at most: a trickle of bytes without a line break still returns to the caller.
    if (waited) return Status::Pending;
    if (start_ > 0) {  // the lines returned leave the buffer before it grows
      buffer_.erase(0, start_);
      scanned_ -= start_;
      start_ = 0;
    }
    pollfd p{fd_, POLLIN, 0};
    const int ready = ::poll(&p, 1, timeoutMs);
    if (ready < 0 && errno != EINTR) throw Error(source_ + ": cannot wait for input: " + std::strerror(errno));
    if (ready <= 0) return Status::Pending;
    char chunk[1 << 16];
    const ssize_t n = ::read(fd_, chunk, sizeof chunk);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) return Status::Pending;
      throw Error(source_ + ": cannot read: " + std::strerror(errno));
    }
    if (n == 0) ended_ = true;
    else buffer_.append(chunk, std::size_t(n));
  }
}

}  // namespace txl::driver
