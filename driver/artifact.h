// driver/artifact.h - the compiled artifact: one file holding everything a run needs.
//
// Layout (docs/ARTIFACT.md is the full description):
//   header    64 bytes: magic "TXLCART\0", format version, offsets and lengths
//   manifest  JSON: txlc version, model id, spec, setting, pipeline,
//             vocabulary, the optimized graphs of the setting's shape buckets,
//             and a table of the weight tensors
//   data      the weights, f32, each 64-byte aligned
//   checksum  8 bytes: ContentHash of everything before it
// readArtifact() checks the header, the length, the checksum and the manifest
// before anything is used; every problem is one txl::Error line naming the
// file. Weights view the mapped file (no copy).
//
//   Artifact a = buildArtifact(model, setting);   // driver/compile.h
//   writeArtifact("kjv.txla", a);                 // atomic: temporary + rename
//   LoadedArtifact b = readArtifact("kjv.txla");
//   b.artifact.weights.at("r_w_bias");
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "driver/setting.h"
#include "frontend/model_spec.h"
#include "ir/segment.h"
#include "ir/tensor.h"

namespace txl::driver {

inline constexpr char kArtifactMagic[8] = {'T', 'X', 'L', 'C', 'A', 'R', 'T', '\0'};
inline constexpr std::uint32_t kArtifactVersion = 3;  // 2: padded warm-up graphs; 3: a pad mask per stream
inline constexpr std::size_t kArtifactHeaderBytes = 64;
inline constexpr std::uint64_t kMaxManifestBytes = std::uint64_t{64} << 20;  // docs/ERRORS.md, "Limits"
inline constexpr const char* kTxlcVersion = "0.1.0";
// The executor whose fast paths an artifact's graphs are optimized for
// (driver/compile.h targetInfo()): at compile and when a load rebuilds the
// main graph to check it, whatever --backend the run then uses.
inline constexpr const char* kArtifactTarget = "onednn";

// One optimized segment graph, stored as graph JSON (ir/json_io.h). The
// manifest records the segment's qlen, mlen, logprob, nll and padded; its
// batch, mem_len, clamp_len and same_length are the artifact's setting's.
struct StoredGraph {
  ir::Segment segment;
  std::string role;        // "score", "score-warmup", "step", "step-warmup": why it is stored
  nlohmann::json graph;    // txlc-graph/1
  std::uint64_t hash = 0;  // ContentHash of graph.dump()
};

struct Artifact {
  std::string txlcVersion;
  std::string modelId;  // modelId(spec, weights), 16 hex digits
  frontend::ModelSpec spec;
  // The setting compiled for: batch, qlen, mem_len, clamp_len, same_length,
  // and in pipeline.passes the passes the graphs went through, in order (the
  // manifest's "memory" is memoryForm() of it). Threads and backend are the
  // run's, not stored.
  Setting setting;
  std::optional<nlohmann::json> vocabulary;  // Vocabulary::toJson(), when the model has one
  std::string cpuIsa;                        // the CPU the artifact was compiled on (informational)
  std::vector<StoredGraph> graphs;
  ir::TensorMap weights;  // canonical names; tied names share a buffer
};

// The weights' identity: ContentHash over the spec JSON and every weight
// (sorted names, type, bytes). A session state records it.
std::string modelId(const frontend::ModelSpec& spec, const ir::TensorMap& weights);

// The artifact's bytes (header, manifest, data, checksum).
std::vector<std::byte> serializeArtifact(const Artifact& a);
// Writes atomically: `path.tmp.<pid>` in the same directory, fsync, rename.
void writeArtifact(const std::string& path, const Artifact& a);

struct LoadedArtifact {
  Artifact artifact;
  std::string path;
  std::uint64_t bytes = 0;
  double loadSeconds = 0;
};

// Maps `path` and reads the artifact that starts at `offset` and is `length`
// bytes long (the whole file by default; a standalone executable holds one at
// an offset). Errors name `path`; a SIGBUS on the mapping (the file truncated
// under the run) names `displayName` when given (frontend::mapInputFile).
LoadedArtifact readArtifact(const std::string& path, std::uint64_t offset = 0,
                            std::optional<std::uint64_t> length = std::nullopt, const std::string& displayName = "");
// Reads an in-memory image (tests, fuzzing); errors name `name`. With
// `fileBacked` the image is a read-only file mapping and the weights are
// file-backed views of it (ir::Tensor::fileView).
Artifact parseArtifact(std::shared_ptr<const void> owner, const std::byte* data, std::size_t size,
                       const std::string& name, bool fileBacked = false);

// True if the file starts with the artifact magic (false for unreadable files).
bool looksLikeArtifact(const std::string& path);

}  // namespace txl::driver
