// driver/document_sink.cpp - a document job's lines to a stream, FILE.partial then FILE, a device or FIFO.
#include "driver/document_sink.h"

#include <unistd.h>

#include "driver/text_source.h"

namespace txl::driver {

DocumentSink::DocumentSink(const std::string& output, const std::string& kept, std::ostream* stream)
    : output_(output), stream_(stream) {
  if (output_.empty()) return;
  if (!frontend::checkOutputPath(output_) && ::access(output_.c_str(), F_OK) == 0) {
    direct_.emplace(output_, 0644);  // a device or FIFO: written in place
    direct_->write(kept.data(), kept.size());
    return;
  }
  partial_ = output_ + ".partial";
  fd_ = frontend::openContinuedFile(partial_);
  frontend::writeAll(fd_, kept.data(), kept.size(), partial_);
}

DocumentSink::~DocumentSink() {
  if (fd_ >= 0) ::close(fd_);
}

void DocumentSink::line(const std::string& l) {
  buffer_ += l;
  buffer_ += '\n';
}

void DocumentSink::flush() {
  if (output_.empty()) {
    if (stream_) *stream_ << buffer_ << std::flush;
  } else if (direct_) {
    direct_->write(buffer_.data(), buffer_.size());
  } else {
    frontend::writeAll(fd_, buffer_.data(), buffer_.size(), partial_);
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
  ::close(fd_);
  fd_ = -1;
  const std::string all = readTextFile(partial_);
  frontend::AtomicFile f(output_, 0644);
  f.write(all.data(), all.size());
  f.commit();
  ::unlink(partial_.c_str());
}

}  // namespace txl::driver
