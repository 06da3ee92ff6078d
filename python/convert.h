// python/convert.h - between Python objects and the driver's types: JSON, settings, tensors, token arrays.
//
// Token ids come in as anything numpy.asarray takes; an int64 C-contiguous
// array is viewed in place (no copy), any other integer array or a list is
// converted once. Results go out as new NumPy arrays that own their data:
// a session's output buffers are reused by its next forward(), so they are
// copied (docs/PYTHON.md, "Copies").
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "driver/setting.h"
#include "ir/tensor.h"

namespace txl::python {

namespace py = pybind11;

// JSON to dict / list / str / int / float / bool / None.
py::object toPython(const nlohmann::json& j);

// The setting keywords, named as the command line's flags (--mem-len: mem_len).
inline constexpr const char* kSettingKeys[] = {"batch",       "qlen",           "mem_len", "clamp_len",
                                               "same_length", "initial_memory", "threads", "backend",
                                               "passes",      "disable_pass",   "memory",  "precision"};
// Applies the keywords `kwargs` to `c` (later calls override earlier ones).
// An unknown key, or a value of the wrong type, is a SettingFailure naming it.
void applyKeywords(driver::SettingChoice& c, const py::kwargs& kwargs, const char* function);
// The resolved setting as a dict of the same keys.
py::dict settingToDict(const driver::Setting& s);

// A token-id array [qlen, batch] (or [qlen]: batch 1) as an i64 tensor, and
// the array that holds its data (kept alive by the caller while the tensor
// is used). `what` names the argument in errors ("tokens").
struct TokenArray {
  // The int64 C-contiguous array `tensor` views, kept alive. A plain handle:
  // a default-constructed py::array_t would make an empty NumPy array for
  // every call.
  py::object array;
  ir::Tensor tensor;
  bool oneDimensional = false;
};
TokenArray tokenArray(const py::handle& object, const char* what);

// A new float32 array of `shape` (owned by Python) and its data.
py::array_t<float> newFloatArray(const std::vector<std::int64_t>& shape);
// A zero-copy NumPy view of an owned tensor (kept alive by the array).
py::array tensorArray(const ir::Tensor& t);
// A float array as an f32 tensor view (converted once unless it is float32 C-contiguous).
ir::Tensor floatTensor(const py::handle& object, const std::string& what, py::list& keepAlive);

}  // namespace txl::python
