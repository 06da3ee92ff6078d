// frontend/input_file.h - opening and reading the files txlc is given, with limits.
//
// Every input file (spec, config, weights, artifact, state, text, vocabulary,
// token ids) is opened here, so that none of them can hang or exhaust memory
// before it is validated:
//   - the open never blocks (O_NONBLOCK): a FIFO with no writer, a device;
//   - a named file must be a regular file (fstat before any read): a FIFO,
//     a character or block device, a socket or a directory is refused with
//     one line naming the file and what it is;
//   - its size is checked against the reader's limit before a byte is read;
//   - a read stops at the limit even if the file grows meanwhile.
// Standard input ("-", for texts and token ids only) may be a pipe or a
// terminal: it is read to its end or to the limit, whichever comes first.
//
//   int fd = openRegularFile(path, "a spec JSON file");             // caller closes
//   std::string text = readInputFile(path, kMaxSpecBytes, "spec");  // whole file, bounded
//   MappedFile w = mapInputFile(path, "a safetensors file");        // read in place
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <new>
#include <span>
#include <string>

#include "ir/check.h"

namespace txl::frontend {

// Limits on what is read whole before it is parsed (docs/ERRORS.md, "Limits").
inline constexpr std::uint64_t kMaxSpecBytes = std::uint64_t{16} << 20;         // spec, config.json
inline constexpr std::uint64_t kMaxTextBytes = std::uint64_t{256} << 20;        // a text or token-id file
inline constexpr std::uint64_t kMaxVocabularyBytes = std::uint64_t{256} << 20;  // vocab.json, vocab.txt

// "a FIFO", "a character device", ... for a file type from stat's st_mode.
std::string fileKind(unsigned mode);

// Opens `path` read-only without blocking and returns the descriptor
// (blocking again, close-on-exec) of a regular file; anything else is a
// txl::Error "PATH: is a FIFO, expected WHAT" (or no such file, cannot open).
// `size` receives the file's size.
int openRegularFile(const std::string& path, const std::string& what, std::uint64_t* size = nullptr);

// The whole of `path`, at most `limit` bytes (refused before reading when
// its size is over), through openRegularFile(); "-" reads standard input
// when `allowStdin`. `what` names the expected file in messages ("a text
// file", "a vocabulary file").
std::string readInputFile(const std::string& path, std::uint64_t limit, const std::string& what,
                          bool allowStdin = false);

// parse(), which builds values from the bytes of `path` already read (a
// vocabulary's symbols, documents, token ids): running out of memory there
// ends in an Error naming the file and `what` it was read as, not a bare
// "out of memory".
template <typename Parse>
auto parsingFile(const std::string& path, const std::string& what, Parse&& parse) -> decltype(parse()) {
  try {
    return parse();
  } catch (const std::bad_alloc&) {
    throw Error(oneLine(path == "-" ? std::string("standard input") : path) + ": out of memory parsing it as " + what);
  }
}

// Files txlc maps (weights, artifacts) must not change while it runs. With
// guardMappedFiles() on (the txlc command turns it on), a SIGBUS inside a
// registered mapping (the file was truncated under it) ends the process
// with one line naming the file and exit code 3, not a crash.
void guardMappedFiles();
// Registers [addr, addr + size) as a mapping of `path`; returns its slot
// (-1 when the registry is full). Release it before unmapping.
int registerMapping(const void* addr, std::size_t size, const std::string& path);
void releaseMapping(int slot);

// A regular file mapped read-only (through openRegularFile) and registered
// for guardMappedFiles(): `bytes` stay valid while a copy of `owner` lives;
// the last copy releases the registration and unmaps. Weights, checkpoints
// and artifacts are read this way, in place. An empty file has no bytes and
// no owner. The SIGBUS line names `displayName` when given (a standalone
// executable maps /proc/self/exe, but is named as it was invoked), else `path`.
struct MappedFile {
  std::span<const std::byte> bytes;
  std::shared_ptr<void> owner;
};
MappedFile mapInputFile(const std::string& path, const std::string& what, const std::string& displayName = "");

// Whether `p` names a regular file (after symlinks); false on any error.
bool isFile(const std::filesystem::path& p);

}  // namespace txl::frontend
