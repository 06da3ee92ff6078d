// driver/document_sink.h - where a document job puts its lines: a stream, a
// file written safely and resumably, or nowhere.
//
// To a stream (stdout) the lines go as they complete, in order. To FILE (a
// regular file, or an absent one) they go to FILE.partial as they complete
// in order (what --resume continues from), and commit() renames FILE.partial
// over FILE; a run that stops midway (stop()) leaves FILE as it was (absent,
// or an earlier complete output) and FILE.partial. A character device or
// FIFO (/dev/null, a pipe) gets the lines directly, with no .partial beside
// it. Anything else FILE must not replace is refused as it is opened, by
// frontend/atomic_file's rules. With neither a file nor a stream the lines
// are dropped (a caller that keeps the structured results).
//
// FILE belongs to one run: the sink opens FILE.partial once, as it is
// constructed, and keeps it open and locked (flock) to the end, so a second
// run given the same FILE is refused before it reads or truncates anything.
// commit() renames only the file this run wrote: when FILE.partial names
// another file by then (replaced or removed behind the run), nothing is
// renamed and the run fails. FILE.partial may not grow past `maxBytes`
// (what --resume can read back): the line that would pass it fails the run
// as it is flushed, not at the end.
//
//   DocumentSink sink(output, &std::cout);   // claims FILE
//   std::string earlier = sink.earlier();    // what FILE.partial held, for --resume
//   sink.start(kept);
//   sink.line(documentLine(...)); sink.flush(); ... sink.commit();
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>

#include "frontend/atomic_file.h"
#include "frontend/input_file.h"

namespace txl::driver {

// The most a documents output (FILE.partial) may hold: what --resume reads back.
inline constexpr std::uint64_t kMaxDocumentOutputBytes = frontend::kMaxTextBytes;

class DocumentSink {
 public:
  // Claims `output` (FILE.partial opened and locked; nothing written yet).
  // `stream`: where the lines go without a file (nullptr: nowhere).
  DocumentSink(const std::string& output, std::ostream* stream, std::uint64_t maxBytes = kMaxDocumentOutputBytes);
  // Claims `output` and starts it with `kept` (the lines of an earlier run kept by --resume).
  DocumentSink(const std::string& output, const std::string& kept, std::ostream* stream);
  ~DocumentSink();
  DocumentSink(const DocumentSink&) = delete;
  DocumentSink& operator=(const DocumentSink&) = delete;

  // What FILE.partial held when it was claimed (empty without one); read
  // through the descriptor this run holds, at most maxBytes.
  std::string earlier() const;
  // Begins the output: FILE.partial truncated, then `kept` written. Once.
  void start(const std::string& kept);
  // One line (no line break), buffered until flush().
  void line(const std::string& l);
  void flush();
  // FILE.partial, or empty for a stream, a device or a FIFO.
  const std::string& partialPath() const { return partial_; }
  // An interrupted run: the lines so far are out; FILE stays as it was and
  // FILE.partial holds them for --resume.
  void stop();
  // The run is complete: FILE.partial renamed over FILE.
  void commit();

 private:
  void write(const std::string& bytes);
  std::string output_, partial_;
  std::ostream* stream_;
  std::uint64_t maxBytes_;
  std::uint64_t written_ = 0;
  int fd_ = -1;
  unsigned long long device_ = 0, inode_ = 0;  // FILE.partial as opened
  bool started_ = false;
  bool created_ = false;  // FILE.partial did not exist before this sink
  std::optional<frontend::AtomicFile> direct_;
  std::string buffer_;
};

}  // namespace txl::driver
