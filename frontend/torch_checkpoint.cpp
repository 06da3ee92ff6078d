// frontend/torch_checkpoint.cpp - torch.save files read without running pickle code.
//
// Algorithm:
//   1. Map the file read-only (or take the caller's bytes) and tell the two
//      containers apart: a zip starts with "PK\3\4"; the legacy format with
//      the pickle of its magic number.
//   2. Zip: find the end-of-central-directory record (and the zip64 one that
//      torch always writes), read every central-directory entry and its local
//      header; each entry must be stored (method 0), not encrypted, with the
//      same name, method and sizes in both headers, its data inside the file
//      and before the central directory, no two entries overlapping, no name
//      twice. The top folder is the one holding data.pkl; storages are the
//      entries <top>/data/<key>, read in place; CRC-32 is checked for every
//      entry that is read.
//      Legacy: the magic number (LONG1 0x1950a86a20f9469cfc6c), protocol
//      1001, sys_info (little_endian must be true), the object pickle, the
//      storage keys; then per key an 8-byte element count and the elements.
//   3. Run the object pickle with the torch allow-list (pickle.h). Persistent
//      ids ("storage", torch.<Kind>Storage, key, location, numel[, view]) are
//      checked and registered; a key seen twice must name the same storage.
//   4. Collect the tensors: a state dict's entries in order, or, for a whole
//      nn.Module, the walk over _parameters, _buffers (persistent ones) and
//      _modules from the root, names joined with "." (the order of
//      state_dict()), recording each module's class and plain attributes.
//   5. Check every view before any memory is taken: float dtype, element
//      count without overflow, offset + sum((size - 1) * stride) inside the
//      storage, the storage's bytes present; a view repeating an earlier one
//      (same storage, offset, size, stride) is a tie and costs nothing; the
//      total is bounded by twice the file size (F16 widened) and a hard cap.
//   6. Materialize: contiguous F32 from a mapped file is a view of the
//      mapping; everything else is gathered (strides honoured) and widened.
#include "frontend/torch_checkpoint.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <memory>
#include <optional>
#include <set>
#include <string_view>
#include <unordered_map>

#include "frontend/pickle.h"
#include "frontend/input_file.h"
#include "ir/check.h"

namespace txl::frontend {

static_assert(std::endian::native == std::endian::little, "torch storages are read as little-endian");

using nlohmann::json;
using pickle::Kind;
using pickle::Value;

namespace {

constexpr std::uint64_t kHardCapBytes = std::uint64_t{64} << 30;  // f32 output of one checkpoint
constexpr std::size_t kMaxRank = 16;
constexpr std::size_t kMaxModuleDepth = 64;
constexpr std::size_t kMaxModuleVisits = 1u << 16;
// The walk over a whole-model pickle's modules builds names, views and
// attribute values for every path to a module; the memo lets one small
// object be reached along very many paths, so what the walk builds is
// budgeted in units (one value, view or module visit, or 16 bytes of a name
// or string): kWalkUnitsPerByte per byte of the file, at most kMaxWalkUnits.
constexpr std::size_t kWalkUnitsPerByte = 8;
constexpr std::size_t kMaxWalkUnits = std::size_t(1) << 23;

std::string inQuotes(const std::string& s) { return quote(s); }

// ---------------------------------------------------------------- the file image

struct Image {
  std::string name;
  std::span<const std::byte> bytes;
  std::shared_ptr<void> owner;  // the mapping (null for caller's bytes)
  bool mapped = false;
};

Image mapFile(const std::string& path) {
  MappedFile m = mapInputFile(path, "a PyTorch checkpoint");
  Image img;
  img.name = path;
  img.mapped = m.owner != nullptr;
  img.bytes = m.bytes;
  img.owner = std::move(m.owner);
  return img;
}

std::uint64_t le(const std::byte* p, int n) {
  std::uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | std::to_integer<std::uint64_t>(p[i]);
  return v;
}

// CRC-32 (ISO-HDLC, zip's), slicing by 8.
struct CrcTables {
  std::array<std::array<std::uint32_t, 256>, 8> t{};
  CrcTables() {
    for (std::uint32_t i = 0; i < 256; ++i) {
      std::uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[0][i] = c;
    }
    for (std::uint32_t i = 0; i < 256; ++i)
      for (int s = 1; s < 8; ++s) t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xff];
  }
};

std::uint32_t crc32(std::span<const std::byte> data) {
  static const CrcTables tables;
  const auto& t = tables.t;
  std::uint32_t c = 0xFFFFFFFFu;
  const std::byte* p = data.data();
  std::size_t n = data.size();
  while (n >= 8) {
    std::uint32_t a = static_cast<std::uint32_t>(le(p, 4)) ^ c;
    std::uint32_t b = static_cast<std::uint32_t>(le(p + 4, 4));
    c = t[7][a & 0xff] ^ t[6][(a >> 8) & 0xff] ^ t[5][(a >> 16) & 0xff] ^ t[4][a >> 24] ^ t[3][b & 0xff] ^
        t[2][(b >> 8) & 0xff] ^ t[1][(b >> 16) & 0xff] ^ t[0][b >> 24];
    p += 8;
    n -= 8;
  }
  while (n--) c = t[0][(c ^ std::to_integer<std::uint32_t>(*p++)) & 0xff] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

// ---------------------------------------------------------------- zip

struct ZipEntry {
  std::string name;
  std::uint64_t header = 0;  // local header offset
  std::uint64_t data = 0;    // data offset
  std::uint64_t size = 0;
  std::uint32_t crc = 0;
  mutable bool crcChecked = false;
};

class ZipReader {
 public:
  explicit ZipReader(const Image& img) : img_(img) { read(); }

  const ZipEntry* find(const std::string& name) const {
    auto it = byName_.find(name);
    return it == byName_.end() ? nullptr : &entries_[it->second];
  }
  const std::vector<ZipEntry>& entries() const { return entries_; }

  std::span<const std::byte> data(const ZipEntry& e) const {
    std::span<const std::byte> d = img_.bytes.subspan(e.data, e.size);
    if (!e.crcChecked) {
      std::uint32_t c = crc32(d);
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
      c = e.crc;  // scripts/fuzz.sh: let mutated pickles and storages past the checksum
#endif
      if (c != e.crc)
        throw Error(img_.name + ": zip entry " + inQuotes(e.name) + ": CRC-32 " + hex(c) +
                    " of its data, the header says " + hex(e.crc));
      e.crcChecked = true;
    }
    return d;
  }

 private:
  static std::string hex(std::uint32_t v) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "%08x", v);
    return buf;
  }
  [[noreturn]] void fail(const std::string& m) const { throw Error(img_.name + ": " + m); }
  const std::byte* at(std::uint64_t offset, std::uint64_t n, const std::string& what) const {
    if (offset > img_.bytes.size() || n > img_.bytes.size() - offset)
      fail(what + " at offset " + std::to_string(offset) + " (" + std::to_string(n) +
           " bytes) runs past the end of the file (" + std::to_string(img_.bytes.size()) + " bytes)");
    return img_.bytes.data() + offset;
  }
  void read();

  const Image& img_;
  std::vector<ZipEntry> entries_;
  std::unordered_map<std::string, std::size_t> byName_;
};

void ZipReader::read() {
  const std::uint64_t size = img_.bytes.size();
  const std::byte* b = img_.bytes.data();
  if (size < 22) fail("file of " + std::to_string(size) + " bytes is too short for a zip archive");
  // 1. End of central directory: the last signature whose comment ends the file.
  std::uint64_t eocd = std::numeric_limits<std::uint64_t>::max();
  const std::uint64_t lowest = size - 22 > 65535 ? size - 22 - 65535 : 0;
  for (std::uint64_t p = size - 22 + 1; p-- > lowest;) {
    if (le(b + p, 4) == 0x06054b50 && le(b + p + 20, 2) == size - p - 22) {
      eocd = p;
      break;
    }
  }
  if (eocd == std::numeric_limits<std::uint64_t>::max())
    fail("no zip end-of-central-directory record (not a zip archive, or truncated)");
  std::uint64_t disk = le(b + eocd + 4, 2), cdDisk = le(b + eocd + 6, 2);
  std::uint64_t entriesOnDisk = le(b + eocd + 8, 2), count = le(b + eocd + 10, 2);
  std::uint64_t cdSize = le(b + eocd + 12, 4), cdOffset = le(b + eocd + 16, 4);
  std::uint64_t cdLimit = eocd;  // the central directory ends before this
  // 2. Zip64: a locator right before the record points at the zip64 record.
  if (eocd >= 20 && le(b + eocd - 20, 4) == 0x07064b50) {
    const std::byte* loc = b + eocd - 20;
    if (le(loc + 4, 4) != 0 || le(loc + 16, 4) != 1)
      fail("zip64 locator: a multi-disk archive (disk " + std::to_string(le(loc + 4, 4)) + " of " +
           std::to_string(le(loc + 16, 4)) + "); expected one disk");
    std::uint64_t z = le(loc + 8, 8);
    if (z > eocd - 20 || eocd - 20 - z < 56)
      fail("zip64 end-of-central-directory offset " + std::to_string(z) + " is not before its locator (offset " +
           std::to_string(eocd - 20) + ")");
    const std::byte* r = b + z;
    if (le(r, 4) != 0x06064b50) fail("no zip64 end-of-central-directory record at offset " + std::to_string(z));
    auto check = [&](std::uint64_t classic, std::uint64_t wide, std::uint64_t marker, const char* what) {
      if (classic != marker && classic != wide)
        fail(std::string("zip64 record's ") + what + " " + std::to_string(wide) +
             " disagrees with the classic record's " + std::to_string(classic));
      return wide;
    };
    disk = le(r + 16, 4);
    cdDisk = le(r + 20, 4);
    entriesOnDisk = check(entriesOnDisk, le(r + 24, 8), 0xFFFF, "entries on disk");
    count = check(count, le(r + 32, 8), 0xFFFF, "entry count");
    cdSize = check(cdSize, le(r + 40, 8), 0xFFFFFFFF, "central directory size");
    cdOffset = check(cdOffset, le(r + 48, 8), 0xFFFFFFFF, "central directory offset");
    cdLimit = z;
  } else if (count == 0xFFFF || cdSize == 0xFFFFFFFF || cdOffset == 0xFFFFFFFF) {
    fail("zip end-of-central-directory record needs a zip64 record, and none precedes it");
  }
  if (disk != 0 || cdDisk != 0 || entriesOnDisk != count)
    fail("a multi-disk zip archive (disk " + std::to_string(disk) + ", " + std::to_string(entriesOnDisk) + " of " +
         std::to_string(count) + " entries on it); expected one disk");
  if (cdOffset > cdLimit || cdSize > cdLimit - cdOffset)
    fail("zip central directory [" + std::to_string(cdOffset) + ", +" + std::to_string(cdSize) +
         ") runs past its end record at offset " + std::to_string(cdLimit));
  if (count > cdSize / 46)
    fail("zip central directory of " + std::to_string(cdSize) + " bytes cannot hold " + std::to_string(count) +
         " entries");

  // 3. Central directory entries and their local headers.
  std::uint64_t p = cdOffset;
  const std::uint64_t cdEnd = cdOffset + cdSize;
  entries_.reserve(static_cast<std::size_t>(count));
  for (std::uint64_t k = 0; k < count; ++k) {
    const std::string where = "zip central directory entry " + std::to_string(k);
    if (cdEnd - p < 46) fail(where + " runs past the central directory");
    const std::byte* c = b + p;
    if (le(c, 4) != 0x02014b50) fail(where + ": bad signature at offset " + std::to_string(p));
    const std::uint64_t flags = le(c + 8, 2), method = le(c + 10, 2), crc = le(c + 16, 4);
    std::uint64_t csize = le(c + 20, 4), usize = le(c + 24, 4);
    const std::uint64_t nameLen = le(c + 28, 2), extraLen = le(c + 30, 2), commentLen = le(c + 32, 2);
    std::uint64_t diskStart = le(c + 34, 2), local = le(c + 42, 4);
    if (cdEnd - p - 46 < nameLen + extraLen + commentLen)
      fail(where + ": name and extra fields run past the central directory");
    ZipEntry e;
    e.name.assign(reinterpret_cast<const char*>(c + 46), static_cast<std::size_t>(nameLen));
    const std::string entry = "zip entry " + inQuotes(e.name);
    if (e.name.find('\0') != std::string::npos) fail(entry + ": a NUL in the name");
    // Zip64 extra field: the 64-bit values of the fields that hold their marker, in this order.
    for (std::uint64_t x = 0; x + 4 <= extraLen;) {
      const std::byte* f = c + 46 + nameLen + x;
      const std::uint64_t id = le(f, 2), len = le(f + 2, 2);
      if (x + 4 + len > extraLen) fail(entry + ": extra field runs past its entry");
      if (id == 0x0001) {
        std::uint64_t q = 0;
        auto wide = [&](std::uint64_t& field, std::uint64_t marker, int width) {
          if (field != marker) return;
          if (q + static_cast<std::uint64_t>(width) > len) fail(entry + ": zip64 extra field too short");
          field = le(f + 4 + q, width);
          q += static_cast<std::uint64_t>(width);
        };
        wide(usize, 0xFFFFFFFF, 8);
        wide(csize, 0xFFFFFFFF, 8);
        wide(local, 0xFFFFFFFF, 8);
        wide(diskStart, 0xFFFF, 4);
      }
      x += 4 + len;
    }
    if (flags & 1) fail(entry + ": encrypted; expected a plain stored entry");
    if (method != 0)
      fail(entry + ": compressed (method " + std::to_string(method) + "); torch.save stores entries (method 0)");
    if (csize != usize)
      fail(entry + ": stored with " + std::to_string(csize) + " bytes but " + std::to_string(usize) + " uncompressed");
    if (diskStart != 0) fail(entry + ": on disk " + std::to_string(diskStart) + "; expected one disk");
    // Local header.
    const std::byte* l = at(local, 30, entry + ": local header");
    if (le(l, 4) != 0x04034b50) fail(entry + ": no local header at offset " + std::to_string(local));
    const std::uint64_t lflags = le(l + 6, 2), lmethod = le(l + 8, 2), lcrc = le(l + 14, 4);
    std::uint64_t lcsize = le(l + 18, 4), lusize = le(l + 22, 4);
    const std::uint64_t lnameLen = le(l + 26, 2), lextraLen = le(l + 28, 2);
    const std::byte* lname = at(local + 30, lnameLen + lextraLen, entry + ": local header name");
    if (lnameLen != nameLen || std::memcmp(lname, c + 46, static_cast<std::size_t>(nameLen)) != 0)
      fail(entry + ": the local header names another entry");
    if (lmethod != method)
      fail(entry + ": local header method " + std::to_string(lmethod) + ", central " + std::to_string(method));
    for (std::uint64_t x = 0; x + 4 <= lextraLen;) {
      const std::byte* f = lname + lnameLen + x;
      const std::uint64_t id = le(f, 2), len = le(f + 2, 2);
      if (x + 4 + len > lextraLen) fail(entry + ": local extra field runs past its header");
      if (id == 0x0001 && len >= 16 && lusize == 0xFFFFFFFF && lcsize == 0xFFFFFFFF) {
        lusize = le(f + 4, 8);
        lcsize = le(f + 12, 8);
      }
      x += 4 + len;
    }
    const bool descriptor = (lflags & 8) != 0;  // sizes and CRC follow the data; the local ones may be 0
    const bool zeroes = lcrc == 0 && lcsize == 0 && lusize == 0;
    if (!(descriptor && zeroes) && (lcrc != crc || lcsize != csize || lusize != usize))
      fail(entry + ": local header says " + std::to_string(lcsize) + " bytes (CRC " +
           hex(static_cast<std::uint32_t>(lcrc)) + "), the central directory " + std::to_string(csize) +
           " bytes (CRC " + hex(static_cast<std::uint32_t>(crc)) + ")");
    e.header = local;
    e.data = local + 30 + lnameLen + lextraLen;
    e.size = csize;
    e.crc = static_cast<std::uint32_t>(crc);
    if (e.data > cdOffset || e.size > cdOffset - e.data)
      fail(entry + ": data [" + std::to_string(e.data) + ", +" + std::to_string(e.size) +
           ") runs past the start of the central directory (offset " + std::to_string(cdOffset) + ")");
    if (!byName_.emplace(e.name, entries_.size()).second) fail(entry + ": appears twice");
    entries_.push_back(std::move(e));
    p += 46 + nameLen + extraLen + commentLen;
  }
  // 4. No two entries overlap (header to end of data).
  std::vector<const ZipEntry*> sorted;
  for (const ZipEntry& e : entries_) sorted.push_back(&e);
  std::sort(sorted.begin(), sorted.end(), [](const ZipEntry* x, const ZipEntry* y) { return x->header < y->header; });
  for (std::size_t k = 1; k < sorted.size(); ++k)
    if (sorted[k]->header < sorted[k - 1]->data + sorted[k - 1]->size)
      fail("zip entries " + inQuotes(sorted[k - 1]->name) + " and " + inQuotes(sorted[k]->name) + " overlap");
}

// ---------------------------------------------------------------- the allow-lists

struct StorageKind {
  const char* cls;    // "torch.FloatStorage"
  const char* dtype;  // "F32"
  std::size_t size;
  bool isFloat;
  const char* what;  // for messages
};
constexpr StorageKind kStorages[] = {
    {"torch.FloatStorage", "F32", 4, true, "float32"},
    {"torch.HalfStorage", "F16", 2, true, "float16"},
    {"torch.BFloat16Storage", "BF16", 2, true, "bfloat16"},
    {"torch.DoubleStorage", "F64", 8, true, "float64"},
    {"torch.LongStorage", "I64", 8, false, "int64"},
    {"torch.IntStorage", "I32", 4, false, "int32"},
    {"torch.ShortStorage", "I16", 2, false, "int16"},
    {"torch.CharStorage", "I8", 1, false, "int8"},
    {"torch.ByteStorage", "U8", 1, false, "uint8"},
    {"torch.BoolStorage", "BOOL", 1, false, "bool"},
    {"torch.ComplexFloatStorage", "C64", 8, false, "complex64"},
    {"torch.ComplexDoubleStorage", "C128", 16, false, "complex128"},
};

const StorageKind* storageKind(const std::string& cls) {
  for (const auto& k : kStorages)
    if (cls == k.cls) return &k;
  return nullptr;
}

// Globals a torch checkpoint may name: containers, the tensor rebuild
// functions, the storage classes, and the module classes of a MemTransformerLM.
const pickle::Policy& torchPolicyBase() {
  static const pickle::Policy policy = [] {
    pickle::Policy p;
    using R = pickle::GlobalRule;
    p.rules = {
        {"collections.OrderedDict", R::Dict},
        {"collections.Counter", R::Dict},
        {"builtins.set", R::Set},
        {"__builtin__.set", R::Set},
        {"torch._utils._rebuild_tensor", R::Call},
        {"torch._utils._rebuild_tensor_v2", R::Call},
        {"torch._utils._rebuild_parameter", R::Call},
        {"torch._utils._rebuild_parameter_with_state", R::Call},
        {"torch.nn.parameter.Parameter",
         R::Call},  // torch 0.4's Parameter.__reduce_ex__: (Parameter, (data, requires_grad))
        {"mem_transformer.*", R::Class},
        {"proj_adaptive_softmax.*", R::Class},
        {"utils.proj_adaptive_softmax.*", R::Class},
        {"log_uniform_sampler.*", R::Class},
        {"utils.log_uniform_sampler.*", R::Class},
        {"torch.nn.modules.*", R::Class},
    };
    for (const auto& k : kStorages) p.rules.emplace(k.cls, R::Name);
    p.allowedSummary =
        "a checkpoint may only name collections.OrderedDict, torch._utils._rebuild_tensor_v2, "
        "torch._utils._rebuild_parameter, torch.<Kind>Storage, builtins.set and the module classes of a "
        "MemTransformerLM";
    return p;
  }();
  return policy;
}

// Members of a tokenizer's __dict__ that txlc does not need: their objects
// become opaque placeholders, never built or looked into.
const pickle::Policy& vocabularyPolicyBase() {
  static const pickle::Policy policy = [] {
    pickle::Policy p;
    using R = pickle::GlobalRule;
    p.rules = {
        {"collections.OrderedDict", R::Dict},
        {"collections.Counter", R::Dict},
        {"builtins.set", R::Set},
        {"__builtin__.set", R::Set},
        {"builtins.frozenset", R::Set},
        {"__builtin__.frozenset", R::Set},
        {"sacremoses.*", R::Skip},
        {"re._compile", R::Skip},
        {"regex._compile", R::Skip},
        {"tokenizers.AddedToken", R::Skip},
        {"transformers.tokenization_utils.Trie", R::Skip},
        {"transformers.tokenization_utils.AddedToken", R::Skip},
        {"transformers.tokenization_utils_base.AddedToken", R::Skip},
    };
    p.allowedSummary =
        "a vocabulary may only name collections.Counter, collections.OrderedDict, builtins.set, and the "
        "skipped sacremoses, re._compile, AddedToken and Trie members of a tokenizer";
    return p;
  }();
  return policy;
}

// ---------------------------------------------------------------- storages and views

struct Storage {
  std::string key;
  const StorageKind* kind = nullptr;
  std::uint64_t numel = 0;
  std::span<const std::byte> data;  // set once the container is read
  bool present = false;
  std::string where;  // "zip entry \"x/data/0\"" or "legacy storage record at offset N"
};

struct View {
  std::string name;
  Storage* storage = nullptr;
  std::uint64_t offset = 0;
  ir::Shape sizes;
  std::vector<std::uint64_t> strides;
  const Value* identity = nullptr;  // the pickled object (a parameter reached twice is one)
};

class Reader {
 public:
  Reader(Image img) : img_(std::move(img)) {}
  TorchCheckpoint read();

 private:
  [[noreturn]] void fail(const std::string& m) const { throw Error(img_.name + ": " + m); }

  pickle::Policy policy(bool legacy);
  Value* persistent(Value* pid, std::size_t offset, bool legacy);
  std::int64_t intOf(const Value* v, const std::string& where, const char* what) const;
  View viewOf(const Value* v, const std::string& name, int depth = 0);
  void collectStateDict(const Value* root);
  void walkModule(const Value* module, const std::string& path, std::size_t depth, std::set<const Value*>& onPath);
  void readZip();
  void readLegacy();
  void materialize();

  Image img_;
  TorchCheckpoint out_;
  std::string pickleName_;  // "archive/data.pkl" or "the object pickle"
  std::map<std::string, Storage> storages_;
  std::vector<View> views_;
  pickle::Pickle object_;
  std::optional<ZipReader> zip_;
  std::string top_;
  std::size_t moduleVisits_ = 0;
  std::size_t walkUnits_ = 0;  // spent by walkModule
  void spendWalk(std::size_t units, const std::string& label);
};

void Reader::spendWalk(std::size_t units, const std::string& label) {
  const std::size_t budget = std::min(kMaxWalkUnits, kWalkUnitsPerByte * img_.bytes.size() + (std::size_t(1) << 16));
  if (units > budget || walkUnits_ > budget - units)
    fail(pickleName_ + ": " + label + ": the module walk needs more than " + std::to_string(budget) +
         " units (values, views, names), expected at most " + std::to_string(kWalkUnitsPerByte) +
         " a byte of the file: the memo makes one object fan out along too many paths");
  walkUnits_ += units;
}

pickle::Policy Reader::policy(bool legacy) {
  pickle::Policy p = torchPolicyBase();
  p.persistentLoad = [this, legacy](Value* pid, std::size_t offset) { return persistent(pid, offset, legacy); };
  return p;
}

std::int64_t Reader::intOf(const Value* v, const std::string& where, const char* what) const {
  if (v->kind != Kind::Int || v->big) fail(where + ": " + what + ": expected an integer, got " + pickle::describe(v));
  return v->i;
}

// A persistent id: ("storage", torch.<Kind>Storage, key, location, numel) in the
// zip format, with a sixth field (a view of another storage; None) in the
// legacy one; ("module", cls, source file, source) for a class in a legacy
// whole-model pickle.
Value* Reader::persistent(Value* pidValue, std::size_t offset, bool legacy) {
  const Value* pid = pidValue->args;
  const std::string where = pickleName_ + ": offset " + std::to_string(offset) + ": BINPERSID";
  if (pid->kind != Kind::Tuple || pid->items.empty() || pid->items[0]->kind != Kind::String)
    fail(where + ": expected a (\"storage\", ...) tuple, got " + pickle::describe(pid));
  const std::string& type = pid->items[0]->s;
  if (type == "module" && legacy && pid->items.size() >= 2 && pid->items[1]->kind == Kind::Global) {
    pickle::GlobalRule rule;
    if (!pickle::findRule(torchPolicyBase(), pid->items[1]->s, &rule) || rule != pickle::GlobalRule::Class)
      fail(where + ": module class " + oneLine(pid->items[1]->s) + " is not allowed");
    return pid->items[1];
  }
  if (type != "storage") fail(where + ": persistent id of type " + inQuotes(type) + "; expected \"storage\"");
  const std::size_t fields = legacy ? 6 : 5;
  if (pid->items.size() != fields)
    fail(where + ": a storage id of " + std::to_string(pid->items.size()) + " fields; expected " +
         std::to_string(fields) + " (\"storage\", class, key, location, numel" + (legacy ? ", view)" : ")"));
  const Value* cls = pid->items[1];
  const Value* key = pid->items[2];
  const Value* numel = pid->items[4];
  if (cls->kind != Kind::Global) fail(where + ": expected a storage class, got " + pickle::describe(cls));
  const StorageKind* kind = storageKind(cls->s);
  if (!kind) fail(where + ": " + oneLine(cls->s) + " is not a storage class");
  if (key->kind != Kind::String || key->s.empty() || key->s.size() > 256 || key->s.find('/') != std::string::npos ||
      key->s.find('\0') != std::string::npos)
    fail(where + ": expected a storage key (a short string without \"/\"), got " + pickle::describe(key));
  if (pid->items[3]->kind != Kind::String)
    fail(where + ": expected a location string, got " + pickle::describe(pid->items[3]));
  const std::int64_t n = intOf(numel, where, "element count");
  if (n < 0) fail(where + ": storage " + inQuotes(key->s) + ": negative element count " + std::to_string(n));
  if (legacy && pid->items[5]->kind != Kind::None)
    fail(where + ": storage " + inQuotes(key->s) +
         " is a view of another storage (a pre-1.0 form), which is not supported");
  auto [it, fresh] = storages_.try_emplace(key->s);
  Storage& s = it->second;
  if (fresh) {
    s.key = key->s;
    s.kind = kind;
    s.numel = static_cast<std::uint64_t>(n);
  } else if (s.kind != kind || s.numel != static_cast<std::uint64_t>(n)) {
    fail(where + ": storage " + inQuotes(key->s) + " named again as " + std::to_string(n) + " " + kind->dtype +
         " elements; first named as " + std::to_string(s.numel) + " " + s.kind->dtype);
  }
  return pidValue;
}

View Reader::viewOf(const Value* v, const std::string& name, int depth) {
  const std::string where = "tensor " + inQuotes(name);
  if (v->kind != Kind::Object || !v->reduced)
    fail(where + ": expected a tensor (torch._utils._rebuild_tensor_v2), got " + pickle::describe(v));
  const Value* args = v->args;
  if (v->cls == "torch._utils._rebuild_parameter" || v->cls == "torch._utils._rebuild_parameter_with_state" ||
      v->cls == "torch.nn.parameter.Parameter") {
    if (depth > 0 || args->items.empty())
      fail(where + ": expected a parameter holding a tensor, got " + pickle::describe(v));
    View view = viewOf(args->items[0], name, depth + 1);
    view.identity = v;
    return view;
  }
  if (v->cls != "torch._utils._rebuild_tensor_v2" && v->cls != "torch._utils._rebuild_tensor")
    fail(where + ": expected a tensor (torch._utils._rebuild_tensor_v2), got " + pickle::describe(v));
  if (args->items.size() < 4)
    fail(where + ": " + oneLine(v->cls) + " with " + std::to_string(args->items.size()) +
         " arguments; expected (storage, offset, size, stride, ...)");
  const Value* pid = args->items[0];
  if (pid->kind != Kind::PersistentId) fail(where + ": expected a storage, got " + pickle::describe(pid));
  View view;
  view.name = name;
  view.identity = v;
  view.storage = &storages_.at(pid->args->items[2]->s);
  const std::int64_t offset = intOf(args->items[1], where, "storage offset");
  if (offset < 0) fail(where + ": negative storage offset " + std::to_string(offset));
  view.offset = static_cast<std::uint64_t>(offset);
  const Value* size = args->items[2];
  const Value* stride = args->items[3];
  if (size->kind != Kind::Tuple || stride->kind != Kind::Tuple || size->items.size() != stride->items.size())
    fail(where + ": expected size and stride tuples of one length, got " + pickle::describe(size) + " and " +
         pickle::describe(stride));
  if (size->items.size() > kMaxRank)
    fail(where + ": rank " + std::to_string(size->items.size()) + " is over the limit of " + std::to_string(kMaxRank));
  for (std::size_t d = 0; d < size->items.size(); ++d) {
    const std::int64_t n = intOf(size->items[d], where, "size");
    const std::int64_t s = intOf(stride->items[d], where, "stride");
    if (n < 0) fail(where + ": negative size " + std::to_string(n) + " in dimension " + std::to_string(d));
    if (s < 0) fail(where + ": negative stride " + std::to_string(s) + " in dimension " + std::to_string(d));
    view.sizes.push_back(n);
    view.strides.push_back(static_cast<std::uint64_t>(s));
  }
  return view;
}

void Reader::collectStateDict(const Value* root) {
  for (const auto& [k, v] : root->entries) {
    if (k->kind != Kind::String) fail(pickleName_ + ": a state dict key that is not a string: " + pickle::describe(k));
    views_.push_back(viewOf(v, k->s));
  }
}

// `budget` counts the values visited: the memo can make a small pickle a
// huge tree (a list of a thousand references to a list of a thousand ...).
std::optional<json> plainJson(const Value* v, int depth, std::size_t& budget, std::size_t& bytes) {
  if (budget == 0) return std::nullopt;
  --budget;
  switch (v->kind) {
    case Kind::None:
      return json(nullptr);
    case Kind::Bool:
      return json(v->b);
    case Kind::Int:
      if (v->big) return std::nullopt;
      return json(v->i);
    case Kind::Float:
      return json(v->f);
    case Kind::String: {
      bytes += v->s.size();
      // Only valid UTF-8 becomes a JSON string.
      json j = v->s;
      try {
        (void)j.dump();
      } catch (const json::exception&) {
        return std::nullopt;
      }
      return j;
    }
    case Kind::List:
    case Kind::Tuple: {
      if (depth >= 8) return std::nullopt;
      json a = json::array();
      for (const Value* item : v->items) {
        auto j = plainJson(item, depth + 1, budget, bytes);
        if (!j) return std::nullopt;
        a.push_back(std::move(*j));
      }
      return a;
    }
    default:
      return std::nullopt;
  }
}

void Reader::walkModule(const Value* module, const std::string& path, std::size_t depth,
                        std::set<const Value*>& onPath) {
  const std::string label = path.empty() ? std::string("the root module") : "module " + inQuotes(path);
  if (depth > kMaxModuleDepth)
    fail(pickleName_ + ": " + label + ": modules nested deeper than " + std::to_string(kMaxModuleDepth));
  if (!onPath.insert(module).second) fail(pickleName_ + ": " + label + ": a module that contains itself");
  // A module may be reached along two paths (shared, as state_dict() lists it
  // twice); the memo can make that exponential, so the visits are counted.
  if (++moduleVisits_ > kMaxModuleVisits)
    fail(pickleName_ + ": " + label + ": more than " + std::to_string(kMaxModuleVisits) + " modules in the walk");
  const Value* state = module->state;
  if (!state || state->kind != Kind::Dict)
    fail(pickleName_ + ": " + label + " (" + oneLine(module->cls) + "): expected its __dict__ (BUILD state), got " +
         pickle::describe(state));
  spendWalk(1 + (2 * path.size() + module->cls.size()) / 16, label);
  out_.moduleClasses[path] = module->cls;
  json attributes = json::object();
  for (const auto& [k, v] : state->entries) {
    if (k->kind != Kind::String || k->s.empty() || k->s[0] == '_') continue;
    constexpr std::size_t kValues = 4096;  // values per attribute
    std::size_t budget = kValues, bytes = 0;
    auto j = plainJson(v, 0, budget, bytes);
    spendWalk(1 + (kValues - budget) + (bytes + k->s.size()) / 16, label);
    if (j) attributes[k->s] = std::move(*j);
  }
  out_.moduleAttributes[path] = std::move(attributes);
  const std::string prefix = path.empty() ? "" : path + ".";
  std::set<std::string> nonPersistent;
  if (const Value* np = state->get("_non_persistent_buffers_set"); np && np->kind == Kind::Set)
    for (const Value* item : np->items)
      if (item->kind == Kind::String) nonPersistent.insert(item->s);
  for (const char* member : {"_parameters", "_buffers"}) {
    const Value* d = state->get(member);
    if (!d) continue;
    if (d->kind != Kind::Dict)
      fail(pickleName_ + ": " + label + ": " + member + " is " + pickle::describe(d) + ", expected a dict");
    for (const auto& [k, v] : d->entries) {
      if (k->kind != Kind::String) fail(pickleName_ + ": " + label + ": " + member + " key " + pickle::describe(k));
      if (v->kind == Kind::None) continue;
      if (std::string(member) == "_buffers" && nonPersistent.contains(k->s)) continue;
      spendWalk(4 + (prefix.size() + k->s.size()) / 16, label);
      views_.push_back(viewOf(v, prefix + k->s));
    }
  }
  if (const Value* d = state->get("_modules")) {
    if (d->kind != Kind::Dict)
      fail(pickleName_ + ": " + label + ": _modules is " + pickle::describe(d) + ", expected a dict");
    for (const auto& [k, v] : d->entries) {
      if (k->kind != Kind::String) fail(pickleName_ + ": " + label + ": _modules key " + pickle::describe(k));
      if (v->kind == Kind::None) continue;
      if (v->kind != Kind::Object || v->reduced)
        fail(pickleName_ + ": module " + inQuotes(prefix + k->s) + ": expected a module object, got " +
             pickle::describe(v));
      walkModule(v, prefix + k->s, depth + 1, onPath);
    }
  }
  onPath.erase(module);
}

void Reader::readZip() {
  out_.format = "zip";
  zip_.emplace(img_);
  const ZipEntry* pkl = nullptr;
  for (const ZipEntry& e : zip_->entries()) {
    const std::size_t slash = e.name.find('/');
    if (slash == std::string::npos || slash == 0 || e.name.substr(slash) != "/data.pkl") continue;
    if (pkl)
      fail("zip entries " + inQuotes(pkl->name) + " and " + inQuotes(e.name) + ": two top folders hold data.pkl");
    pkl = &e;
  }
  if (!pkl) fail("no zip entry <folder>/data.pkl (expected an archive written by torch.save)");
  top_ = pkl->name.substr(0, pkl->name.find('/'));
  if (const ZipEntry* order = zip_->find(top_ + "/byteorder")) {
    auto d = zip_->data(*order);
    std::string s(reinterpret_cast<const char*>(d.data()), std::min<std::size_t>(d.size(), 16));
    if (s != "little")
      fail("zip entry " + inQuotes(order->name) + ": byte order " + inQuotes(s) + "; expected \"little\"");
  }
  pickleName_ = pkl->name;
  object_ = pickle::parse(zip_->data(*pkl), img_.name + ": " + pkl->name, policy(false));
  for (auto& [key, s] : storages_) {
    s.where = "zip entry \"" + oneLine(top_ + "/data/" + key) + "\"";
    if (const ZipEntry* e = zip_->find(top_ + "/data/" + key)) {
      s.present = true;
      s.data = img_.bytes.subspan(e->data, e->size);  // its CRC is checked when a tensor reads it
    }
  }
}

// The five pickles of the legacy format, then the storages.
void Reader::readLegacy() {
  out_.format = "legacy";
  std::size_t at = 0;
  pickle::Policy none;
  auto next = [&](const pickle::Policy& p, const char* what) {
    pickle::Pickle pk = pickle::parse(img_.bytes.subspan(at), img_.name + ": " + what, p, at);
    at += pk.end;
    return pk;
  };
  pickle::Pickle magic = next(none, "magic number");
  static const unsigned char kMagic[] = {0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19};
  if (magic.root->kind != Kind::Int || !magic.root->big || magic.root->s.size() != sizeof kMagic ||
      std::memcmp(magic.root->s.data(), kMagic, sizeof kMagic) != 0)
    fail("magic number: expected 0x1950a86a20f9469cfc6c (a legacy torch.save file), got " +
         pickle::describe(magic.root));
  pickle::Pickle protocol = next(none, "protocol version");
  if (protocol.root->kind != Kind::Int || protocol.root->big || protocol.root->i != 1001)
    fail("protocol version: expected 1001, got " + pickle::describe(protocol.root));
  pickle::Pickle sysInfo = next(none, "sys_info");
  const Value* little = sysInfo.root->get("little_endian");
  if (sysInfo.root->kind != Kind::Dict || !little || little->kind != Kind::Bool || !little->b)
    fail("sys_info: expected little_endian True, got " + pickle::describe(little ? little : sysInfo.root));
  pickleName_ = "the object pickle";
  object_ = next(policy(true), "object pickle");
  pickle::Pickle keys = next(none, "storage keys");
  if (keys.root->kind != Kind::List) fail("storage keys: expected a list, got " + pickle::describe(keys.root));
  std::set<std::string> listed;
  for (const Value* k : keys.root->items) {
    if (k->kind != Kind::String) fail("storage keys: expected strings, got " + pickle::describe(k));
    auto it = storages_.find(k->s);
    if (it == storages_.end())
      fail("storage keys: " + inQuotes(k->s) + " is named by no tensor (its element size is unknown)");
    if (!listed.insert(k->s).second) fail("storage keys: " + inQuotes(k->s) + " appears twice");
    Storage& s = it->second;
    s.where = "legacy storage record " + inQuotes(k->s) + " at offset " + std::to_string(at);
    if (img_.bytes.size() - at < 8)
      fail(s.where + ": the 8-byte element count runs past the end of the file (" + std::to_string(img_.bytes.size()) +
           " bytes)");
    const std::uint64_t count = le(img_.bytes.data() + at, 8);
    at += 8;
    if (count != s.numel)
      fail(s.where + ": holds " + std::to_string(count) + " elements; its persistent id says " +
           std::to_string(s.numel));
    const std::uint64_t left = img_.bytes.size() - at;
    if (count > left / s.kind->size)
      fail(s.where + ": " + std::to_string(count) + " " + s.kind->dtype + " elements need " +
           (count > std::numeric_limits<std::uint64_t>::max() / s.kind->size ? std::string("more than 2^64")
                                                                             : std::to_string(count * s.kind->size)) +
           " bytes, " + std::to_string(left) + " are left in the file");
    s.data = img_.bytes.subspan(at, static_cast<std::size_t>(count * s.kind->size));
    s.present = true;
    at += static_cast<std::size_t>(count * s.kind->size);
  }
}

bool isContiguous(const View& v) {
  std::uint64_t expect = 1;
  for (std::size_t d = v.sizes.size(); d-- > 0;) {
    if (v.sizes[d] != 1 && v.strides[d] != expect) return false;
    expect *= static_cast<std::uint64_t>(v.sizes[d]);
  }
  return true;
}

float halfToFloat(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000) << 16;
  const std::uint32_t exponent = (h >> 10) & 0x1f;
  std::uint32_t mantissa = h & 0x3ff;
  std::uint32_t bits;
  if (exponent == 0) {
    if (mantissa == 0) {
      bits = sign;
    } else {  // subnormal: normalize
      int e = -1;
      do {
        ++e;
        mantissa <<= 1;
      } while ((mantissa & 0x400) == 0);
      bits = sign | static_cast<std::uint32_t>(127 - 15 - e) << 23 | (mantissa & 0x3ff) << 13;
    }
  } else if (exponent == 31) {
    bits = sign | 0x7f800000u | mantissa << 13;
  } else {
    bits = sign | (exponent - 15 + 127) << 23 | mantissa << 13;
  }
  return std::bit_cast<float>(bits);
}

// n elements of dtype `dt` at src, src + stride, ... (in elements) to f32.
void widen(std::string_view dt, const std::byte* src, std::uint64_t stride, float* dst, std::uint64_t n) {
  if (dt == "F32") {
    if (stride == 1) {
      std::memcpy(dst, src, n * 4);
      return;
    }
    for (std::uint64_t i = 0; i < n; ++i) std::memcpy(dst + i, src + i * stride * 4, 4);
  } else if (dt == "F16") {
    for (std::uint64_t i = 0; i < n; ++i) dst[i] = halfToFloat(static_cast<std::uint16_t>(le(src + i * stride * 2, 2)));
  } else if (dt == "BF16") {
    for (std::uint64_t i = 0; i < n; ++i)
      dst[i] = std::bit_cast<float>(static_cast<std::uint32_t>(le(src + i * stride * 2, 2)) << 16);
  } else {
    TXL_CHECK(dt == "F64", "widen: unexpected dtype");
    for (std::uint64_t i = 0; i < n; ++i) {
      double d;
      std::memcpy(&d, src + i * stride * 8, 8);
      dst[i] = static_cast<float>(d);
    }
  }
}

void Reader::materialize() {
  // Checks and ties first, so that nothing is allocated for a file that is refused.
  struct Plan {
    std::size_t tie = SIZE_MAX;  // index of the earlier view this one repeats
    std::uint64_t numel = 0;
  };
  std::vector<Plan> plans(views_.size());
  std::map<std::tuple<const Storage*, std::uint64_t, ir::Shape, std::vector<std::uint64_t>>, std::size_t> seen;
  std::set<std::string> names;
  std::uint64_t total = 0;
  const std::uint64_t budget =
      std::min<std::uint64_t>(kHardCapBytes, 2 * std::uint64_t{img_.bytes.size()} + (1u << 20));
  for (std::size_t k = 0; k < views_.size(); ++k) {
    const View& v = views_[k];
    const Storage& s = *v.storage;
    const std::string where = "tensor " + inQuotes(v.name);
    if (!names.insert(v.name).second) fail(where + ": appears twice");
    if (!s.kind->isFloat)
      fail(where + ": storage " + inQuotes(s.key) + " is " + s.kind->what + " (" + oneLine(s.kind->cls) +
           "); a weight must be a float type (F32, F16, BF16 or F64), integers are never reinterpreted");
    std::uint64_t numel = 1;
    bool overflow = false;
    for (auto n : v.sizes) overflow |= __builtin_mul_overflow(numel, static_cast<std::uint64_t>(n), &numel);
    if (overflow || numel > (std::uint64_t{1} << 62))
      fail(where + ": size " + ir::shapeStr(v.sizes) + " has more than 2^62 elements");
    plans[k].numel = numel;
    if (numel > 0) {
      if (v.offset >= s.numel)
        fail(where + ": storage offset " + std::to_string(v.offset) + " is past storage " + inQuotes(s.key) + "'s " +
             std::to_string(s.numel) + " elements");
      std::uint64_t last = v.offset;
      for (std::size_t d = 0; d < v.sizes.size(); ++d) {
        std::uint64_t step;
        overflow |= __builtin_mul_overflow(static_cast<std::uint64_t>(v.sizes[d] - 1), v.strides[d], &step);
        overflow |= __builtin_add_overflow(last, step, &last);
      }
      if (overflow || last >= s.numel) {
        std::string strides = "[";
        for (std::size_t d = 0; d < v.strides.size(); ++d) strides += (d ? "," : "") + std::to_string(v.strides[d]);
        fail(where + ": offset " + std::to_string(v.offset) + ", size " + ir::shapeStr(v.sizes) + ", stride " +
             strides + "] reach element " + (overflow ? std::string("past 2^64") : std::to_string(last)) +
             " of storage " + inQuotes(s.key) + "'s " + std::to_string(s.numel) + " elements");
      }
      if (!s.present) fail(where + ": storage " + inQuotes(s.key) + ": no " + s.where + " in the file");
      const std::uint64_t need = s.numel * s.kind->size;  // numel <= file size / element size: no overflow
      if (s.numel > std::numeric_limits<std::uint64_t>::max() / s.kind->size || s.data.size() < need)
        fail(where + ": storage " + inQuotes(s.key) + " (" + s.where + ") has " + std::to_string(s.data.size()) +
             " bytes; its " + std::to_string(s.numel) + " " + s.kind->dtype + " elements need " +
             (s.numel > std::numeric_limits<std::uint64_t>::max() / s.kind->size ? std::string("more than 2^64")
                                                                                 : std::to_string(need)));
    }
    auto [it, fresh] = seen.try_emplace({v.storage, v.offset, v.sizes, v.strides}, k);
    if (!fresh && numel > 0) {
      plans[k].tie = it->second;
      continue;
    }
    if (numel > (budget - total) / 4)
      fail(where + ": its " + std::to_string(numel) + " f32 elements would bring the checkpoint's tensors past " +
           std::to_string(budget) + " bytes (twice the file size, or the 64 GiB cap)");
    total += numel * 4;
  }
  // Materialize.
  for (std::size_t k = 0; k < views_.size(); ++k) {
    const View& v = views_[k];
    CheckpointTensor t;
    t.name = v.name;
    t.storedDType = v.storage->kind->dtype;
    if (plans[k].tie != SIZE_MAX) {
      t.tiedTo = out_.tensors[plans[k].tie].name;
      t.tensor = out_.tensors[plans[k].tie].tensor;
      out_.tensors.push_back(std::move(t));
      continue;
    }
    const Storage& s = *v.storage;
    ir::TensorType type{ir::DType::F32, v.sizes};
    if (plans[k].numel == 0) {
      t.tensor = ir::Tensor::zeros(type);
      out_.tensors.push_back(std::move(t));
      continue;
    }
    if (zip_) {  // the CRC of a storage entry, once
      if (const ZipEntry* e = zip_->find(top_ + "/data/" + s.key)) (void)zip_->data(*e);
    }
    const std::size_t esize = s.kind->size;
    const std::byte* base = s.data.data();
    const std::string_view dt = s.kind->dtype;
    if (dt == "F32" && img_.mapped && isContiguous(v) &&
        reinterpret_cast<std::uintptr_t>(base + v.offset * 4) % alignof(float) == 0) {
      t.tensor = ir::Tensor::fileView(type, base + v.offset * 4, img_.owner);
      out_.tensors.push_back(std::move(t));
      continue;
    }
    t.tensor = ir::Tensor::zeros(type);
    float* dst = t.tensor.data<float>();
    if (isContiguous(v)) {
      widen(dt, base + v.offset * esize, 1, dst, plans[k].numel);
    } else {
      // Odometer over all but the innermost dimension; each innermost row is one strided run.
      const std::size_t rank = v.sizes.size();
      const auto inner = static_cast<std::uint64_t>(v.sizes[rank - 1]);
      std::vector<std::int64_t> index(rank, 0);
      std::uint64_t src = v.offset;
      for (std::uint64_t n = 0; n < plans[k].numel; n += inner) {
        widen(dt, base + src * esize, v.strides[rank - 1], dst + n, inner);
        for (std::size_t d = rank - 1; d-- > 0;) {
          if (++index[d] < v.sizes[d]) {
            src += v.strides[d];
            break;
          }
          src -= v.strides[d] * static_cast<std::uint64_t>(v.sizes[d] - 1);
          index[d] = 0;
        }
      }
    }
    out_.tensors.push_back(std::move(t));
  }
}

TorchCheckpoint Reader::read() {
  out_.path = img_.name;
  const auto& b = img_.bytes;
  if (b.size() >= 4 && le(b.data(), 4) == 0x04034b50) {
    readZip();
  } else if (b.size() >= 2 && b[0] == std::byte{0x80} && b[1] == std::byte{0x02}) {
    readLegacy();
  } else {
    fail("neither a torch zip archive (\"PK\\3\\4\") nor a legacy torch.save file (a protocol-2 pickle); " +
         std::to_string(b.size()) + " bytes");
  }
  const Value* root = object_.root;
  if (root->kind == Kind::Dict) {
    collectStateDict(root);
  } else if (root->kind == Kind::Object && !root->reduced) {
    out_.moduleClass = root->cls;
    std::set<const Value*> onPath;
    walkModule(root, "", 0, onPath);
  } else {
    fail(pickleName_ + ": expected a state dict (an OrderedDict of tensors) or a pickled nn.Module, got " +
         pickle::describe(root));
  }
  materialize();
  return std::move(out_);
}

// ---------------------------------------------------------------- vocabularies

bool validUtf8(const std::string& s) {
  try {
    (void)json(s).dump();
    return true;
  } catch (const json::exception&) {
    return false;
  }
}

// The tokenizer's options among a vocabulary pickle's members.
HfTokenizerOptions tokenizerOptionsFrom(const Value* root, const std::string& name) {
  HfTokenizerOptions o;
  if (const Value* v = root->get("lower_case"); v && v->kind != Kind::None) {
    if (v->kind != Kind::Bool) throw Error(name + ": lower_case: expected a bool, got " + pickle::describe(v));
    o.lowerCase = v->b;
  }
  if (const Value* v = root->get("delimiter"); v && v->kind != Kind::None) {
    if (v->kind != Kind::String)
      throw Error(name + ": delimiter: expected a string or None, got " + pickle::describe(v));
    o.delimiter = v->s;
  }
  if (const Value* v = root->get("language"); v && v->kind != Kind::None) {
    if (v->kind != Kind::String) throw Error(name + ": language: expected a string, got " + pickle::describe(v));
    o.language = v->s;
  }
  for (const char* key : {"special", "never_split"}) {
    const Value* v = root->get(key);
    if (!v || v->kind == Kind::None || v->kind == Kind::Opaque) continue;
    if (v->kind != Kind::List && v->kind != Kind::Tuple)
      throw Error(name + ": " + key + ": expected a list of strings, got " + pickle::describe(v));
    for (std::size_t k = 0; k < v->items.size(); ++k) {
      const Value* s = v->items[k];
      if (s->kind != Kind::String || s->s.empty())
        throw Error(name + ": " + key + "[" + std::to_string(k) + "]: expected a non-empty string, got " +
                    pickle::describe(s));
      if (std::find(o.specialTokens.begin(), o.specialTokens.end(), s->s) == o.specialTokens.end())
        o.specialTokens.push_back(s->s);
    }
  }
  return o;
}

VocabularyPickle vocabularyFrom(const Image& img) {
  const auto& b = img.bytes;
  pickle::Pickle object;
  std::string where = img.name;
  static const unsigned char kLegacyStart[] = {0x80, 0x02, 0x8a, 0x0a, 0x6c, 0xfc, 0x9c,
                                               0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19};
  if (b.size() >= sizeof kLegacyStart && std::memcmp(b.data(), kLegacyStart, sizeof kLegacyStart) == 0) {
    // The hub's torch.save'd Vocab.__dict__: the legacy container with no storages.
    std::size_t at = 0;
    pickle::Policy none;
    const char* names[] = {"magic number", "protocol version", "sys_info"};
    for (const char* name : names) at += pickle::parse(b.subspan(at), img.name + ": " + name, none, at).end;
    object = pickle::parse(b.subspan(at), img.name + ": object pickle", vocabularyPolicyBase(), at);
    at += object.end;
    pickle::Pickle keys = pickle::parse(b.subspan(at), img.name + ": storage keys", none, at);
    if (keys.root->kind != Kind::List || !keys.root->items.empty())
      throw Error(img.name + ": storage keys: expected an empty list (a vocabulary holds no tensors), got " +
                  pickle::describe(keys.root));
  } else {
    object = pickle::parse(b, img.name, vocabularyPolicyBase());
  }
  const Value* root = object.root;
  if (root->kind != Kind::Dict)
    throw Error(img.name + ": expected a tokenizer's __dict__ (a dict with idx2sym), got " + pickle::describe(root));
  const Value* idx2sym = root->get("idx2sym");
  if (!idx2sym) throw Error(img.name + ": no \"idx2sym\" member (expected a TransfoXLTokenizer's or Vocab's __dict__)");
  if (idx2sym->kind != Kind::List)
    throw Error(img.name + ": idx2sym: expected a list, got " + pickle::describe(idx2sym));
  if (idx2sym->items.empty()) throw Error(img.name + ": idx2sym: expected at least one symbol, got an empty list");
  std::vector<std::string> symbols;
  std::unordered_map<std::string, std::size_t> ids;
  for (std::size_t k = 0; k < idx2sym->items.size(); ++k) {
    const Value* s = idx2sym->items[k];
    const std::string at = img.name + ": idx2sym[" + std::to_string(k) + "]";
    if (s->kind != Kind::String) throw Error(at + ": expected a string, got " + pickle::describe(s));
    if (s->s.empty()) throw Error(at + ": an empty symbol");
    if (!validUtf8(s->s)) throw Error(at + ": not valid UTF-8");
    if (s->s.find_first_of(" \t\n\r\v\f") != std::string::npos)
      throw Error(at + ": " + pickle::describe(s) + " holds whitespace (vocab.txt has one symbol per line)");
    if (auto [it, fresh] = ids.emplace(s->s, k); !fresh)
      throw Error(at + ": " + pickle::describe(s) + " repeats idx2sym[" + std::to_string(it->second) + "]");
    symbols.push_back(s->s);
  }
  if (const Value* sym2idx = root->get("sym2idx")) {
    if (sym2idx->kind != Kind::Dict)
      throw Error(img.name + ": sym2idx: expected a dict, got " + pickle::describe(sym2idx));
    for (const auto& [k, v] : sym2idx->entries) {
      auto it = k->kind == Kind::String ? ids.find(k->s) : ids.end();
      if (it == ids.end() || v->kind != Kind::Int || v->big || v->i != static_cast<std::int64_t>(it->second))
        throw Error(img.name + ": sym2idx: " + pickle::describe(k) + " -> " + pickle::describe(v) +
                    " disagrees with idx2sym");
    }
    if (sym2idx->entries.size() != symbols.size())
      throw Error(img.name + ": sym2idx has " + std::to_string(sym2idx->entries.size()) + " symbols, idx2sym " +
                  std::to_string(symbols.size()));
  }
  VocabularyPickle out;
  out.symbols = std::move(symbols);
  out.tokenizer = tokenizerOptionsFrom(root, img.name);
  return out;
}

// ---------------------------------------------------------------- the authors' spec

class Attributes {
 public:
  explicit Attributes(const TorchCheckpoint& c) : c_(c) {}
  const json& get(const std::string& module, const std::string& attr) const {
    auto it = c_.moduleAttributes.find(module);
    const std::string label = module.empty() ? std::string("the root module") : "module " + inQuotes(module);
    if (it == c_.moduleAttributes.end())
      throw Error(c_.path + ": no " + label + " to read attribute " + inQuotes(attr) +
                  " from (expected a MemTransformerLM)");
    auto a = it->second.find(attr);
    if (a == it->second.end())
      throw Error(c_.path + ": " + label + " (" +
                  oneLine(c_.moduleClasses.count(module) ? c_.moduleClasses.at(module) : "") + "): missing attribute " +
                  inQuotes(attr) + " (expected a MemTransformerLM)");
    return *a;
  }
  bool has(const std::string& module) const { return c_.moduleAttributes.contains(module); }
  std::int64_t integer(const std::string& module, const std::string& attr) const {
    const json& j = get(module, attr);
    if (!j.is_number_integer())
      throw Error(c_.path + ": module " + inQuotes(module) + ": attribute " + inQuotes(attr) +
                  ": expected an integer, got " + j.dump());
    return j.get<std::int64_t>();
  }

 private:
  const TorchCheckpoint& c_;
};

}  // namespace

TorchCheckpoint readTorchCheckpoint(const std::string& path) {
  Reader r(mapFile(path));
  return r.read();
}

TorchCheckpoint readTorchCheckpoint(std::span<const std::byte> bytes, const std::string& name) {
  Image img;
  img.name = name;
  img.bytes = bytes;
  Reader r(std::move(img));
  return r.read();
}

std::vector<std::string> readVocabularyPickle(const std::string& path) { return vocabularyFrom(mapFile(path)).symbols; }

std::vector<std::string> readVocabularyPickle(std::span<const std::byte> bytes, const std::string& name) {
  return readVocabularyPickleWithOptions(bytes, name).symbols;
}

VocabularyPickle readVocabularyPickleWithOptions(const std::string& path) { return vocabularyFrom(mapFile(path)); }

VocabularyPickle readVocabularyPickleWithOptions(std::span<const std::byte> bytes, const std::string& name) {
  Image img;
  img.name = name;
  img.bytes = bytes;
  return vocabularyFrom(img);
}

json authorsModelSpec(const TorchCheckpoint& ckpt) {
  if (ckpt.moduleClass.empty())
    throw Error(ckpt.path +
                ": a state dict, not a whole pickled MemTransformerLM: its hyperparameters are not in it "
                "(give a spec)");
  Attributes a(ckpt);
  json spec = json::object();
  for (const char* key : {"n_token", "n_layer", "n_head", "d_model", "d_head", "d_embed", "tgt_len", "mem_len",
                          "ext_len", "attn_type", "clamp_len", "sample_softmax"})
    spec[key] = a.integer("", key);
  const json& sameLength = a.get("", "same_length");
  if (!sameLength.is_boolean())
    throw Error(ckpt.path + ": the root module: attribute \"same_length\": expected a bool");
  spec["same_length"] = sameLength;
  spec["div_val"] = a.integer("word_emb", "div_val");
  // AdaptiveEmbedding keeps cutoffs + [n_token].
  const json& cutoffs = a.get("word_emb", "cutoffs");
  if (!cutoffs.is_array() || cutoffs.empty() || cutoffs.back() != spec["n_token"])
    throw Error(ckpt.path + ": module \"word_emb\": attribute \"cutoffs\": expected the cutoffs followed by n_token (" +
                spec["n_token"].dump() + "), got " + cutoffs.dump());
  json cut = json::array();
  for (std::size_t k = 0; k + 1 < cutoffs.size(); ++k) cut.push_back(cutoffs[k]);
  spec["cutoffs"] = cut;
  if (a.has("crit") && a.get("crit", "cutoffs") != cutoffs)
    throw Error(ckpt.path + ": module \"crit\": attribute \"cutoffs\" " + a.get("crit", "cutoffs").dump() +
                " disagrees with word_emb's " + cutoffs.dump());
  spec["d_inner"] = a.integer("layers.0.pos_ff", "d_inner");
  const json& pre = a.get("layers.0.pos_ff", "pre_lnorm");
  if (!pre.is_boolean() && !pre.is_null())
    throw Error(ckpt.path + ": module \"layers.0.pos_ff\": attribute \"pre_lnorm\": expected a bool, got " +
                pre.dump());
  spec["pre_lnorm"] = pre.is_boolean() && pre.get<bool>();
  const json& eps = a.get("layers.0.pos_ff.layer_norm", "eps");
  if (!eps.is_number())
    throw Error(ckpt.path + ": module \"layers.0.pos_ff.layer_norm\": attribute \"eps\": expected a number");
  spec["layer_norm_epsilon"] = eps;
  if (a.has("drop")) spec["dropout"] = a.get("drop", "p");
  if (a.has("layers.0.dec_attn.dropatt")) spec["dropatt"] = a.get("layers.0.dec_attn.dropatt", "p");

  std::map<std::string, const CheckpointTensor*> byName;
  for (const CheckpointTensor& t : ckpt.tensors) byName[t.name] = &t;
  auto tied = [&](const std::string& name, const std::string& to) {
    auto it = byName.find(name);
    return it != byName.end() && it->second->tiedTo == to;
  };
  spec["untie_r"] = !byName.contains("r_w_bias") && byName.contains("layers.0.dec_attn.r_w_bias");
  // tie_weight: every softmax output layer is the embedding's table (one parameter object).
  bool tieWeight = false;
  for (std::size_t i = 0;; ++i) {
    const std::string out = "crit.out_layers." + std::to_string(i) + ".weight";
    if (!byName.contains(out)) break;
    bool t = tied(out, "word_emb.emb_layers." + std::to_string(i) + ".weight");
    tieWeight = (i == 0 || tieWeight) && t;
  }
  spec["tie_weight"] = tieWeight;
  const std::int64_t divVal = spec["div_val"].get<std::int64_t>();
  json tieProjs = json::array();
  for (std::size_t i = 0; i <= cut.size(); ++i) {
    const std::string proj = "crit.out_projs." + std::to_string(i);
    tieProjs.push_back(tied(proj, "word_emb.emb_projs." + std::to_string(divVal == 1 ? 0 : i)));
  }
  spec["tie_projs"] = tieProjs;
  return spec;
}

}  // namespace txl::frontend
