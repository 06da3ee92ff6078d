// python/convert.cpp - toPython(), applyKeywords(), settingToDict(), token and float arrays.
#include "python/convert.h"

#include <pybind11/stl.h>

#include <algorithm>
#include <bit>

#include "driver/compile.h"
#include "passes/pipeline.h"
#include "python/errors.h"

namespace txl::python {

py::object toPython(const nlohmann::json& j) {
  switch (j.type()) {
    case nlohmann::json::value_t::null:
    case nlohmann::json::value_t::discarded:
      return py::none();
    case nlohmann::json::value_t::boolean:
      return py::bool_(j.get<bool>());
    case nlohmann::json::value_t::number_integer:
      return py::int_(j.get<std::int64_t>());
    case nlohmann::json::value_t::number_unsigned:
      return py::int_(j.get<std::uint64_t>());
    case nlohmann::json::value_t::number_float:
      return py::float_(j.get<double>());
    case nlohmann::json::value_t::string:
      return py::str(j.get_ref<const std::string&>());
    case nlohmann::json::value_t::binary:
      return py::bytes(std::string(j.get_binary().begin(), j.get_binary().end()));
    case nlohmann::json::value_t::array: {
      py::list out;
      for (const auto& v : j) out.append(toPython(v));
      return out;
    }
    case nlohmann::json::value_t::object: {
      py::dict out;
      for (const auto& [k, v] : j.items()) out[py::str(k)] = toPython(v);
      return out;
    }
  }
  return py::none();
}

std::string typeName(const py::handle& v) {
  PyTypeObject* t = Py_TYPE(v.ptr());
  const char* name = t->tp_name;  // "numpy.ndarray", "int"; a heap type's is its bare name
  if ((t->tp_flags & Py_TPFLAGS_HEAPTYPE) != 0) {
    py::handle type(reinterpret_cast<PyObject*>(t));
    if (py::hasattr(type, "__module__") && py::hasattr(type, "__qualname__")) {
      py::object module = type.attr("__module__"), qualname = type.attr("__qualname__");
      if (py::isinstance<py::str>(module) && py::isinstance<py::str>(qualname)) {
        const std::string m = utf8Text(module, "type"), q = utf8Text(qualname, "type");
        return m == "builtins" ? q : m + "." + q;
      }
    }
  }
  return name;
}

std::string utf8Text(const py::handle& v, const std::string& what) {
  if (!PyUnicode_Check(v.ptr())) throw py::type_error(what + ": expected a str, got " + typeName(v));
  Py_ssize_t size = 0;
  const char* data = PyUnicode_AsUTF8AndSize(v.ptr(), &size);
  if (data) return std::string(data, std::size_t(size));
  PyErr_Clear();
  // Find the first code point UTF-8 cannot encode (a lone surrogate).
  Py_ssize_t at = 0;
  const Py_ssize_t n = PyUnicode_GetLength(v.ptr());
  while (at < n) {
    const Py_UCS4 c = PyUnicode_ReadChar(v.ptr(), at);
    if (c >= 0xD800 && c <= 0xDFFF) break;
    ++at;
  }
  throw py::value_error(what + ": not valid UTF-8 text (a lone surrogate at character " + std::to_string(at) + ")");
}

namespace {

bool isNumpyBool(const py::handle& v) {
  const std::string name = Py_TYPE(v.ptr())->tp_name;
  return name == "numpy.bool_" || name == "numpy.bool";
}

bool isInstanceOf(const py::handle& v, const char* module, const char* type) {
  const int r = PyObject_IsInstance(v.ptr(), py::module_::import(module).attr(type).ptr());
  if (r < 0) throw py::error_already_set();
  return r == 1;
}

}  // namespace

bool boolArg(const py::handle& v, const std::string& what) {
  if (PyBool_Check(v.ptr())) return v.ptr() == Py_True;
  if (isNumpyBool(v)) return PyObject_IsTrue(v.ptr()) == 1;
  throw py::type_error(what + ": expected a bool, got " + typeName(v));
}

double numberArg(const py::handle& v, const std::string& what) {
  if (PyBool_Check(v.ptr()) || isNumpyBool(v) || !isInstanceOf(v, "numbers", "Real"))
    throw py::type_error(what + ": expected a number (int or float), got " + typeName(v));
  const double d = PyFloat_AsDouble(v.ptr());
  if (d == -1.0 && PyErr_Occurred()) {
    PyErr_Clear();
    throw py::value_error(what + ": a number too large for a float");
  }
  return d;
}

std::int64_t integerArg(const py::handle& v, const std::string& what) {
  if (PyBool_Check(v.ptr()) || isNumpyBool(v) || !isInstanceOf(v, "numbers", "Integral"))
    throw py::type_error(what + ": expected an int, got " + typeName(v));
  py::object index = py::reinterpret_steal<py::object>(PyNumber_Index(v.ptr()));
  if (!index) throw py::error_already_set();
  int overflow = 0;
  const long long n = PyLong_AsLongLongAndOverflow(index.ptr(), &overflow);
  if (overflow != 0) throw py::value_error(what + ": an integer outside the int64 range");
  if (n == -1 && PyErr_Occurred()) throw py::error_already_set();
  return n;
}

std::string pathArg(const py::handle& v, const std::string& what) {
  if (!PyUnicode_Check(v.ptr()) && !PyBytes_Check(v.ptr()) && !py::hasattr(v, "__fspath__"))
    throw py::type_error(what + ": expected a str or an os.PathLike, got " + typeName(v));
  // os.fsencode: the bytes the system calls get (a str through the file system encoding with
  // surrogateescape, so a name os.listdir gave comes back as it was).
  py::object encoded =
      py::reinterpret_steal<py::object>(PyObject_CallOneArg(py::module_::import("os").attr("fsencode").ptr(), v.ptr()));
  if (!encoded) {
    if (PyErr_ExceptionMatches(PyExc_UnicodeError)) {
      PyErr_Clear();
      throw py::value_error(what + ": a path that is not valid text in the file system's encoding (a lone surrogate)");
    }
    throw py::error_already_set();
  }
  if (!PyBytes_Check(encoded.ptr()))
    throw py::type_error(what + ": expected a str or an os.PathLike, got " + typeName(v));
  const std::string path(PyBytes_AS_STRING(encoded.ptr()), std::size_t(PyBytes_GET_SIZE(encoded.ptr())));
  if (const auto nul = path.find('\0'); nul != std::string::npos)
    throw Error(what + ": " + quote(path.substr(0, nul)) + "...: the path holds a NUL byte at byte " +
                std::to_string(nul) + "; no file name can (the system would cut the path there)");
  constexpr std::size_t kPathMax = 4096, kNameMax = 255;  // Linux's PATH_MAX (with its NUL) and NAME_MAX
  if (path.size() >= kPathMax)
    throw Error(what + ": " + quote(path) + ": a path of " + std::to_string(path.size()) + " bytes; at most " +
                std::to_string(kPathMax - 1) + " (ENAMETOOLONG)");
  for (std::size_t begin = 0; begin <= path.size();) {
    std::size_t end = path.find('/', begin);
    if (end == std::string::npos) end = path.size();
    if (end - begin > kNameMax)
      throw Error(what + ": " + quote(path) + ": a name of " + std::to_string(end - begin) +
                  " bytes in the path; at most " + std::to_string(kNameMax) + " (ENAMETOOLONG)");
    begin = end + 1;
  }
  return path;
}

namespace {

std::string keyList() {
  std::string out;
  for (const char* k : kSettingKeys) out += (out.empty() ? "" : ", ") + std::string(k);
  return out;
}

// The command line's flag for a keyword: mem_len -> --mem-len.
std::string flag(const std::string& key) {
  std::string f = "--" + key;
  std::replace(f.begin(), f.end(), '_', '-');
  return f;
}

// An int (not a bool); anything else is refused as the command line's validator words it
// ("--batch: expected a positive integer, got 'two'"). The range is checked by driver::checkSetting.
// str(v) for a message, valid UTF-8 whatever v is (ascii(v) when its str holds a lone surrogate).
std::string shown(const py::handle& v) {
  py::str s(v);
  Py_ssize_t size = 0;
  if (const char* data = PyUnicode_AsUTF8AndSize(s.ptr(), &size))
    return clip(std::string_view(data, std::size_t(size)));
  PyErr_Clear();
  py::object a = py::reinterpret_steal<py::object>(PyObject_ASCII(v.ptr()));
  if (!a) throw py::error_already_set();
  return clip(utf8Text(a, "value"));
}

std::int64_t integer(const py::handle& v, const std::string& key, const char* what) {
  if (py::isinstance<py::bool_>(v) || !py::isinstance<py::int_>(v))
    throw SettingFailure(flag(key) + ": expected " + what + ", got '" + shown(v) + "'");
  try {
    return v.cast<std::int64_t>();
  } catch (const py::cast_error&) {
    throw SettingFailure(flag(key) + ": expected " + what + ", got '" + shown(v) + "'");
  }
}

std::string text(const py::handle& v, const std::string& key) {
  if (!py::isinstance<py::str>(v))
    throw SettingFailure(flag(key) + ": expected a str, got " + typeName(v) + " '" + shown(v) + "'");
  return utf8Text(v, flag(key));
}

// A str, or a list or tuple of str.
std::vector<std::string> names(const py::handle& v, const std::string& key) {
  if (py::isinstance<py::str>(v)) return {utf8Text(v, flag(key))};
  if (!py::isinstance<py::list>(v) && !py::isinstance<py::tuple>(v))
    throw SettingFailure(flag(key) + ": expected a str or a list of str, got " + typeName(v));
  std::vector<std::string> out;
  for (const py::handle& item : v) out.push_back(text(item, key));
  return out;
}

}  // namespace

void applyKeywords(driver::SettingChoice& c, const py::kwargs& kwargs, const char* function) {
  for (const auto& [keyObject, v] : kwargs) {
    const std::string key = utf8Text(keyObject, std::string(function) + "(): a keyword");
    if (v.is_none()) continue;  // None: the model's own value
    if (key == "batch") c.batch = integer(v, key, "a positive integer");
    else if (key == "qlen") c.qlen = integer(v, key, "a positive integer");
    else if (key == "mem_len") c.memLen = integer(v, key, "a non-negative integer");
    else if (key == "clamp_len") c.clampLen = integer(v, key, "an integer");
    else if (key == "same_length") {
      if (!py::isinstance<py::bool_>(v))
        throw SettingFailure(flag(key) + ": expected a bool, got " + typeName(v) + " '" + shown(v) + "'");
      c.sameLength = v.cast<bool>();
    } else if (key == "initial_memory") c.initialMemory = text(v, key);
    else if (key == "threads") {
      const std::int64_t t = integer(v, key, "a thread count in [0, 4096]");
      if (t < 0 || t > 4096)
        throw SettingFailure("--threads: expected a thread count in [0, 4096], got '" + std::to_string(t) + "'");
      c.threads = int(t);
    } else if (key == "thread_policy") c.threadPolicy = text(v, key);
    else if (key == "backend") c.backend = text(v, key);
    else if (key == "passes") {
      std::string list;
      for (const auto& n : names(v, key)) list += (list.empty() ? "" : ",") + n;
      c.passes = list.empty() ? "none" : list;
    } else if (key == "disable_pass") {
      for (const auto& n : names(v, key)) c.disabled.push_back(n);
    } else if (key == "memory") c.memory = text(v, key);
    else if (key == "precision") c.precision = text(v, key);
    else
      throw SettingFailure(std::string(function) + "(): unknown setting '" + clip(key) +
                           "'; expected one of: " + keyList());
  }
}

py::dict settingToDict(const driver::Setting& s) {
  py::dict d;
  d["batch"] = s.batch;
  d["qlen"] = s.qlen;
  d["mem_len"] = s.memLen;
  d["clamp_len"] = s.clampLen;
  d["same_length"] = s.sameLength;
  d["initial_memory"] = frontend::initialMemoryName(s.initialMemory);
  d["threads"] = s.threads;
  d["thread_policy"] = driver::threadPolicyName(s.threadPolicy);
  d["backend"] = s.backend;
  d["passes"] = s.resolved.passes;
  d["memory"] = driver::memoryForm(s);
  d["precision"] = driver::precisionName(s.precision);
  return d;
}

namespace {

bool isNativeInt64Array(const py::handle& object) {
  const auto& api = py::detail::npy_api::get();
  if (!api.PyArray_Check_(object.ptr())) return false;
  const auto* a = py::detail::array_proxy(object.ptr());
  const auto* d = py::detail::array_descriptor_proxy(a->descr);
  constexpr int kFlags = py::detail::npy_api::NPY_ARRAY_C_CONTIGUOUS_ | py::detail::npy_api::NPY_ARRAY_ALIGNED_;
  constexpr char kNative = std::endian::native == std::endian::little ? '<' : '>';
  return d->kind == 'i' && d->elsize == 8 && (d->byteorder == '=' || d->byteorder == kNative) &&
         d->subarray == nullptr && (a->flags & kFlags) == kFlags;
}

}  // namespace

namespace {

// Refuses an array of more ids than kMaxIdsElements (before it is converted or copied).
void checkIdsSize(py::ssize_t size, const char* what) {
  if (size > kMaxIdsElements)
    throw Error(std::string(what) + ": an integer array of " + std::to_string(size) + " elements; at most " +
                std::to_string(kMaxIdsElements) + " (2^26) token ids are taken in one call");
}

}  // namespace

TokenArray tokenArray(const py::handle& object, const char* what) {
  TokenArray out;
  // The common case, an aligned native int64 C-contiguous array of one or two
  // dimensions, is recognized from the array's own fields: numpy's general
  // conversion below is a long code path, and even array_t::check_ asks
  // numpy whether the dtypes are equivalent (its casting machinery, several
  // µs a call here); a qlen-1 loop pays that once per token.
  using Int64Array = py::array_t<std::int64_t, py::array::c_style>;
  if (isNativeInt64Array(object)) {
    auto direct = py::reinterpret_borrow<Int64Array>(object);
    if (direct.ndim() == 1 || direct.ndim() == 2) {
      checkIdsSize(direct.size(), what);
      out.oneDimensional = direct.ndim() == 1;
      const std::int64_t qlen = direct.shape(0), batch = out.oneDimensional ? 1 : direct.shape(1);
      out.tensor = ir::Tensor({ir::DType::I64, {qlen, batch}}, const_cast<std::int64_t*>(direct.data()), nullptr);
      out.array = std::move(direct);
      return out;
    }
  }
  py::array raw = py::array::ensure(object);
  if (!raw) {
    PyErr_Clear();
    throw Error(std::string(what) + ": expected an integer array [qlen, batch], got " + typeName(object));
  }
  const char kind = raw.dtype().kind();
  if (raw.size() > 0 && kind != 'i' && kind != 'u')
    throw Error(std::string(what) + ": expected an integer array [qlen, batch], got dtype " + shown(raw.dtype()));
  if (raw.ndim() != 1 && raw.ndim() != 2)
    throw Error(std::string(what) + ": expected an integer array [qlen, batch] or [qlen], got " +
                std::to_string(raw.ndim()) + " dimensions");
  // A broadcast view holds 2^40 elements in a few bytes: its size is checked before the int64 copy.
  checkIdsSize(raw.size(), what);
  out.oneDimensional = raw.ndim() == 1;
  // An int64 C-contiguous array is used as it is; anything else is converted once.
  auto converted = py::array_t<std::int64_t, py::array::c_style | py::array::forcecast>::ensure(raw);
  if (!converted) throw Error(std::string(what) + ": cannot be converted to an int64 array");
  const std::int64_t qlen = converted.shape(0), batch = out.oneDimensional ? 1 : converted.shape(1);
  out.tensor = ir::Tensor({ir::DType::I64, {qlen, batch}}, const_cast<std::int64_t*>(converted.data()), nullptr);
  out.array = std::move(converted);
  return out;
}

py::array_t<float> newFloatArray(const std::vector<std::int64_t>& shape) {
  std::vector<py::ssize_t> dims(shape.begin(), shape.end());
  return py::array_t<float>(dims);
}

py::array tensorArray(const ir::Tensor& t) {
  auto* keep = new ir::Tensor(t);
  py::capsule owner(keep, [](void* p) { delete static_cast<ir::Tensor*>(p); });
  std::vector<py::ssize_t> dims(t.shape().begin(), t.shape().end());
  switch (t.dtype()) {
    case ir::DType::F32:
      return py::array_t<float>(dims, keep->data<float>(), owner);
    case ir::DType::I64:
      return py::array_t<std::int64_t>(dims, keep->data<std::int64_t>(), owner);
    default:
      break;
  }
  throw InternalError("tensorArray: a tensor of an unexpected dtype");
}

ir::Tensor floatTensor(const py::handle& object, const std::string& what, py::list& keepAlive) {
  py::array raw = py::array::ensure(object);
  if (!raw) {
    PyErr_Clear();
    throw Error(what + ": expected a float32 array, got " + typeName(object));
  }
  const char kind = raw.dtype().kind();
  if (kind != 'f') throw Error(what + ": expected a float32 array, got dtype " + std::string(py::str(raw.dtype())));
  auto array = py::array_t<float, py::array::c_style | py::array::forcecast>::ensure(raw);
  if (!array) throw py::error_already_set();
  keepAlive.append(array);
  ir::Shape shape(array.shape(), array.shape() + array.ndim());
  return ir::Tensor({ir::DType::F32, shape}, const_cast<float*>(array.data()), nullptr);
}

}  // namespace txl::python
