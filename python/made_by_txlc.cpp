// python/made_by_txlc.cpp - madeByTxlcOnly(): __new__, __copy__, __deepcopy__, __reduce__ and __reduce_ex__ refused.
#include "python/made_by_txlc.h"

#include <map>
#include <string>

namespace txl::python {

namespace py = pybind11;

namespace {

// The message of each class's refusal, by type (written once, at import).
std::map<PyTypeObject*, std::string>& refusals() {
  static auto* m = new std::map<PyTypeObject*, std::string>;  // never destroyed: the types outlive any exit order
  return *m;
}

PyObject* refuseNew(PyTypeObject* type, PyObject*, PyObject*) {
  auto it = refusals().find(type);
  PyErr_SetString(PyExc_TypeError, it != refusals().end() ? it->second.c_str() : "cannot create this txlc object");
  return nullptr;
}

}  // namespace

void refuseUnconstructed() {
  throw py::type_error(
      "a txlc object that was never constructed (made with __new__): get a Model from txlc.load(), a Session from "
      "Model.session(), a Generation from Model.generate()");
}

void madeByTxlcOnly(py::handle cls, const char* factory) {
  const std::string name = "txlc." + py::str(cls.attr("__name__")).cast<std::string>();
  const std::string made = name + " is made by " + factory + " only";
  // pybind11 makes its instances with tp_alloc, not tp_new: this __new__ refuses Python's calls alone.
  cls.attr("__new__") = py::staticmethod(py::cpp_function(
      [made](const py::args&, const py::kwargs&) -> py::object { throw py::type_error("cannot create: " + made); },
      py::name("__new__")));
  // Setting __new__ made tp_new CPython's slot_tp_new, which lets pybind11_object.__new__(cls) through;
  // a C tp_new of the class's own makes that (and object.__new__(cls)) unsafe in CPython's eyes.
  auto* type = reinterpret_cast<PyTypeObject*>(cls.ptr());
  refusals()[type] = "cannot create: " + made;
  type->tp_new = refuseNew;
  PyType_Modified(type);
  const std::string copy =
      "cannot copy or pickle a " + name + " (" + made + "; its memory, mappings and sampler are not copied)";
  auto refuse = [copy](py::handle, const py::args&, const py::kwargs&) -> py::object { throw py::type_error(copy); };
  for (const char* method : {"__copy__", "__deepcopy__", "__reduce__", "__reduce_ex__", "__getstate__"})
    py::setattr(cls, method, py::cpp_function(refuse, py::name(method), py::is_method(cls)));
}

}  // namespace txl::python
