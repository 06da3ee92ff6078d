// python/made_by_txlc.h - Model, Session and Generation exist only as txlc makes them.
//
// Their C++ objects are made by txlc.load(), Model.session() and
// Model.generate(); Python cannot make one (Session() or Session.__new__:
// TypeError naming the factory) nor copy one (copy.copy, copy.deepcopy,
// pickle: TypeError - a session's memory, a model's mappings and a
// generation's sampler are not data to duplicate). An instance made all the
// same has no C++ object. pybind11 would allocate one, uninitialized, the
// first time a method took it as `self` (its lazy allocation of a missing
// value); each class refuses that with TXLC_MADE_BY_TXLC_ONLY (a class
// operator new that raises TypeError), so every method and property of such
// an instance is a TypeError, never a call on garbage. The classes' tp_new
// refuses too, which makes object.__new__(cls) and pybind11_object.__new__(cls)
// "not safe" TypeErrors in CPython.
#pragma once

#include <pybind11/pybind11.h>

#include <cstddef>
#include <memory>
#include <new>

namespace txl::python {

// TypeError: an instance without its C++ object (pybind11's lazy allocation asked for one).
[[noreturn]] void refuseUnconstructed();

// Makes `cls` (a bound class) refuse __new__, copies and pickling; `factory`
// names what makes one ("txlc.load()").
void madeByTxlcOnly(pybind11::handle cls, const char* factory);

// `self` taken as a holder: pybind11 passes None as an empty one (Model.session(None)).
template <class T>
const std::shared_ptr<T>& made(const std::shared_ptr<T>& self) {
  if (!self) refuseUnconstructed();
  return self;
}

}  // namespace txl::python

// Inside a bound struct: only std::make_shared makes one (with the global placement new).
#define TXLC_MADE_BY_TXLC_ONLY                                                     \
  static void* operator new(std::size_t) { ::txl::python::refuseUnconstructed(); } \
  static void operator delete(void* p) noexcept { ::operator delete(p); }

namespace txl::python {}  // namespace txl::python
