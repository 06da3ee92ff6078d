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
inline constexpr const char* kSettingKeys[] = {"batch",          "qlen",    "mem_len",       "clamp_len", "same_length",
                                               "initial_memory", "threads", "thread_policy", "backend",   "passes",
                                               "disable_pass",   "memory",  "precision"};
// Applies the keywords `kwargs` to `c` (later calls override earlier ones).
// An unknown key, or a value of the wrong type, is a SettingFailure naming it.
void applyKeywords(driver::SettingChoice& c, const py::kwargs& kwargs, const char* function);
// The resolved setting as a dict of the same keys.
py::dict settingToDict(const driver::Setting& s);

// Arguments the module reads itself (not through pybind11's casters), so that
// a wrong type is a TypeError naming the argument, the expected and the
// found type, never pybind11's bare "Unable to cast" RuntimeError.
// The type's name of `v` ("int", "numpy.ndarray").
std::string typeName(const py::handle& v);
// A str as UTF-8: TypeError for another type; ValueError for a str that is
// not valid UTF-8 (a lone surrogate), naming its position.
std::string utf8Text(const py::handle& v, const std::string& what);
// A bool (numpy.bool_ too): TypeError for anything else (an int is not taken as a truth value).
bool boolArg(const py::handle& v, const std::string& what);
// A real number (an int, a float, a NumPy scalar; not a bool): TypeError otherwise.
double numberArg(const py::handle& v, const std::string& what);
// An integer (int or a NumPy integer; not a bool): TypeError otherwise; ValueError beyond int64.
std::int64_t integerArg(const py::handle& v, const std::string& what);
// A file path: a str or an os.PathLike (bytes too). A NUL byte (which the
// system call would cut the path at), a name longer than NAME_MAX or a path
// of PATH_MAX bytes or more (ENAMETOOLONG) is a txl::Error naming it.
std::string pathArg(const py::handle& v, const std::string& what);

// The most token ids one array may hold (token ids, targets, ids to score or decode):
// checked from the array's shape before any conversion or copy (an int64 copy is 512 MiB).
inline constexpr std::int64_t kMaxIdsElements = std::int64_t{1} << 26;

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
