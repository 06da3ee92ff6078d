// python/errors.cpp - the exception classes and the translator.
#include "python/errors.h"

#include <new>

namespace txl::python {

namespace py = pybind11;

namespace {
// The exception objects live as long as the module (pybind11's idiom: a
// static holder that is never destroyed, since the interpreter owns them).
py::handle error, inputError, settingError, internalError;

// pybind11 casts an instance whose C++ object was never made (Session.__new__ through its base,
// None for self) to a null reference or holder: a TypeError, never a call on garbage.
constexpr const char* kUnconstructed =
    "a txlc object that was never constructed (made with __new__, or None): get a Model from txlc.load(), a "
    "Session from Model.session(), a Generation from Model.generate()";
}  // namespace

void bindErrors(py::module_& m) {
  error = PyErr_NewExceptionWithDoc("txlc.Error", "Any problem txlc reports: the command line's one-line message.",
                                    PyExc_Exception, nullptr);
  py::tuple inputBases = py::make_tuple(error, py::handle(PyExc_ValueError));
  inputError = PyErr_NewExceptionWithDoc(
      "txlc.InputError", "A spec, weights, artifact, state, text or token-id input is wrong (txlc's exit code 3).",
      inputBases.ptr(), nullptr);
  py::tuple settingBases = py::make_tuple(error, py::handle(PyExc_ValueError));
  settingError = PyErr_NewExceptionWithDoc(
      "txlc.SettingError",
      "A setting (batch, qlen, mem_len, backend, passes, sampling, ...) is out of range, unknown, or needs more "
      "memory than the machine has.",
      settingBases.ptr(), nullptr);
  internalError =
      PyErr_NewExceptionWithDoc("txlc.InternalError", "A bug in txlc: please report it.", error.ptr(), nullptr);
  m.attr("Error") = error;
  m.attr("InputError") = inputError;
  m.attr("SettingError") = settingError;
  m.attr("InternalError") = internalError;

  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const py::error_already_set&) {
      throw;  // a Python exception raised under C++ (a callback, KeyboardInterrupt): pybind11 restores it
    } catch (const py::cast_error&) {
      setPythonError();  // a TypeError naming the problem, not pybind11's RuntimeError
    } catch (const py::reference_cast_error&) {
      setPythonError();
    } catch (const py::builtin_exception&) {
      throw;  // pybind11's own (stop_iteration, cast_error, type_error, ...)
    } catch (...) {
      setPythonError();
    }
  });
}

void setPythonError() {
  try {
    throw;
  } catch (py::error_already_set& e) {
    e.restore();
  } catch (const py::reference_cast_error&) {
    PyErr_SetString(PyExc_TypeError, kUnconstructed);
  } catch (const py::cast_error& e) {
    // pybind11's holder cast of an instance nobody constructed, or a cast the module did not check first.
    const std::string what = e.what();
    if (what.rfind("Unable to cast from non-held to held instance", 0) == 0)
      PyErr_SetString(PyExc_TypeError, kUnconstructed);
    else PyErr_SetString(PyExc_TypeError, ("an argument of the wrong type: " + oneLine(what)).c_str());
  } catch (const py::builtin_exception& e) {
    e.set_error();
  } catch (const SettingFailure& e) {
    PyErr_SetString(settingError.ptr(), oneLine(e.what()).c_str());
  } catch (const Error& e) {
    PyErr_SetString(inputError.ptr(), oneLine(e.what()).c_str());
  } catch (const InternalError& e) {
    PyErr_SetString(internalError.ptr(), oneLine(e.what()).c_str());
  } catch (const std::bad_alloc&) {
    PyErr_SetString(PyExc_MemoryError, "out of memory");
  } catch (const std::exception& e) {
    PyErr_SetString(internalError.ptr(), ("internal error: " + oneLine(e.what())).c_str());
  } catch (...) {
    PyErr_SetString(internalError.ptr(), "internal error: an unknown exception");
  }
}

}  // namespace txl::python
