// driver/state_file.cpp - readStateFile(), loadState(), writeStateFile().
#include "driver/state_file.h"

#include <charconv>

#include "frontend/model_spec.h"
#include "frontend/safetensors.h"
#include "ir/check.h"

namespace txl::driver {

ir::TensorMap readStateFile(const Model& m, const backend::CompiledModel& compiled, const std::string& path) {
  frontend::SafetensorsFile f = frontend::SafetensorsFile::open(path);
  const auto& meta = f.metadata();
  auto get = [&](const char* key) {
    auto it = meta.find(key);
    if (it == meta.end()) throw Error(path + ": __metadata__/" + key + ": missing; expected a txlc state file");
    return it->second;
  };
  if (get("format") != kStateFormat)
    throw Error(path + ": __metadata__/format: expected \"" + kStateFormat + "\", got " + quote(get("format")));
  // The file's text is clipped (ir/check.h): a model id is a short hash, but the file may say anything.
  if (get("model_id") != m.modelId)
    throw Error(path + ": a state for model " + clip(get("model_id")) + ", this model (" + m.path + ") is " +
                m.modelId);
  // Every name, dtype and shape is checked from the header before any tensor is converted.
  std::map<std::string, ir::TensorType> types;
  for (const auto& name : f.names()) {
    const frontend::TensorInfo& info = f.info(name);
    using frontend::StDType;
    if (info.dtype != StDType::F32 && info.dtype != StDType::F16 && info.dtype != StDType::BF16 &&
        info.dtype != StDType::F64)
      throw Error(path + ": tensor " + quote(name) + ": expected F32, F16, BF16 or F64 memory, got " +
                  frontend::stDTypeName(info.dtype));
    types.emplace(name, ir::TensorType{ir::DType::F32, info.shape});  // converted to f32 below
  }
  try {
    backend::checkStateTypes(compiled, types);
  } catch (const Error& e) {
    throw Error(path + ": " + e.what());
  }
  // The recorded setting must describe these tensors: a file whose metadata
  // contradicts its memory was not written by txlc (or was edited).
  auto count = [&](const char* key) {
    const std::string v = get(key);
    std::int64_t n = -1;
    auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
    if (ec != std::errc() || end != v.data() + v.size() || n < 0)
      throw Error(path + ": __metadata__/" + key + ": expected a non-negative integer, got " + quote(v));
    return n;
  };
  const std::int64_t batch = count("batch"), mlen = count("mlen"), memLen = count("mem_len");
  if (mlen > memLen)
    throw Error(path + ": __metadata__/mlen: " + std::to_string(mlen) + " positions, more than its mem_len " +
                std::to_string(memLen));
  for (const auto& [name, t] : types)
    if (t.shape.size() != 3 || t.shape[0] != mlen || t.shape[1] != batch)
      throw Error(path + ": tensor " + quote(name) + ": expected [mlen " + std::to_string(mlen) + ", batch " +
                  std::to_string(batch) + ", width] as its metadata says, got " + ir::shapeStr(t.shape));
  if (frontend::parseSemantics(get("semantics"), path + ": __metadata__/semantics") != m.spec.semantics)
    throw Error(path + ": __metadata__/semantics: a state of " + clip(get("semantics")) + " semantics, this model (" +
                m.path + ") runs " + frontend::semanticsName(m.spec.semantics) + " semantics");
  frontend::parseInitialMemory(get("initial_memory"), path + ": __metadata__/initial_memory");
  ir::TensorMap state;
  for (const auto& name : f.names()) state[name] = f.toF32(name).clone();
  return state;
}

void loadState(backend::Session& session, const ir::TensorMap& state, const std::string& source) {
  try {
    session.loadState(state);
  } catch (const Error& e) {
    throw Error(source + ": " + e.what());
  }
}

void writeStateFile(const backend::Session& session, const Model& m, const Setting& s, const std::string& path) {
  ir::TensorMap state = session.saveState();
  std::vector<std::pair<std::string, ir::Tensor>> tensors(state.begin(), state.end());
  frontend::writeSafetensors(path, tensors,
                             {{"format", kStateFormat},
                              {"model_id", m.modelId},
                              {"batch", std::to_string(s.batch)},
                              {"mem_len", std::to_string(s.memLen)},
                              {"mlen", std::to_string(session.mlen())},
                              {"semantics", frontend::semanticsName(m.spec.semantics)},
                              {"initial_memory", frontend::initialMemoryName(s.initialMemory)}});
}

}  // namespace txl::driver
