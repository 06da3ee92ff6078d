// driver/state_file.cpp - readStateFile(), loadState(), writeStateFile().
#include "driver/state_file.h"

#include "frontend/safetensors.h"
#include "ir/check.h"

namespace txl::driver {

ir::TensorMap readStateFile(const Model& m, const std::string& path) {
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
