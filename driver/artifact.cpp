// driver/artifact.cpp - writing and reading compiled artifacts.
#include "driver/artifact.h"
#include "frontend/atomic_file.h"
#include "frontend/input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <set>

#include "ir/check.h"
#include "ir/types.h"
#include "driver/compile.h"
#include "driver/content_hash.h"
#include "frontend/weights.h"
#include "passes/pipeline.h"
#include "passes/registry.h"

namespace txl::driver {

namespace {

constexpr std::size_t kAlign = 64;

std::size_t alignUp(std::size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

void put32(std::byte* p, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = std::byte((v >> (8 * i)) & 0xff);
}
void put64(std::byte* p, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = std::byte((v >> (8 * i)) & 0xff);
}
std::uint32_t get32(const std::byte* p) {
  std::uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | std::uint32_t(p[i]);
  return v;
}
std::uint64_t get64(const std::byte* p) {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | std::uint64_t(p[i]);
  return v;
}

// Distinct buffers in name order; a tied name points at the first name that
// holds its buffer.
struct WeightLayout {
  struct Entry {
    std::string name;
    std::string aliasOf;
    std::size_t offset = 0;
  };
  std::vector<Entry> entries;
  std::size_t dataBytes = 0;
};

WeightLayout layoutWeights(const ir::TensorMap& weights) {
  WeightLayout layout;
  std::map<const void*, std::string> seen;
  for (const auto& [name, t] : weights) {
    WeightLayout::Entry e{name, "", 0};
    auto it = t.bytes() ? seen.find(t.raw()) : seen.end();
    if (it != seen.end() && weights.at(it->second).type() == t.type()) {
      e.aliasOf = it->second;
    } else {
      if (t.bytes()) seen.emplace(t.raw(), name);
      e.offset = layout.dataBytes;
      layout.dataBytes = alignUp(layout.dataBytes + t.bytes());
    }
    layout.entries.push_back(e);
  }
  return layout;
}

nlohmann::json manifestJson(const Artifact& a, const WeightLayout& layout) {
  nlohmann::json graphs = nlohmann::json::array();
  for (const auto& g : a.graphs)
    graphs.push_back({{"qlen", g.segment.qlen},
                      {"mlen", g.segment.mlen},
                      {"logprob", g.segment.logprob},
                      {"nll", g.segment.nll},
                      {"padded", g.segment.padded},
                      {"role", g.role},
                      {"hash", hex64(g.hash)},
                      {"graph", g.graph}});
  nlohmann::json weights = nlohmann::json::array();
  for (const auto& e : layout.entries) {
    const ir::Tensor& t = a.weights.at(e.name);
    nlohmann::json w = {{"name", e.name}, {"dtype", std::string(ir::dtypeName(t.dtype()))}, {"shape", t.shape()}};
    if (!e.aliasOf.empty()) w["alias_of"] = e.aliasOf;
    else w["offset"] = e.offset, w["bytes"] = t.bytes();
    weights.push_back(std::move(w));
  }
  return {{"format", "txlc-artifact"},
          {"version", kArtifactVersion},
          {"txlc_version", a.txlcVersion},
          {"model_id", a.modelId},
          {"cpu_isa", a.cpuIsa},
          {"spec", a.spec.toJson()},
          {"setting",
           {{"batch", a.setting.batch},
            {"qlen", a.setting.qlen},
            {"mem_len", a.setting.memLen},
            {"clamp_len", a.setting.clampLen},
            {"same_length", a.setting.sameLength},
            {"initial_memory", frontend::initialMemoryName(a.setting.initialMemory)},
            {"precision", precisionName(a.setting.precision)},
            {"memory", memoryForm(a.setting)}}},
          {"passes", a.setting.pipeline.passes.value_or(std::vector<std::string>{})},
          {"vocabulary", a.vocabulary ? *a.vocabulary : nlohmann::json(nullptr)},
          {"graphs", graphs},
          {"weights", weights}};
}

// Reads manifest fields with one-line errors naming the JSON pointer.
struct Reader {
  const std::string& name;
  const nlohmann::json& root;

  [[noreturn]] void fail(const std::string& ptr, const std::string& what) const {
    throw Error(name + ": manifest " + ptr + ": " + what);
  }
  const nlohmann::json& at(const nlohmann::json& obj, const std::string& ptr, const char* key) const {
    if (!obj.is_object()) fail(ptr, "expected an object");
    auto it = obj.find(key);
    if (it == obj.end()) fail(ptr + "/" + key, "missing");
    return *it;
  }
  std::int64_t integer(const nlohmann::json& obj, const std::string& ptr, const char* key) const {
    const auto& v = at(obj, ptr, key);
    if (!v.is_number_integer()) fail(ptr + "/" + key, "expected an integer, got " + v.dump());
    return v.get<std::int64_t>();
  }
  bool boolean(const nlohmann::json& obj, const std::string& ptr, const char* key) const {
    const auto& v = at(obj, ptr, key);
    if (!v.is_boolean()) fail(ptr + "/" + key, "expected true or false, got " + v.dump());
    return v.get<bool>();
  }
  std::string string(const nlohmann::json& obj, const std::string& ptr, const char* key) const {
    const auto& v = at(obj, ptr, key);
    if (!v.is_string()) fail(ptr + "/" + key, "expected a string, got " + v.dump());
    return v.get<std::string>();
  }
};

}  // namespace

std::string modelId(const frontend::ModelSpec& spec, const ir::TensorMap& weights) {
  ContentHash h;
  h.update(spec.toJson().dump());
  for (const auto& [name, t] : weights) {
    h.update(name);
    h.update(t.type().str());
    if (t.bytes()) h.update(t.raw(), t.bytes());
  }
  return hex64(h.digest());
}

std::vector<std::byte> serializeArtifact(const Artifact& a) {
  WeightLayout layout = layoutWeights(a.weights);
  const std::string manifest = manifestJson(a, layout).dump();
  const std::size_t manifestOffset = kArtifactHeaderBytes;
  const std::size_t dataOffset = alignUp(manifestOffset + manifest.size());
  const std::size_t total = dataOffset + layout.dataBytes + 8;
  std::vector<std::byte> out(total, std::byte{0});
  std::memcpy(out.data(), kArtifactMagic, 8);
  put32(out.data() + 8, kArtifactVersion);
  put32(out.data() + 12, std::uint32_t(kArtifactHeaderBytes));
  put64(out.data() + 16, manifestOffset);
  put64(out.data() + 24, manifest.size());
  put64(out.data() + 32, dataOffset);
  put64(out.data() + 40, layout.dataBytes);
  put64(out.data() + 48, total);
  std::memcpy(out.data() + manifestOffset, manifest.data(), manifest.size());
  for (const auto& e : layout.entries) {
    if (!e.aliasOf.empty()) continue;
    const ir::Tensor& t = a.weights.at(e.name);
    if (t.bytes()) std::memcpy(out.data() + dataOffset + e.offset, t.raw(), t.bytes());
  }
  put64(out.data() + total - 8, contentHash(out.data(), total - 8));
  return out;
}

void writeArtifact(const std::string& path, const Artifact& a) {
  std::vector<std::byte> bytes = serializeArtifact(a);
  frontend::AtomicFile file(path, 0644);
  file.write(bytes.data(), bytes.size());
  file.commit();
}

Artifact parseArtifact(std::shared_ptr<const void> owner, const std::byte* data, std::size_t size,
                       const std::string& name, bool fileBacked) {
  if (size < 8 || std::memcmp(data, kArtifactMagic, 8) != 0)
    throw Error(name + ": not a txlc artifact (expected the magic \"TXLCART\" at byte 0)");
  if (size < kArtifactHeaderBytes + 8)
    throw Error(name + ": truncated: " + std::to_string(size) + " bytes, the header alone is " +
                std::to_string(kArtifactHeaderBytes));
  const std::uint32_t version = get32(data + 8);
  if (version != kArtifactVersion)
    throw Error(name + ": artifact format version " + std::to_string(version) + ", this txlc reads version " +
                std::to_string(kArtifactVersion) + "; recompile it with this txlc");
  const std::uint64_t total = get64(data + 48);
  if (total > size)
    throw Error(name + ": truncated: the header says " + std::to_string(total) + " bytes, the file holds " +
                std::to_string(size));
  if (total < size)
    throw Error(name + ": " + std::to_string(size - total) + " bytes after the artifact's end (the header says " +
                std::to_string(total) + " bytes)");
  const std::uint64_t stored = get64(data + total - 8), actual = contentHash(data, total - 8);
  if (stored != actual)
    throw Error(name + ": corrupt: checksum " + hex64(actual) + " does not match the stored " + hex64(stored));
  const std::uint64_t mOff = get64(data + 16), mLen = get64(data + 24), dOff = get64(data + 32),
                      dLen = get64(data + 40);
  // total >= kArtifactHeaderBytes + 8 (checked above); every sum below stays under it.
  if (get32(data + 12) != kArtifactHeaderBytes || mOff != kArtifactHeaderBytes || mLen > total - mOff ||
      dOff % kAlign != 0 || dOff < mOff + mLen || dOff > total - 8 || dLen != total - 8 - dOff)
    throw Error(name + ": corrupt header: sections [" + std::to_string(mOff) + ", +" + std::to_string(mLen) +
                "] and [" + std::to_string(dOff) + ", +" + std::to_string(dLen) + "] do not fit " +
                std::to_string(total) + " bytes");

  if (mLen > kMaxManifestBytes)
    throw Error(name + ": manifest of " + std::to_string(mLen) + " bytes; expected at most " +
                std::to_string(kMaxManifestBytes));
  // The strict parser: depth-limited, linear, duplicate keys refused.
  const nlohmann::json m = frontend::parseJsonText(
      std::string_view(reinterpret_cast<const char*>(data + mOff), std::size_t(mLen)), name + ": manifest");
  Reader r{name, m};
  Artifact a;
  if (r.string(m, "", "format") != "txlc-artifact") r.fail("/format", "expected \"txlc-artifact\"");
  a.txlcVersion = r.string(m, "", "txlc_version");
  a.modelId = r.string(m, "", "model_id");
  a.cpuIsa = r.string(m, "", "cpu_isa");
  a.spec = frontend::parseModelSpec(r.at(m, "", "spec"), name + ": manifest /spec");
  const auto& s = r.at(m, "", "setting");
  a.setting.batch = r.integer(s, "/setting", "batch");
  a.setting.qlen = r.integer(s, "/setting", "qlen");
  a.setting.memLen = r.integer(s, "/setting", "mem_len");
  a.setting.clampLen = r.integer(s, "/setting", "clamp_len");
  a.setting.sameLength = r.boolean(s, "/setting", "same_length");
  const std::string memory = r.string(s, "/setting", "memory");
  // Artifacts written before the setting existed start the authors' way.
  a.setting.initialMemory = a.spec.defaultInitialMemory();
  if (s.is_object() && s.contains("initial_memory"))
    a.setting.initialMemory = frontend::parseInitialMemory(r.string(s, "/setting", "initial_memory"),
                                                           name + ": manifest /setting/initial_memory");
  // Artifacts written before precisions existed are f32.
  if (s.is_object() && s.contains("precision"))
    a.setting.precision = parsePrecision(r.string(s, "/setting", "precision"), name + ": manifest /setting/precision");
  if (auto p = settingSizeProblem(a.spec, a.setting, /*quoteValues=*/false)) r.fail("/setting/" + p->field, p->message);
  if (memory != "hidden" && memory != "kv")
    r.fail("/setting/memory", "expected \"kv\" or \"hidden\", got \"" + memory + "\"");
  const auto& passes = r.at(m, "", "passes");
  if (!passes.is_array()) r.fail("/passes", "expected an array of pass names");
  a.setting.pipeline.passes.emplace();
  for (const auto& p : passes) {
    if (!p.is_string()) r.fail("/passes", "expected an array of pass names");
    a.setting.pipeline.passes->push_back(p.get<std::string>());
  }
  for (std::size_t i = 0; i < a.setting.pipeline.passes->size(); ++i) try {
      passes::createPass((*a.setting.pipeline.passes)[i]);
    } catch (const Error& e) {
      r.fail("/passes/" + std::to_string(i), e.what());
    }
  resolvePipeline(a.setting);
  if (memory != memoryForm(a.setting))
    r.fail("/setting/memory",
           "expected \"" + memoryForm(a.setting) + "\" (the memory form of /passes), got \"" + memory + "\"");
  if (const auto& v = r.at(m, "", "vocabulary"); !v.is_null()) a.vocabulary = v;

  const auto& graphs = r.at(m, "", "graphs");
  if (!graphs.is_array()) r.fail("/graphs", "expected an array");
  for (std::size_t i = 0; i < graphs.size(); ++i) {
    const std::string ptr = "/graphs/" + std::to_string(i);
    const auto& g = graphs[i];
    StoredGraph sg;
    // The manifest records what varies between an artifact's graphs; the rest is the setting's.
    sg.segment = segmentOf(a.setting, r.integer(g, ptr, "qlen"), r.integer(g, ptr, "mlen"));
    sg.segment.logprob = r.boolean(g, ptr, "logprob");
    sg.segment.nll = r.boolean(g, ptr, "nll");
    sg.segment.padded = r.boolean(g, ptr, "padded");
    sg.role = r.string(g, ptr, "role");
    sg.graph = r.at(g, ptr, "graph");
    sg.hash = contentHash(sg.graph.dump().data(), sg.graph.dump().size());
    if (hex64(sg.hash) != r.string(g, ptr, "hash")) r.fail(ptr + "/hash", "does not match the stored graph");
    a.graphs.push_back(std::move(sg));
  }

  const auto& weights = r.at(m, "", "weights");
  if (!weights.is_array()) r.fail("/weights", "expected an array");
  std::vector<std::pair<std::string, std::string>> aliases;
  for (std::size_t i = 0; i < weights.size(); ++i) {
    const std::string ptr = "/weights/" + std::to_string(i);
    const auto& w = weights[i];
    std::string wname = r.string(w, ptr, "name");
    if (a.weights.contains(wname)) r.fail(ptr + "/name", "duplicate weight \"" + wname + "\"");
    auto dtype = ir::parseDType(r.string(w, ptr, "dtype"));
    if (!dtype) r.fail(ptr + "/dtype", "expected f32, bf16 or i64");
    const auto& shapeJson = r.at(w, ptr, "shape");
    ir::Shape shape;
    if (!shapeJson.is_array()) r.fail(ptr + "/shape", "expected an array of sizes");
    for (const auto& d : shapeJson) {
      if (!d.is_number_integer() || d.get<std::int64_t>() < 0 || d.get<std::int64_t>() > (std::int64_t(1) << 40))
        r.fail(ptr + "/shape", "expected non-negative sizes, got " + shapeJson.dump());
      shape.push_back(d.get<std::int64_t>());
    }
    // The bytes the tensor needs, element count × dtype size, checked at every
    // step: once it fits the data section, TensorType::numel() and bytes()
    // cannot overflow either.
    const std::string typeStr = ir::shapeStr(shape) + " of " + std::string(ir::dtypeName(*dtype));
    std::uint64_t need = ir::dtypeSize(*dtype);
    for (std::int64_t d : shape)
      if (__builtin_mul_overflow(need, std::uint64_t(d), &need))
        r.fail(ptr + "/shape", typeStr + " needs 2^64 bytes or more, expected at most the " + std::to_string(dLen) +
                                   "-byte data section");
    if (need > dLen)
      r.fail(ptr + "/shape", typeStr + " needs " + std::to_string(need) + " bytes, expected at most the " +
                                 std::to_string(dLen) + "-byte data section");
    ir::TensorType type{*dtype, shape};
    if (auto alias = w.find("alias_of"); alias != w.end()) {
      if (!alias->is_string()) r.fail(ptr + "/alias_of", "expected a weight name");
      aliases.emplace_back(wname, alias->get<std::string>());
      a.weights[wname] = ir::Tensor(type, nullptr, nullptr);
      continue;
    }
    const std::int64_t off = r.integer(w, ptr, "offset"), bytes = r.integer(w, ptr, "bytes");
    if (off < 0 || bytes < 0 || std::uint64_t(off) % kAlign != 0 || std::uint64_t(off) > dLen ||
        std::uint64_t(bytes) > dLen - std::uint64_t(off) || std::uint64_t(bytes) != need)
      r.fail(ptr, "byte range [" + std::to_string(off) + ", +" + std::to_string(bytes) + "] does not hold " +
                      type.str() + " inside the " + std::to_string(dLen) + "-byte data section");
    auto* p = const_cast<std::byte*>(data + dOff + off);
    a.weights[wname] = fileBacked ? ir::Tensor::fileView(type, p, std::const_pointer_cast<void>(owner))
                                  : ir::Tensor(type, p, std::const_pointer_cast<void>(owner));
  }
  for (const auto& [wname, target] : aliases) {
    auto it = a.weights.find(target);
    if (it == a.weights.end() || it->second.raw() == nullptr || it->second.type() != a.weights.at(wname).type())
      r.fail("/weights", "\"" + wname + "\" aliases \"" + target + "\", which is not a stored tensor of its type");
    a.weights[wname] = it->second;
  }
  // Exactly the tensors the stored spec has, f32, of its shapes.
  std::set<std::string> expected;
  for (const frontend::WeightSlot& slot : frontend::weightSlots(a.spec)) {
    expected.insert(slot.name);
    auto it = a.weights.find(slot.name);
    if (it == a.weights.end()) r.fail("/weights", "weight " + quote(slot.name) + " of the stored spec is missing");
    const ir::TensorType want{ir::DType::F32, slot.shape};
    if (it->second.type() != want)
      r.fail("/weights",
             "weight " + quote(slot.name) + " is " + it->second.type().str() + ", the stored spec needs " + want.str());
  }
  for (const auto& [wname, t] : a.weights)
    if (!expected.contains(wname)) r.fail("/weights", "weight " + quote(wname) + " is not a tensor of the stored spec");
  if (modelId(a.spec, a.weights) != a.modelId)
    r.fail("/model_id", "does not match the spec and weights stored (" + modelId(a.spec, a.weights) + ")");
  return a;
}

LoadedArtifact readArtifact(const std::string& path, std::uint64_t offset, std::optional<std::uint64_t> length,
                            const std::string& displayName) {
  auto start = std::chrono::steady_clock::now();
  // Read-only: weights are file-backed views of the mapping.
  frontend::MappedFile map = frontend::mapInputFile(path, "a txlc artifact", displayName);
  const std::uint64_t fileSize = map.bytes.size();
  if (offset > fileSize || (length && *length > fileSize - offset))
    throw Error(path + ": truncated: the embedded artifact needs bytes up to " +
                std::to_string(offset + length.value_or(0)) + ", the file holds " + std::to_string(fileSize));
  const std::uint64_t size = length.value_or(fileSize - offset);
  if (fileSize == 0) throw Error(path + ": truncated: the file is empty (expected a txlc artifact)");
  LoadedArtifact out;
  out.artifact = parseArtifact(map.owner, map.bytes.data() + offset, size, path, /*fileBacked=*/true);
  out.path = path;
  out.bytes = size;
  out.loadSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

bool looksLikeArtifact(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);  // a FIFO must not block here
  if (fd < 0) return false;
  char magic[8] = {};
  struct stat st {};
  ssize_t n = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? ::read(fd, magic, 8) : 0;
  ::close(fd);
  return n == 8 && std::memcmp(magic, kArtifactMagic, 8) == 0;
}

}  // namespace txl::driver
