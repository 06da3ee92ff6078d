// python/errors.h - txlc's errors as Python exceptions.
//
// Every C++ exception is turned into a Python one at the module's boundary
// (pybind11's exception translator), carrying the one-line message the
// command line prints after "txlc: error: ":
//   txl::Error           -> txlc.InputError   (a spec, weights, artifact, state, text or token problem)
//   SettingFailure       -> txlc.SettingError (a setting or keyword the model cannot run with)
//   txl::InternalError   -> txlc.InternalError (a bug in txlc)
//   std::bad_alloc       -> MemoryError
//   any other exception  -> txlc.InternalError
// txlc.InputError and txlc.SettingError derive from txlc.Error and ValueError.
#pragma once

#include <pybind11/pybind11.h>

#include <string>
#include <utility>

#include "ir/check.h"

namespace txl::python {

// A bad setting: the driver's txl::Error from resolving or checking one, re-thrown as this.
class SettingFailure : public Error {
 public:
  using Error::Error;
};

void bindErrors(pybind11::module_& m);

// Sets the Python error for the C++ exception in flight, as the translator
// above does (for a function called without pybind11's dispatcher: forward()).
// Call from a catch (...) block, then return nullptr to Python.
void setPythonError();

// Runs `f`; a txl::Error it throws is a setting error.
template <class F>
auto asSetting(F&& f) -> decltype(f()) {
  try {
    return std::forward<F>(f)();
  } catch (const SettingFailure&) {
    throw;
  } catch (const Error& e) {
    throw SettingFailure(e.what());
  }
}

}  // namespace txl::python
