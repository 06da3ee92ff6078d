// frontend/atomic_file.h - a file that appears at its destination whole or not at all.
//
// Writes go to `path.tmp.<pid>` in the same directory; commit() fsyncs,
// renames it over `path` and fsyncs the directory. Destroyed uncommitted (an
// exception, a return), it removes the temporary. A process killed midway
// leaves at most the temporary, never a partial `path`. Errors are txl::Error
// lines naming the file.
//
//   AtomicFile f(path, 0644);
//   f.write(header.data(), header.size());
//   f.commit();
#pragma once

#include <cstddef>
#include <string>
#include <sys/types.h>

namespace txl::frontend {

class AtomicFile {
 public:
  AtomicFile(std::string path, mode_t mode);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(const void* data, std::size_t size);
  void commit();

 private:
  std::string path_, tmp_;
  int fd_ = -1;
  bool committed_ = false;
};

}  // namespace txl::frontend
