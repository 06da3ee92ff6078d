// tests/frontend/pickle_bytes.h - byte builders for the pickle and checkpoint tests.
//
// PickleBytes writes opcodes by hand (so a test can write what torch.save
// never would); zipArchive() writes a minimal stored zip archive of the kind
// torch.save writes (without the 64-byte alignment), with knobs to break it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace txl::test {

class PickleBytes {
 public:
  PickleBytes& op(std::uint8_t b) {
    bytes.push_back(static_cast<std::byte>(b));
    return *this;
  }
  PickleBytes& raw(const std::string& s) {
    for (char c : s) op(static_cast<std::uint8_t>(c));
    return *this;
  }
  PickleBytes& le(std::uint64_t v, int n) {
    for (int i = 0; i < n; ++i) op(static_cast<std::uint8_t>((v >> (8 * i)) & 0xff));
    return *this;
  }
  PickleBytes& proto(int v) { return op(0x80).op(static_cast<std::uint8_t>(v)); }
  PickleBytes& stop() { return op('.'); }
  PickleBytes& mark() { return op('('); }
  PickleBytes& str(const std::string& s) { return op('X').le(s.size(), 4).raw(s); }
  PickleBytes& shortStr(const std::string& s) { return op(0x8c).le(s.size(), 1).raw(s); }
  PickleBytes& integer(std::int64_t v) {
    if (v >= 0 && v < 256) return op('K').le(static_cast<std::uint64_t>(v), 1);
    if (v >= 0 && v < 65536) return op('M').le(static_cast<std::uint64_t>(v), 2);
    if (v >= INT32_MIN && v <= INT32_MAX) return op('J').le(static_cast<std::uint32_t>(v), 4);
    return op(0x8a).le(8, 1).le(static_cast<std::uint64_t>(v), 8);
  }
  PickleBytes& global(const std::string& module, const std::string& name) {
    return op('c').raw(module + "\n" + name + "\n");
  }
  PickleBytes& tuple(std::size_t n) { return op(n == 0 ? ')' : n == 1 ? 0x85 : n == 2 ? 0x86 : 0x87); }
  PickleBytes& reduce() { return op('R'); }
  PickleBytes& emptyDict() { return op('}'); }
  PickleBytes& setItems() { return op('u'); }
  PickleBytes& put(int i) { return op('q').le(static_cast<std::uint64_t>(i), 1); }
  PickleBytes& get(int i) { return op('h').le(static_cast<std::uint64_t>(i), 1); }
  PickleBytes& orderedDict() { return global("collections", "OrderedDict").tuple(0).reduce(); }
  // torch._utils._rebuild_tensor_v2(storage pid, offset, size, stride, False, OrderedDict()).
  PickleBytes& tensor(const std::string& storageClass, const std::string& key, std::int64_t numel, std::int64_t offset,
                      const std::vector<std::int64_t>& size, const std::vector<std::int64_t>& stride,
                      bool legacy = false) {
    global("torch._utils", "_rebuild_tensor_v2").mark();
    mark().str("storage").global("torch", storageClass).str(key).str("cpu").integer(numel);
    if (legacy) op('N');
    op('t').op('Q').integer(offset);
    mark();
    for (auto s : size) integer(s);
    op('t').mark();
    for (auto s : stride) integer(s);
    op('t').op(0x89).orderedDict().op('t').reduce();
    return *this;
  }

  std::vector<std::byte> bytes;
};

inline std::vector<std::byte> bytesOf(const std::string& s) {
  std::vector<std::byte> out;
  for (char c : s) out.push_back(static_cast<std::byte>(c));
  return out;
}

struct ZipMember {
  std::string name;
  std::vector<std::byte> data;
  std::uint16_t method = 0;
  std::int64_t sizeDelta = 0;  // added to the sizes written in both headers
};

inline std::uint32_t testCrc32(const std::vector<std::byte>& d) {
  std::uint32_t c = 0xFFFFFFFFu;
  for (std::byte b : d) {
    c ^= std::to_integer<std::uint32_t>(b);
    for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
  }
  return c ^ 0xFFFFFFFFu;
}

inline std::vector<std::byte> zipArchive(const std::vector<ZipMember>& members) {
  PickleBytes out;  // used as a little-endian byte writer
  PickleBytes central;
  for (const ZipMember& m : members) {
    const std::uint64_t offset = out.bytes.size();
    const std::uint32_t size = static_cast<std::uint32_t>(static_cast<std::int64_t>(m.data.size()) + m.sizeDelta);
    const std::uint32_t crc = testCrc32(m.data);
    out.le(0x04034b50, 4).le(20, 2).le(0, 2).le(m.method, 2).le(0, 4).le(crc, 4).le(size, 4).le(size, 4);
    out.le(m.name.size(), 2).le(0, 2).raw(m.name);
    out.bytes.insert(out.bytes.end(), m.data.begin(), m.data.end());
    central.le(0x02014b50, 4).le(20, 2).le(20, 2).le(0, 2).le(m.method, 2).le(0, 4).le(crc, 4).le(size, 4).le(size, 4);
    central.le(m.name.size(), 2).le(0, 2).le(0, 2).le(0, 2).le(0, 2).le(0, 4).le(offset, 4).raw(m.name);
  }
  const std::uint64_t cdOffset = out.bytes.size();
  out.bytes.insert(out.bytes.end(), central.bytes.begin(), central.bytes.end());
  out.le(0x06054b50, 4).le(0, 2).le(0, 2).le(members.size(), 2).le(members.size(), 2);
  out.le(central.bytes.size(), 4).le(cdOffset, 4).le(0, 2);
  return out.bytes;
}

// F32 values as raw little-endian bytes.
inline std::vector<std::byte> floatBytes(const std::vector<float>& v) {
  std::vector<std::byte> out(v.size() * 4);
  for (std::size_t i = 0; i < v.size(); ++i) std::memcpy(out.data() + 4 * i, &v[i], 4);
  return out;
}

}  // namespace txl::test
