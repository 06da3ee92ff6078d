// driver/state_file.cpp - readStateFile(), loadState(), writeStateFile().
#include "driver/state_file.h"

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
    throw Error(path + ": __metadata__/format: expected \"" + kStateFormat + "\", got \"" + get("format") + "\"");
  if (get("model_id") != m.modelId)
    throw Error(path + ": a state for model " + get("model_id") + ", this model (" + m.path + ") is " + m.modelId);
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
