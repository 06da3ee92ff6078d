// python/module.cpp - the `txlc` Python module: txlc's driver API from Python (docs/PYTHON.md).
//
//   import txlc
//   m = txlc.load("models/kjv-char")
//   m.score("models/kjv-char/valid.txt")["bits_per_char"]
//   s = m.session(batch=2)
//   out = s.forward(tokens)            # int64 [qlen, 2] -> out.hidden, out.logprob
#include <pybind11/pybind11.h>

#include "frontend/atomic_file.h"
#include "python/convert.h"
#include "python/errors.h"
#include "python/model.h"

PYBIND11_MODULE(txlc, m) {
  m.doc() = R"(txlc: a compiler for Transformer-XL language models on oneDNN, from Python.

load() opens a model (directory, spec file with weights, artifact,
checkpoint folder); Model.score / generate / encode / decode / inspect run
it whole; Model.session() gives a Session whose forward() runs one segment
of NumPy token ids against the recurrent memory; compile() writes an
artifact or a standalone executable. Errors are txlc.Error subclasses
carrying the command line's one-line messages. docs/PYTHON.md in the
repository is the reference.)";
  m.attr("__version__") = TXLC_VERSION;
  // The command line's rule for this process: an output (compile(), save_state()) never replaces
  // a file txlc has read in it - a model's spec, weights, vocabulary or artifact, a text scored
  // (frontend/atomic_file.h); load_state() lets go of its state file (save_state() may replace it).
  txl::frontend::protectInputs();
  txl::python::bindErrors(m);
  txl::python::bindModel(m);
  txl::python::bindSession(m);
  pybind11::tuple keys(std::size(txl::python::kSettingKeys));
  for (std::size_t i = 0; i < keys.size(); ++i) keys[i] = txl::python::kSettingKeys[i];
  m.attr("SETTING_KEYS") = keys;
}
