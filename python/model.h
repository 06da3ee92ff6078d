// python/model.h - what the Python objects hold: a model with its chosen setting, and its compiled forms.
//
// A txlc.Model holds a PyModel through a shared_ptr; every Session and
// generation made from it holds the same PyModel, so deleting the Model's
// Python variable leaves them working. A PyModel compiles each distinct
// resolved setting once (driver::compile) and hands the compiled model to
// every session of that setting: sessions on several threads share its
// weights and constants (backend/session.h CompiledModel is immutable).
#pragma once

#include <pybind11/pybind11.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "backend/session.h"
#include "driver/model.h"
#include "driver/setting.h"
#include "python/made_by_txlc.h"

namespace txl::python {

namespace py = pybind11;

struct PyModel {
  TXLC_MADE_BY_TXLC_ONLY
  driver::Model model;
  driver::SettingChoice choice;  // load()'s keywords over the command line's defaults (threads 1)

  // The setting of `choice` with the call's keywords applied and checked (SettingFailure).
  driver::Setting resolve(const py::kwargs& kwargs, const char* function, bool run = true) const;
  // The compiled model of `s` (compiled once per distinct setting; the GIL is released meanwhile).
  std::shared_ptr<const backend::CompiledModel> compiled(const driver::Setting& s);

 private:
  std::mutex mutex_;
  std::map<std::string, std::shared_ptr<const backend::CompiledModel>> compiled_;
};

void bindModel(py::module_& m);
void bindSession(py::module_& m);
// Model.score_documents (python/score_documents.cpp), added to the class bindModel() made.
void bindScoreDocuments(py::module_& m);

// Python objects bound in session.cpp, made by Model's methods in model.cpp.
py::object makeSession(const std::shared_ptr<PyModel>& model, const py::kwargs& kwargs);
py::object makeGeneration(const std::shared_ptr<PyModel>& model, const py::object& prompt, std::int64_t n,
                          const py::object& temperature, const py::object& topK, const py::object& topP,
                          std::uint64_t seed, bool greedy, bool stream, const py::kwargs& kwargs);

}  // namespace txl::python
