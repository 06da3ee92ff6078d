// driver/standalone.h - `txlc compile --emit exe`: txlc with an artifact appended.
//
// A standalone executable is a copy of the running txlc binary, zero padding
// to a 64-byte boundary, the artifact, and a 24-byte trailer:
//   u64 offset of the artifact, u64 its length, 8 bytes magic "TXLCEXE\0"
// (little-endian). At startup main() calls detectEmbeddedArtifact()
// (driver/model.h), which reads the trailer of /proc/self/exe; when it
// is there, the commands take the embedded artifact as their MODEL and do not
// ask for one. The ELF loader ignores bytes after the sections it maps, so the
// copy still runs; it needs nothing beside it and works from any directory.
//
//   writeStandalone("kjv", artifactBytes);   // atomic, mode 0755
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace txl::driver {

inline constexpr char kStandaloneMagic[8] = {'T', 'X', 'L', 'C', 'E', 'X', 'E', '\0'};
inline constexpr std::size_t kStandaloneTrailerBytes = 24;

struct StandaloneTrailer {
  std::uint64_t offset = 0, length = 0;
};

// The trailer of `path`, if it has a valid one (nullopt otherwise, also for
// unreadable files).
// nullopt without the magic; a txl::Error naming `name` (default: path)
// when the magic is there but the offsets do not fit the file, or when the
// magic is missing from an ELF file that has bytes after its image.
std::optional<StandaloneTrailer> readStandaloneTrailer(const std::string& path, const std::string& name = "");

// Copies the txlc executable `txlc` (default: the running one; only its own
// bytes: an embedded artifact it carries is left out) to `path` with
// `artifact` appended; atomic.
void writeStandalone(const std::string& path, const std::vector<std::byte>& artifact,
                     const std::string& txlc = "/proc/self/exe");

}  // namespace txl::driver
