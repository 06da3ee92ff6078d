// frontend/atomic_file.h - output files: whole or not at all, and never a file txlc must not replace.
//
// The destination decides how it is written (docs/ERRORS.md, "Outputs"):
//   - absent or a regular file: written to a temporary in the same folder,
//     named `.<name>.txlc-<random>` and created with O_CREAT | O_EXCL |
//     O_NOFOLLOW (a planted file or symlink there is never followed);
//     commit() fsyncs, renames it over the destination and fsyncs the folder;
//   - a character device (/dev/null) or a FIFO: written directly, no rename
//     (a FIFO needs a reader already; no reader is an error, not a hang);
//   - a symlink, a directory, a block device, a socket: refused;
//   - a file txlc has read in this process (the same inode as an input, by
//     any name or hard link): refused, so `-o` can never destroy an input.
// A temporary is removed when the AtomicFile is destroyed uncommitted, and
// on SIGINT, SIGTERM or SIGHUP (a signal-safe registry of temporaries; the
// signal then ends the process as it would have). Errors are txl::Error
// lines naming the destination.
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
  std::string path_, tmp_;  // tmp_ empty: writing to the destination itself (a device or FIFO)
  int fd_ = -1;
  int registered_ = -1;
  bool committed_ = false;
};

// Refuses `path` as an output when it would replace something txlc must
// not (the rules above); returns whether it exists as a regular file.
bool checkOutputPath(const std::string& path);

// A file written in place across runs (score --documents' FILE.partial, which
// --resume continues): checked by checkOutputPath, opened read-write with
// O_NOFOLLOW (a planted symlink is refused, never followed), refused when it
// is not a regular file of its own (a hard link), then locked (flock,
// exclusive, not waiting): a file another process holds is refused, so that
// two runs never write one output. Nothing is truncated: the caller reads
// what it holds, then truncates. Returns the descriptor, which the caller
// closes (closing it releases the lock).
int openContinuedFile(const std::string& path);
// Writes all of `data` to `fd` (retrying short writes and EINTR); txl::Error
// naming `path` when it cannot.
void writeAll(int fd, const void* data, std::size_t size, const std::string& path);

// A fresh directory `.<name>.txlc-<random>` beside `path`, registered for
// removal on a signal as it is made (with the files registered inside it:
// register each before writing it, so that no signal leaves it behind);
// release `slot` with releaseTemporary().
struct TemporaryDirectory {
  std::string path;
  int slot = -1;
};
TemporaryDirectory makeTemporaryDirectory(const std::string& path);
// Registers a path (a file, or an empty-once-its-files-are-gone directory)
// to remove on SIGINT/SIGTERM/SIGHUP; returns its slot, -1 when the
// registry is full (the path is then only removed by its owner).
int registerTemporary(const std::string& path, bool directory);
void releaseTemporary(int slot);

// From now on the first SIGINT or SIGTERM only sets a flag: interruptSignal()
// returns its number (0 before), for a command that checks it between units
// of work and ends cleanly (its AtomicFiles are then removed by their
// destructors). A second signal, or SIGHUP, ends the process as above,
// temporaries removed. A signal ignored at start (nohup) stays ignored.
void catchInterrupts();
int interruptSignal();

// From now on, remember (device, inode) of every file read as input
// (openRegularFile() notes each) and refuse outputs that are the same file.
// The txlc command turns it on; a library user may not want it.
void protectInputs();
void noteInputFile(const std::string& path, unsigned long long device, unsigned long long inode);
// Forgets `path` as an input: a file the command reads because it is its
// own earlier output, to be continued and replaced (score --documents
// --resume reads FILE.partial or FILE).
void forgetInputFile(const std::string& path);

}  // namespace txl::frontend
