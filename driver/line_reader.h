// driver/line_reader.h - lines of a descriptor as they arrive (a pipe, a
// FIFO, a terminal, a file), without waiting for the input's end: what
// `txlc score --documents -` reads its documents with.
//
// A line ends at '\n' ('\r' before it dropped); a last line without one ends
// at the input's end. Memory stays within one line's bound: bytes are read
// only while no complete line is buffered, and a line longer than `maxLine`
// is a txl::Error as soon as that many bytes of it have arrived.
//
//   LineReader in(0, "-", kMaxJsonLineBytes);
//   std::string line;
//   while (true) {
//     LineReader::Status s = in.next(line, 100);   // at most about 100 ms
//     if (s == LineReader::Status::End) break;
//     if (s == LineReader::Status::Line) use(line, in.lineNumber());
//   }
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace txl::driver {

class LineReader {
 public:
  // `fd` stays the caller's (not closed); `source` names it in messages.
  LineReader(int fd, std::string source, std::size_t maxLine);

  enum class Status { Line, Pending, End };
  // Line: `line` holds the next line. Pending: none is complete yet (within
  // about `timeoutMs` milliseconds when it waits; 0 takes only what has
  // arrived; a signal also ends the wait). End: the input has ended and
  // every line was returned. txl::Error for a read error or a line over the
  // bound ("-: line 3: a line of more than N bytes, expected at most N").
  Status next(std::string& line, int timeoutMs);
  // The 1-based number of the line last returned.
  std::int64_t lineNumber() const { return lines_; }
  // End was returned: the input has ended and every line of it was returned.
  bool ended() const { return ended_ && start_ >= buffer_.size(); }

 private:
  int fd_;
  std::string source_;
  std::size_t maxLine_;
  std::string buffer_;
  std::size_t start_ = 0;    // where the next line begins in buffer_
  std::size_t scanned_ = 0;  // buffer_ holds no '\n' in [start_, scanned_)
  bool ended_ = false;
  std::int64_t lines_ = 0;
};

}  // namespace txl::driver
