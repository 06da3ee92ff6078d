// driver/state_file.h - a session's memory in a file, to resume a stream later or elsewhere.
//
// A state file is a safetensors file of the memory ("mem.<slot>",
// f32[mlen, batch, width]) whose metadata says format "txlc-state/1" and
// names the model (driver/artifact.h modelId), so that a state for another
// model is refused. Batch, mem_len, mlen, semantics and the initial memory
// are recorded too; a reader checks that they describe the tensors (mlen and
// batch their first two dimensions, mlen <= mem_len) and that the semantics
// are the model's. The session then checks the shapes against its slots.
//
//   writeStateFile(session, model, setting, "s.safetensors");
//   loadStateFile(other, model, "s.safetensors");
#pragma once

#include <string>

#include "backend/session.h"
#include "driver/model.h"
#include "driver/setting.h"
#include "ir/tensor.h"

namespace txl::driver {

inline constexpr const char* kStateFormat = "txlc-state/1";

// The memory of state file `path`, checked to be a state of model `m` whose
// names, dtypes and shapes fit `compiled`'s slots - from the file's header,
// before any tensor is converted (txl::Error naming the file otherwise).
ir::TensorMap readStateFile(const Model& m, const backend::CompiledModel& compiled, const std::string& path);
// session.loadState(state) with an error naming `source` (the file the state came from).
void loadState(backend::Session& session, const ir::TensorMap& state, const std::string& source);
// The session's memory as a state file of model `m` run under `s` (atomic).
void writeStateFile(const backend::Session& session, const Model& m, const Setting& s, const std::string& path);

}  // namespace txl::driver
