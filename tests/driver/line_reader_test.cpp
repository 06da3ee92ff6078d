// tests/driver/line_reader_test.cpp - lines of a pipe as they arrive: a complete line at once, a partial
// one only once its break (or the end) comes, nothing waited for with a zero timeout, '\r\n' and a last
// line without a break, and a line over the bound refused before it is whole.
#include <catch2/catch.hpp>
#include <unistd.h>

#include <string>

#include "driver/line_reader.h"
#include "ir/check.h"

using namespace txl;
using namespace txl::driver;

namespace {

struct Pipe {
  int fds[2] = {-1, -1};
  Pipe() { REQUIRE(::pipe(fds) == 0); }
  ~Pipe() {
    closeWriter();
    ::close(fds[0]);
  }
  void write(const std::string& s) { REQUIRE(::write(fds[1], s.data(), s.size()) == ssize_t(s.size())); }
  void closeWriter() {
    if (fds[1] >= 0) ::close(fds[1]);
    fds[1] = -1;
  }
};

}  // namespace

TEST_CASE("a line reader returns each line as soon as its break arrives") {
  Pipe p;
  LineReader in(p.fds[0], "-", 64);
  std::string line;
  CHECK(in.next(line, 0) == LineReader::Status::Pending);  // nothing written yet, nothing waited for
  CHECK(in.next(line, 20) == LineReader::Status::Pending);
  p.write("first\nsec");
  REQUIRE(in.next(line, 1000) == LineReader::Status::Line);
  CHECK(line == "first");
  CHECK(in.lineNumber() == 1);
  CHECK(in.next(line, 0) == LineReader::Status::Pending);  // "sec" has no break yet
  p.write("ond\r\n\nlast");
  REQUIRE(in.next(line, 1000) == LineReader::Status::Line);
  CHECK(line == "second");
  REQUIRE(in.next(line, 0) == LineReader::Status::Line);
  CHECK(line.empty());
  CHECK(in.next(line, 0) == LineReader::Status::Pending);
  CHECK_FALSE(in.ended());
  p.closeWriter();
  REQUIRE(in.next(line, 1000) == LineReader::Status::Line);  // the end ends the last line
  CHECK(line == "last");
  CHECK(in.lineNumber() == 4);
  CHECK(in.next(line, 1000) == LineReader::Status::End);
  CHECK(in.ended());
}

TEST_CASE("a line reader refuses a line over its bound before the line is whole") {
  Pipe p;
  LineReader in(p.fds[0], "-", 8);
  std::string line;
  p.write("12345678\n");  // exactly the bound
  REQUIRE(in.next(line, 1000) == LineReader::Status::Line);
  CHECK(line == "12345678");
  p.write("123456789");  // one byte over, no break yet
  std::string message;
  for (int i = 0; i < 10 && message.empty(); ++i) try {
      in.next(line, 100);
    } catch (const Error& e) {
      message = e.what();
    }
  CHECK(message == "-: line 2: a line of more than 8 bytes, expected at most 8");
}

TEST_CASE("a line reader ends an input with no lines at once") {
  Pipe p;
  p.closeWriter();
  LineReader in(p.fds[0], "-", 8);
  std::string line;
  CHECK(in.next(line, 1000) == LineReader::Status::End);
  CHECK(in.lineNumber() == 0);
}
