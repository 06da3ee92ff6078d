// frontend/safetensors.h - a validating safetensors reader and an atomic writer.
//
// Layout: 8 bytes little-endian header length N, N bytes of JSON mapping each
// tensor name to {"dtype", "shape", "data_offsets": [begin, end]} (offsets
// relative to the data section that follows the header), optionally
// "__metadata__" (a map of strings), then the raw little-endian data.
//
// open() maps the file (mmap, copy-on-write so a stray write never reaches the
// file) and checks everything before any tensor is read: the header length
// against the file size, the header JSON (an object, no duplicate names),
// dtype names, shape × dtype size == byte range, ranges inside the data
// section, no two ranges overlapping. Each problem is one txl::Error line:
//   model.safetensors: tensor "x": data_offsets [0, 12] hold 12 bytes, shape [2,3] of F32 needs 24
//
//   SafetensorsFile f = SafetensorsFile::open("model.safetensors");
//   ir::Tensor w = f.toF32("layers.0.dec_attn.qkv_net.weight");  // aliases the mapping when it can
//   writeSafetensors("out.safetensors", {{"w", w}});
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "frontend/tensor_source.h"
#include "ir/tensor.h"

namespace txl::frontend {

// Element types a safetensors file may name.
enum class StDType { F64, F32, F16, BF16, F8_E4M3, F8_E5M2, I64, I32, I16, I8, U64, U32, U16, U8, BOOL };

const char* stDTypeName(StDType t);  // "F32"
std::size_t stDTypeSize(StDType t);  // bytes per element

struct TensorInfo {
  std::string name;
  StDType dtype = StDType::F32;
  ir::Shape shape;
  std::uint64_t begin = 0, end = 0;  // byte range inside the data section
  std::int64_t numel() const;
};

// A safetensors file is a TensorSource (frontend/tensor_source.h) whose
// tensors view the file's mapping.
class SafetensorsFile : public TensorSource {
 public:
  // Maps and validates the file at `path`; errors name `path`.
  static SafetensorsFile open(const std::string& path);
  // Validates an in-memory image (tests, fuzzing); errors name `name`.
  static SafetensorsFile fromBytes(std::vector<std::byte> bytes, const std::string& name);

  const std::string& path() const override { return path_; }
  std::vector<std::string> names() const override;  // sorted
  bool contains(const std::string& name) const { return infos_.contains(name); }
  const TensorInfo& info(const std::string& name) const;  // txl::Error if absent
  const ir::Shape& shape(const std::string& name) const override { return info(name).shape; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

  // The tensor as f32: F32 data aliases the mapping when 4-byte aligned and is
  // copied otherwise; F16, BF16 and F64 are converted. Other dtypes, and
  // non-finite values under NonFinitePolicy::Refuse, are a txl::Error.
  ir::Tensor toF32(const std::string& name, const ConvertOptions& options = {}) const override;
  // The tensor as i64 (from I64, I32, I16, I8, U32, U16, U8; U64 if it fits).
  ir::Tensor toI64(const std::string& name) const;
  // The raw bytes of a tensor (little-endian, possibly unaligned).
  const std::byte* bytes(const std::string& name) const;

 private:
  SafetensorsFile() = default;
  void parse();

  std::string path_;
  // A tensor of the file in place: file-backed (ir::Tensor::fileView) when the file is mapped.
  ir::Tensor view(const ir::TensorType& type, const std::byte* src) const;

  std::shared_ptr<void> owner_;  // keeps the mapping (or the byte vector) alive
  bool mapped_ = false;          // owner_ is a read-only mapping of path_
  const std::byte* base_ = nullptr;
  std::uint64_t size_ = 0;
  std::uint64_t dataStart_ = 0;  // 8 + header length
  std::map<std::string, TensorInfo> infos_;
  std::map<std::string, std::string> metadata_;
};

// Writes the tensors (F32, BF16 or I64) in the given order with their names,
// plus optional "__metadata__". Atomic: writes `path.tmp.<pid>` in the same
// directory, fsyncs, renames over `path`; the temporary is removed on failure.
// Duplicate names are a txl::Error.
void writeSafetensors(const std::string& path, const std::vector<std::pair<std::string, ir::Tensor>>& tensors,
                      const std::map<std::string, std::string>& metadata = {});

// The bytes writeSafetensors would write (for tests and fuzz seeds).
std::vector<std::byte> serializeSafetensors(const std::vector<std::pair<std::string, ir::Tensor>>& tensors,
                                            const std::map<std::string, std::string>& metadata = {});

}  // namespace txl::frontend
