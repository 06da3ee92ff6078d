// driver/document_sink.h - where a document job puts its lines: a stream, a
// file written safely and resumably, or nowhere.
//
// To a stream (stdout) the lines go as they complete, in order. To FILE (a
// regular file, or an absent one) they go to FILE.partial as they complete
// in order (what --resume continues from), and commit() writes FILE from it
// atomically and removes FILE.partial; a run that stops midway (stop())
// leaves FILE as it was (absent, or an earlier complete output) and
// FILE.partial. A character device or FIFO (/dev/null, a pipe) gets the lines
// directly, with no .partial beside it. Anything else FILE must not replace
// is refused as it is opened, by frontend/atomic_file's rules (which also
// decide how FILE.partial is opened). With neither a file nor a stream the
// lines are dropped (a caller that keeps the structured results).
//
//   DocumentSink sink(output, kept, &std::cout);
//   sink.line(documentLine(...)); sink.flush(); ... sink.commit();
#pragma once

#include <optional>
#include <ostream>
#include <string>

#include "frontend/atomic_file.h"

namespace txl::driver {

class DocumentSink {
 public:
  // `kept`: the lines of an earlier run kept by --resume, written first.
  // `stream`: where the lines go without a file (nullptr: nowhere).
  DocumentSink(const std::string& output, const std::string& kept, std::ostream* stream);
  ~DocumentSink();
  DocumentSink(const DocumentSink&) = delete;
  DocumentSink& operator=(const DocumentSink&) = delete;

  // One line (no line break), buffered until flush().
  void line(const std::string& l);
  void flush();
  // FILE.partial, or empty for a stream, a device or a FIFO.
  const std::string& partialPath() const { return partial_; }
  // An interrupted run: the lines so far are out; FILE stays as it was and
  // FILE.partial holds them for --resume.
  void stop();
  // The run is complete: FILE replaced atomically by every line.
  void commit();

 private:
  std::string output_, partial_;
  std::ostream* stream_;
  int fd_ = -1;
  std::optional<frontend::AtomicFile> direct_;
  std::string buffer_;
};

}  // namespace txl::driver
