// frontend/safetensors.cpp - validating safetensors reader (mmap) and atomic writer.
//
// Algorithm (reader):
//   1. Map the file copy-on-write; refuse files shorter than the 8-byte length.
//   2. Check the header length against the file size (and a 100 MiB cap).
//   3. Parse the header strictly (duplicate names refused: nlohmann alone
//      would keep the last one silently); require an object.
//   4. Per tensor: a known dtype, a shape of non-negative integers whose
//      element count × dtype size (checked for overflow) equals the byte
//      range, and a range inside the data section.
//   5. Sort the ranges and refuse any two non-empty ones that overlap.
// Conversion to f32 happens per tensor, on demand, with an optional scan for
// NaN and Inf.
#include "frontend/safetensors.h"
#include "frontend/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>

#include <nlohmann/json.hpp>

#include "frontend/model_spec.h"
#include "frontend/input_file.h"
#include "ir/check.h"

namespace txl::frontend {

static_assert(std::endian::native == std::endian::little, "safetensors data is little-endian");

using nlohmann::json;

namespace {

constexpr std::uint64_t kMaxHeaderBytes = std::uint64_t{100} << 20;

struct DTypeRow {
  StDType type;
  const char* name;
  std::size_t size;
};
constexpr DTypeRow kDTypes[] = {
    {StDType::F64, "F64", 8},   {StDType::F32, "F32", 4},         {StDType::F16, "F16", 2},
    {StDType::BF16, "BF16", 2}, {StDType::F8_E4M3, "F8_E4M3", 1}, {StDType::F8_E5M2, "F8_E5M2", 1},
    {StDType::I64, "I64", 8},   {StDType::I32, "I32", 4},         {StDType::I16, "I16", 2},
    {StDType::I8, "I8", 1},     {StDType::U64, "U64", 8},         {StDType::U32, "U32", 4},
    {StDType::U16, "U16", 2},   {StDType::U8, "U8", 1},           {StDType::BOOL, "BOOL", 1},
};

std::string show(const json& v) {
  std::string s = v.dump(-1, ' ', true, json::error_handler_t::replace);
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  return s;
}

std::string inQuotes(const std::string& name) { return quote(name); }

std::string rangeStr(std::uint64_t b, std::uint64_t e) {
  return "[" + std::to_string(b) + ", " + std::to_string(e) + "]";
}

float halfToFloat(std::uint16_t h) {
  const bool negative = (h >> 15) & 1;
  const std::uint32_t exponent = (h >> 10) & 0x1f;
  const std::uint32_t mantissa = h & 0x3ff;
  float value;
  if (exponent == 0) {
    value = std::ldexp(static_cast<float>(mantissa), -24);
  } else if (exponent == 31) {
    value = mantissa ? std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::infinity();
  } else {
    std::uint32_t bits = ((exponent - 15 + 127) << 23) | (mantissa << 13);
    value = std::bit_cast<float>(bits);
  }
  return negative ? -value : value;
}

template <typename T>
T load(const std::byte* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

const char* irDTypeName(ir::DType t) {
  switch (t) {
    case ir::DType::F32:
      return "F32";
    case ir::DType::BF16:
      return "BF16";
    case ir::DType::I64:
      return "I64";
  }
  return "?";
}

// The header text (padded so the data section starts 8-aligned) and the order of the data.
std::string headerFor(const std::vector<std::pair<std::string, ir::Tensor>>& tensors,
                      const std::map<std::string, std::string>& metadata) {
  json header = json::object();
  std::uint64_t offset = 0;
  for (const auto& [name, t] : tensors) {
    if (header.contains(name)) throw Error("safetensors writer: duplicate tensor name " + inQuotes(name));
    if (name == "__metadata__") throw Error("safetensors writer: \"__metadata__\" cannot name a tensor");
    TXL_CHECK(!t.empty(), "tensor " + name + " has no data");
    json shape = json::array();
    for (auto d : t.shape()) shape.push_back(d);
    header[name] = {
        {"dtype", irDTypeName(t.dtype())}, {"shape", shape}, {"data_offsets", {offset, offset + t.bytes()}}};
    offset += t.bytes();
  }
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::string text = header.dump(-1, ' ', false, json::error_handler_t::strict);
  while ((8 + text.size()) % 8 != 0) text += ' ';
  return text;
}

std::array<std::byte, 8> lengthPrefix(std::uint64_t n) {
  std::array<std::byte, 8> b;
  for (int i = 0; i < 8; ++i) b[i] = static_cast<std::byte>((n >> (8 * i)) & 0xff);
  return b;
}

}  // namespace

const char* stDTypeName(StDType t) {
  for (const auto& row : kDTypes)
    if (row.type == t) return row.name;
  return "?";
}

std::size_t stDTypeSize(StDType t) {
  for (const auto& row : kDTypes)
    if (row.type == t) return row.size;
  return 0;
}

std::int64_t TensorInfo::numel() const {
  std::int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

// ---------------------------------------------------------------- reader

SafetensorsFile SafetensorsFile::open(const std::string& path) {
  // Read-only: tensors view it in place, and a page never written can be
  // dropped from memory and read back from the file (ir::Tensor::fileView).
  MappedFile m = mapInputFile(path, "a safetensors file");
  SafetensorsFile f;
  f.path_ = path;
  f.size_ = m.bytes.size();
  if (f.size_ < 8)
    throw Error(path + ": file of " + std::to_string(f.size_) + " bytes is too short for the 8-byte header length");
  f.owner_ = std::move(m.owner);
  f.base_ = m.bytes.data();
  f.mapped_ = true;
  f.parse();
  return f;
}

SafetensorsFile SafetensorsFile::fromBytes(std::vector<std::byte> bytes, const std::string& name) {
  SafetensorsFile f;
  f.path_ = name;
  auto holder = std::make_shared<std::vector<std::byte>>(std::move(bytes));
  f.base_ = holder->data();
  f.size_ = holder->size();
  f.owner_ = holder;
  f.parse();
  return f;
}

void SafetensorsFile::parse() {
  const std::string& p = path_;
  if (size_ < 8)
    throw Error(p + ": file of " + std::to_string(size_) + " bytes is too short for the 8-byte header length");
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | std::to_integer<std::uint64_t>(base_[i]);
  if (n > size_ - 8)
    throw Error(p + ": header length " + std::to_string(n) + " runs past the end of the file (" +
                std::to_string(size_) + " bytes, " + std::to_string(size_ - 8) + " after the length)");
  if (n > kMaxHeaderBytes)
    throw Error(p + ": header length " + std::to_string(n) + " is over the limit of " +
                std::to_string(kMaxHeaderBytes) + " bytes");
  dataStart_ = 8 + n;
  const std::uint64_t dataSize = size_ - dataStart_;

  std::string_view text(reinterpret_cast<const char*>(base_ + 8), n);
  json header = parseJsonText(text, p + ": header");
  if (!header.is_object()) throw Error(p + ": header: expected a JSON object, got " + show(header));

  for (auto it = header.begin(); it != header.end(); ++it) {
    const std::string& name = it.key();
    const json& v = it.value();
    if (name == "__metadata__") {
      if (!v.is_object()) throw Error(p + ": __metadata__: expected an object of strings, got " + show(v));
      for (auto m = v.begin(); m != v.end(); ++m) {
        if (!m.value().is_string())
          throw Error(p + ": __metadata__: " + inQuotes(m.key()) + ": expected a string, got " + show(m.value()));
        metadata_[m.key()] = m.value().get<std::string>();
      }
      continue;
    }
    const std::string where = p + ": tensor " + inQuotes(name);
    if (!v.is_object()) throw Error(where + ": expected an object with dtype, shape and data_offsets, got " + show(v));
    for (const char* key : {"dtype", "shape", "data_offsets"})
      if (!v.contains(key)) throw Error(where + ": missing \"" + key + "\"");
    TensorInfo info;
    info.name = name;

    const json& dt = v["dtype"];
    const DTypeRow* row = nullptr;
    if (dt.is_string())
      for (const auto& r : kDTypes)
        if (dt.get<std::string>() == r.name) row = &r;
    if (!row)
      throw Error(where + ": unknown dtype " + show(dt) +
                  " (expected F64, F32, F16, BF16, F8_E4M3, F8_E5M2, I64, I32, I16, I8, U64, U32, U16, U8 or BOOL)");
    info.dtype = row->type;

    const json& shape = v["shape"];
    bool shapeOk = shape.is_array() && shape.size() <= 16;
    std::uint64_t numel = 1;
    bool overflow = false;
    if (shapeOk) {
      for (const json& d : shape) {
        if (!d.is_number_integer() || (!d.is_number_unsigned() && d.get<std::int64_t>() < 0) ||
            d.get<std::uint64_t>() > (std::uint64_t{1} << 62)) {
          shapeOk = false;
          break;
        }
        std::uint64_t dim = d.get<std::uint64_t>();
        info.shape.push_back(static_cast<std::int64_t>(dim));
        if (__builtin_mul_overflow(numel, dim, &numel)) overflow = true;
      }
    }
    if (!shapeOk)
      throw Error(where + ": shape: expected an array of at most 16 non-negative integers, got " + show(shape));

    const json& off = v["data_offsets"];
    if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() || !off[1].is_number_unsigned() ||
        off[0].get<std::uint64_t>() > off[1].get<std::uint64_t>())
      throw Error(where + ": data_offsets: expected [begin, end] with 0 <= begin <= end, got " + show(off));
    info.begin = off[0].get<std::uint64_t>();
    info.end = off[1].get<std::uint64_t>();
    const std::uint64_t have = info.end - info.begin;
    std::uint64_t need = 0;
    if (overflow || __builtin_mul_overflow(numel, row->size, &need) ||
        need > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
      throw Error(where + ": shape " + ir::shapeStr(info.shape) + " of " + row->name + " overflows 64 bits");
    if (have != need)
      throw Error(where + ": data_offsets " + rangeStr(info.begin, info.end) + " hold " + std::to_string(have) +
                  " bytes, shape " + ir::shapeStr(info.shape) + " of " + row->name + " needs " + std::to_string(need));
    if (info.end > dataSize)
      throw Error(where + ": data_offsets " + rangeStr(info.begin, info.end) + " run past the data section (" +
                  std::to_string(dataSize) + " bytes)");
    infos_.emplace(name, std::move(info));
  }

  // Overlaps: sorted by begin, each non-empty range must start at or after the
  // furthest end seen so far.
  std::vector<const TensorInfo*> sorted;
  for (const auto& [name, info] : infos_)
    if (info.end > info.begin) sorted.push_back(&info);
  std::sort(sorted.begin(), sorted.end(), [](const TensorInfo* a, const TensorInfo* b) {
    return a->begin != b->begin ? a->begin < b->begin : a->name < b->name;
  });
  const TensorInfo* furthest = nullptr;
  for (const TensorInfo* t : sorted) {
    if (furthest && t->begin < furthest->end)
      throw Error(p + ": tensors " + inQuotes(furthest->name) + " " + rangeStr(furthest->begin, furthest->end) +
                  " and " + inQuotes(t->name) + " " + rangeStr(t->begin, t->end) + " overlap");
    if (!furthest || t->end > furthest->end) furthest = t;
  }
}

std::vector<std::string> SafetensorsFile::names() const {
  std::vector<std::string> out;
  for (const auto& [name, info] : infos_) out.push_back(name);
  return out;
}

const TensorInfo& SafetensorsFile::info(const std::string& name) const {
  auto it = infos_.find(name);
  if (it == infos_.end()) throw Error(path_ + ": no tensor " + inQuotes(name));
  return it->second;
}

const std::byte* SafetensorsFile::bytes(const std::string& name) const { return base_ + dataStart_ + info(name).begin; }

ir::Tensor SafetensorsFile::view(const ir::TensorType& type, const std::byte* src) const {
  if (mapped_) return ir::Tensor::fileView(type, src, owner_);
  return ir::Tensor(type, const_cast<std::byte*>(src), owner_);
}

ir::Tensor SafetensorsFile::toF32(const std::string& name, const ConvertOptions& options) const {
  const TensorInfo& ti = info(name);
  const std::byte* src = bytes(name);
  const auto n = static_cast<std::size_t>(ti.numel());
  ir::TensorType type{ir::DType::F32, ti.shape};
  ir::Tensor out;
  bool narrowed = false;  // F64 values may overflow f32
  switch (ti.dtype) {
    case StDType::F32:
      if (reinterpret_cast<std::uintptr_t>(src) % alignof(float) == 0) {
        out = view(type, src);
      } else {
        out = ir::Tensor::zeros(type);
        if (n) std::memcpy(out.raw(), src, n * 4);
      }
      break;
    case StDType::F16:
      out = ir::Tensor::zeros(type);
      for (std::size_t i = 0; i < n; ++i) out.data<float>()[i] = halfToFloat(load<std::uint16_t>(src + 2 * i));
      break;
    case StDType::BF16:
      out = ir::Tensor::zeros(type);
      for (std::size_t i = 0; i < n; ++i)
        out.data<float>()[i] = std::bit_cast<float>(std::uint32_t{load<std::uint16_t>(src + 2 * i)} << 16);
      break;
    case StDType::F64:
      out = ir::Tensor::zeros(type);
      narrowed = true;
      for (std::size_t i = 0; i < n; ++i) out.data<float>()[i] = static_cast<float>(load<double>(src + 8 * i));
      break;
    default:
      throw Error(path_ + ": tensor " + inQuotes(name) + ": dtype " + stDTypeName(ti.dtype) +
                  " cannot be used as f32 weights (expected F32, F16, BF16 or F64)");
  }
  if (narrowed) {
    checkFinite(path_, name, out, options, [src](std::size_t i) { return std::isfinite(load<double>(src + 8 * i)); });
  } else {
    checkFinite(path_, name, out, options);
  }
  return out;
}

ir::Tensor SafetensorsFile::toI64(const std::string& name) const {
  const TensorInfo& ti = info(name);
  const std::byte* src = bytes(name);
  const auto n = static_cast<std::size_t>(ti.numel());
  ir::TensorType type{ir::DType::I64, ti.shape};
  if (ti.dtype == StDType::I64 && reinterpret_cast<std::uintptr_t>(src) % alignof(std::int64_t) == 0)
    return view(type, src);
  ir::Tensor out = ir::Tensor::zeros(type);
  std::int64_t* dst = out.data<std::int64_t>();
  for (std::size_t i = 0; i < n; ++i) {
    switch (ti.dtype) {
      case StDType::I64:
        dst[i] = load<std::int64_t>(src + 8 * i);
        break;
      case StDType::I32:
        dst[i] = load<std::int32_t>(src + 4 * i);
        break;
      case StDType::I16:
        dst[i] = load<std::int16_t>(src + 2 * i);
        break;
      case StDType::I8:
        dst[i] = load<std::int8_t>(src + i);
        break;
      case StDType::U32:
        dst[i] = load<std::uint32_t>(src + 4 * i);
        break;
      case StDType::U16:
        dst[i] = load<std::uint16_t>(src + 2 * i);
        break;
      case StDType::U8:
        dst[i] = load<std::uint8_t>(src + i);
        break;
      case StDType::U64: {
        std::uint64_t u = load<std::uint64_t>(src + 8 * i);
        if (u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
          throw Error(path_ + ": tensor " + inQuotes(name) + ": element " + std::to_string(i) + " (" +
                      std::to_string(u) + ") does not fit in i64");
        dst[i] = static_cast<std::int64_t>(u);
        break;
      }
      default:
        throw Error(path_ + ": tensor " + inQuotes(name) + ": dtype " + stDTypeName(ti.dtype) +
                    " cannot be read as integers (expected I64, I32, I16, I8, U64, U32, U16 or U8)");
    }
  }
  return out;
}

// ---------------------------------------------------------------- writer

std::vector<std::byte> serializeSafetensors(const std::vector<std::pair<std::string, ir::Tensor>>& tensors,
                                            const std::map<std::string, std::string>& metadata) {
  std::string header = headerFor(tensors, metadata);
  std::size_t total = 8 + header.size();
  for (const auto& [name, t] : tensors) total += t.bytes();
  std::vector<std::byte> out(total);
  auto prefix = lengthPrefix(header.size());
  std::memcpy(out.data(), prefix.data(), 8);
  std::memcpy(out.data() + 8, header.data(), header.size());
  std::size_t at = 8 + header.size();
  for (const auto& [name, t] : tensors) {
    if (t.bytes()) std::memcpy(out.data() + at, t.raw(), t.bytes());
    at += t.bytes();
  }
  return out;
}

void writeSafetensors(const std::string& path, const std::vector<std::pair<std::string, ir::Tensor>>& tensors,
                      const std::map<std::string, std::string>& metadata) {
  std::string header = headerFor(tensors, metadata);
  AtomicFile file(path, 0644);
  auto prefix = lengthPrefix(header.size());
  file.write(prefix.data(), prefix.size());
  file.write(header.data(), header.size());
  for (const auto& [name, t] : tensors)
    if (t.bytes()) file.write(t.raw(), t.bytes());
  file.commit();
}

}  // namespace txl::frontend
