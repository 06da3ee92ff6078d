// python/session.cpp - txlc.Session (one set of streams with their memory) and txlc.Generation (sampling).
//
// A Session wraps a backend::Session of the model's compiled form for its
// setting. forward() views an int64 C-contiguous token array in place, takes
// result arrays (new, or its earlier ones nobody holds any more), then
// releases the GIL for the segment and the copy of its outputs into them (the
// session's own buffers are reused by its next segment, so results are
// copies; docs/PYTHON.md). forward() is a plain CPython method and Output a
// struct sequence: a qlen-1 loop calls it once per token. A mutex per session
// makes concurrent calls on one Session wait for each other instead of
// racing; sessions of one model run in parallel. The OpenMP thread count of
// the setting is applied in the calling thread before each segment (it is
// a per-thread value in OpenMP).
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <mutex>

#include "driver/compile.h"
#include "driver/generator.h"
#include "driver/state_file.h"
#include "frontend/atomic_file.h"
#include "python/convert.h"
#include "python/errors.h"
#include "python/made_by_txlc.h"
#include "python/model.h"

namespace txl::python {

namespace {

struct Output {
  py::object hidden, logprob, nll;
};

PyStructSequence_Field outputFields[] = {
    {"hidden", "float32 [qlen, batch, d_model] (or [qlen, d_model] for 1-D tokens): the last layer's output."},
    {"logprob",
     "float32 [qlen, batch, n_token] (or [qlen, n_token]): log-probabilities of the next token; None "
     "with logprob=False."},
    {"nll", "float32 [qlen, batch] (or [qlen]): negative log-likelihood of the targets in nats; None without targets."},
    {nullptr, nullptr}};
PyStructSequence_Desc outputDesc{
    "txlc.Output",
    "What Session.forward() returns: hidden, logprob and nll (None when not asked for); a named tuple, so\n"
    "`hidden, logprob, nll = session.forward(tokens)` unpacks it.",
    outputFields, 3};
PyTypeObject* outputType = nullptr;

PyObject* outputRepr(PyObject* self) {
  try {
    auto shape = [&](Py_ssize_t i) -> std::string {
      py::handle a = PyStructSequence_GetItem(self, i);
      return a.is_none() ? "None" : std::string(py::str(a.attr("shape")));
    };
    const std::string text = "<txlc.Output hidden=" + shape(0) + " logprob=" + shape(1) + " nll=" + shape(2) + ">";
    return PyUnicode_FromStringAndSize(text.data(), Py_ssize_t(text.size()));
  } catch (...) {
    setPythonError();
    return nullptr;
  }
}

struct PySession {
  TXLC_MADE_BY_TXLC_ONLY
  std::shared_ptr<PyModel> model;
  driver::Setting setting;
  std::shared_ptr<const backend::CompiledModel> compiled;
  std::unique_ptr<backend::Session> session;
  std::mutex mutex;
  // How long the last forward() spent in backend::Session::forward itself,
  // and every forward() so far, for bench/python_overhead.py (the rest of
  // the call is the module's).
  std::int64_t lastForwardNs = 0, totalForwardNs = 0;

  // Result arrays this session made, reused once nothing else holds one.
  // Allocating a NumPy array is a long path through NumPy (its allocator
  // looks its handler up in a context variable), and after a segment has
  // streamed the weights through the caches it costs more than the rest of
  // the call. An array here whose only reference is this list is invisible
  // to the caller (a view or a memoryview of it holds a reference), so it is
  // filled again rather than a new one made. Checked and taken with the GIL
  // held, so two threads never take one array.
  std::vector<py::array_t<float>> arrays;
  static constexpr std::size_t kKeptArrays = 8;  // hidden, logprob, nll, two calls deep, and spare

  py::array_t<float> reusedArray(const std::vector<std::int64_t>& dims) {
    auto sameShape = [&](const py::array_t<float>& a) {
      if (a.ndim() != py::ssize_t(dims.size())) return false;
      for (std::size_t i = 0; i < dims.size(); ++i)
        if (a.shape(py::ssize_t(i)) != dims[i]) return false;
      return true;
    };
    for (const py::array_t<float>& a : arrays)
      if (Py_REFCNT(a.ptr()) == 1 && sameShape(a)) return a;
    py::array_t<float> fresh = newFloatArray(dims);
    if (arrays.size() < kKeptArrays) {
      arrays.push_back(fresh);
    } else {  // replace one nobody holds (of another shape), if any
      for (py::array_t<float>& a : arrays)
        if (Py_REFCNT(a.ptr()) == 1) {
          a = fresh;
          break;
        }
    }
    return fresh;
  }

  // The Output objects forward() returned, reused like the arrays: one only
  // this list holds is refilled, not made again (PyStructSequence_New looks
  // its field counts up in the type's dict, a cold path after a segment).
  std::vector<py::object> outputs;
  static constexpr std::size_t kKeptOutputs = 3;

  // Empties the Output objects nobody else holds, so that their arrays can be reused.
  void releaseIdleOutputs() {
    for (py::object& o : outputs)
      if (Py_REFCNT(o.ptr()) == 1)
        for (Py_ssize_t i = 0; i < 3; ++i) setOutputItem(o.ptr(), i, py::none());
  }
  static void setOutputItem(PyObject* output, Py_ssize_t i, py::object value) {
    PyObject* old = PyStructSequence_GET_ITEM(output, i);
    PyStructSequence_SET_ITEM(output, i, value.release().ptr());
    Py_XDECREF(old);
  }

  // `o` as an Output object (a new reference): an idle one of this session refilled, or a new one.
  PyObject* outputObject(Output&& o) {
    PyObject* r = nullptr;
    for (py::object& p : outputs)
      if (Py_REFCNT(p.ptr()) == 1) {
        r = p.inc_ref().ptr();
        break;
      }
    if (!r) {
      r = PyStructSequence_New(outputType);
      if (!r) throw py::error_already_set();
      if (outputs.size() < kKeptOutputs) outputs.push_back(py::reinterpret_borrow<py::object>(r));
    }
    setOutputItem(r, 0, std::move(o.hidden));
    setOutputItem(r, 1, std::move(o.logprob));
    setOutputItem(r, 2, std::move(o.nll));
    return r;
  }

  // Runs one segment; the outputs are copied into arrays allocated here (or reused: reusedArray).
  // With `packed`, the Output object holding them is set there before the segment runs: after a
  // segment that streamed the weights the interpreter's data is out of the caches, so only the
  // copies, the GIL and the return are left for then.
  Output forward(const py::object& tokens, const py::object& targets, bool logprob, bool hidden,
                 py::object* packed = nullptr) {
    releaseIdleOutputs();
    TokenArray in = tokenArray(tokens, "tokens");
    std::optional<TokenArray> tg;
    if (!targets.is_none()) tg = tokenArray(targets, "targets");
    const auto& info = compiled->info();
    const std::int64_t q = in.tensor.shape()[0], b = in.tensor.shape()[1];
    checkSegment(q);
    // Shapes as the caller gave them: a 1-D input gives results without the batch axis.
    auto shape = [&](std::optional<std::int64_t> last) {
      std::vector<std::int64_t> s{q};
      if (!in.oneDimensional) s.push_back(b);
      if (last) s.push_back(*last);
      return s;
    };
    const bool shapeOk = b == info.batch;  // else the session names the mismatch; allocate nothing
    Output out{py::none(), py::none(), py::none()};
    float *hp = nullptr, *lpp = nullptr, *np = nullptr;
    auto result = [&](py::object& slot, const std::vector<std::int64_t>& dims) {
      py::array_t<float> a = reusedArray(dims);
      slot = a;
      return a.mutable_data();
    };
    if (shapeOk && hidden) hp = result(out.hidden, shape(info.dModel));
    if (shapeOk && logprob) lpp = result(out.logprob, shape(info.nToken));
    if (shapeOk && tg) np = result(out.nll, shape(std::nullopt));
    if (packed) *packed = py::reinterpret_steal<py::object>(outputObject(Output{out.hidden, out.logprob, out.nll}));
    {
      py::gil_scoped_release release;
      std::lock_guard<std::mutex> lock(mutex);
      driver::applyThreads(setting.threads);
      const auto start = std::chrono::steady_clock::now();
      backend::ForwardResult r = session->forward(in.tensor, tg ? &tg->tensor : nullptr, logprob);
      lastForwardNs =
          std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count();
      totalForwardNs += lastForwardNs;
      auto copy = [](float* dst, const ir::Tensor* src) {
        if (dst && src) std::memcpy(dst, src->data<float>(), std::size_t(src->numel()) * sizeof(float));
      };
      copy(hp, r.hidden);
      copy(lpp, r.logprob);
      copy(np, r.nll);
    }
    return out;
  }

  // A segment longer than the setting's qlen is planned on first use: its
  // length is checked against the setting's bound and its memory against the
  // machine's (driver::checkMemoryFits) before anything is allocated.
  void checkSegment(std::int64_t q) const {
    if (q <= setting.qlen) return;
    if (q > driver::kMaxLength)
      throw Error("tokens: a segment of " + std::to_string(q) + " tokens; at most " +
                  std::to_string(driver::kMaxLength) + " (the qlen bound)");
    driver::Setting longer = setting;
    longer.qlen = q;
    driver::checkMemoryFits(model->model.spec, longer, "tokens");
  }

  py::dict state() {
    ir::TensorMap state;
    {
      py::gil_scoped_release release;
      std::lock_guard<std::mutex> lock(mutex);
      state = session->saveState();
    }
    py::dict d;
    for (const auto& [name, t] : state) d[py::str(name)] = tensorArray(t);
    return d;
  }

  // A memory as state() returns it: every key, dtype and shape is checked
  // against the model before a value is converted (a broadcast view of 2^40
  // elements is refused from its shape), then every value must be finite.
  void loadState(const py::object& state) {
    if (py::isinstance<py::dict>(state)) {
      std::vector<std::pair<std::string, py::array>> arrays;
      std::map<std::string, ir::TensorType> types;
      for (const auto& [k, v] : state.cast<py::dict>()) {
        if (!PyUnicode_Check(k.ptr()))
          throw py::type_error("state: expected str keys (\"mem.0\", ...), got a key of type " + typeName(k));
        const std::string name = utf8Text(k, "state: a key");
        py::array raw = py::array::ensure(v);
        if (!raw) {
          PyErr_Clear();
          throw Error("state: tensor " + quote(name) + ": expected a float32 array, got " + typeName(v));
        }
        if (raw.dtype().kind() != 'f')
          throw Error("state: tensor " + quote(name) + ": expected a float32 array, got dtype " +
                      std::string(py::str(raw.dtype())));
        types.emplace(name, ir::TensorType{ir::DType::F32, ir::Shape(raw.shape(), raw.shape() + raw.ndim())});
        arrays.emplace_back(name, raw);
      }
      backend::checkStateTypes(*compiled, types);
      py::list keep;
      ir::TensorMap map;
      for (const auto& [name, raw] : arrays) map[name] = floatTensor(raw, "state: tensor '" + name + "'", keep);
      py::gil_scoped_release release;
      checkFinite(map, "state");
      std::lock_guard<std::mutex> lock(mutex);
      session->loadState(map);
      return;
    }
    if (!PyUnicode_Check(state.ptr()) && !PyBytes_Check(state.ptr()) && !py::hasattr(state, "__fspath__"))
      throw py::type_error("state: expected a dict as state() returns, or a state file's path, got " + typeName(state));
    const std::string path = pathArg(state, "state");
    py::gil_scoped_release release;
    ir::TensorMap map = driver::readStateFile(model->model, *compiled, path);
    // A state file is the session's own data, not the model's: save_state() may replace it.
    frontend::forgetInputFile(path);
    checkFinite(map, path);
    std::lock_guard<std::mutex> lock(mutex);
    driver::loadState(*session, map, path);
  }

  // A NaN or an infinity in a memory would make every later output NaN: refused, naming the tensor.
  static void checkFinite(const ir::TensorMap& map, const std::string& source) {
    for (const auto& [name, t] : map) {
      const float* p = t.data<float>();
      const std::int64_t n = t.numel();
      std::int64_t bad = 0, first = -1;
      for (std::int64_t i = 0; i < n; ++i)
        if (!std::isfinite(p[i]) && bad++ == 0) first = i;
      if (bad == 0) continue;
      const float v = p[first];
      throw Error(source + ": tensor " + quote(name) + ": element " + std::to_string(first) + " is " +
                  (std::isnan(v) ? "NaN"
                   : v > 0       ? "Inf"
                                 : "-Inf") +
                  " (" + std::to_string(bad) + " non-finite values); non-finite memory is refused");
    }
  }

  void saveState(const py::object& path) {
    const std::string p = pathArg(path, "path");
    py::gil_scoped_release release;
    std::lock_guard<std::mutex> lock(mutex);
    driver::writeStateFile(*session, model->model, setting, p);
  }
};

std::shared_ptr<PySession> newSession(const std::shared_ptr<PyModel>& model, const driver::Setting& s) {
  auto ps = std::make_shared<PySession>();
  ps->model = model;
  ps->setting = s;
  ps->compiled = model->compiled(s);
  py::gil_scoped_release release;
  ps->session = std::make_unique<backend::Session>(ps->compiled);
  return ps;
}

// A Generation may be iterated from several threads: a mutex per generation
// makes each next() whole (the countdown, the sampled token, its id and its
// text together), so the threads share one sequence of tokens, in order, as
// one thread would get it.
struct Generation {
  TXLC_MADE_BY_TXLC_ONLY
  std::shared_ptr<PySession> session;
  std::unique_ptr<driver::Generator> generator;
  const frontend::Vocabulary* vocab = nullptr;
  std::int64_t remaining = 0, previous = -1, promptTokens = 0;
  std::vector<std::int64_t> ids;
  std::mutex mutex;

  std::string next() {
    std::unique_lock<std::mutex> turn(mutex, std::defer_lock);
    {
      py::gil_scoped_release release;  // wait for another thread's next() without holding the GIL
      turn.lock();
    }
    if (remaining <= 0) throw py::stop_iteration();
    std::int64_t id = 0;
    {
      py::gil_scoped_release release;
      std::lock_guard<std::mutex> lock(session->mutex);
      driver::applyThreads(session->setting.threads);
      id = generator->next();
    }
    --remaining;
    ids.push_back(id);
    std::string piece = vocab->decodeToken(id, previous);
    previous = id;
    return piece;
  }
};

}  // namespace

py::object makeSession(const std::shared_ptr<PyModel>& model, const py::kwargs& kwargs) {
  made(model);
  return py::cast(newSession(model, model->resolve(kwargs, "session")));
}

py::object makeGeneration(const std::shared_ptr<PyModel>& model, const py::object& promptObject, std::int64_t n,
                          const py::object& temperature, const py::object& topK, const py::object& topP,
                          std::uint64_t seed, bool greedy, bool stream, const py::kwargs& kwargs) {
  made(model);
  const std::string prompt = utf8Text(promptObject, "prompt");
  // Types first (TypeError naming the keyword), then the sampler's ranges (SettingError).
  const bool hasT = !temperature.is_none(), hasK = !topK.is_none(), hasP = !topP.is_none();
  const double t = hasT ? numberArg(temperature, "temperature") : 0;
  const std::int64_t k = hasK ? integerArg(topK, "top_k") : 0;
  const double p = hasP ? numberArg(topP, "top_p") : 0;
  py::kwargs kw = kwargs;
  if (!kw.contains("batch")) kw["batch"] = 1;  // one stream
  const driver::Setting s = model->resolve(kw, "generate");
  driver::SamplerOptions so;
  so.greedy = greedy;
  so.seed = seed;
  asSetting([&] {
    if (greedy && ((hasT && t != 0) || hasK || hasP))
      throw Error("--greedy: excludes --temperature, --top-k and --top-p");
    if (n < 0) throw Error("-n: expected a non-negative integer, got '" + std::to_string(n) + "'");
    if (hasT) so.temperature = t;
    if (hasK) so.topK = k;
    if (hasP) so.topP = p;
    driver::checkSamplerOptions(so);
  });
  const frontend::Vocabulary& vocab = driver::requireVocabulary(model->model, "generate");
  std::vector<std::int64_t> ids = driver::encodePrompt(vocab, prompt);
  auto g = std::make_shared<Generation>();
  g->session = newSession(model, s);
  g->vocab = &vocab;
  g->remaining = n;
  g->previous = ids.back();
  g->promptTokens = std::int64_t(ids.size());
  {
    py::gil_scoped_release release;
    std::lock_guard<std::mutex> lock(g->session->mutex);
    driver::applyThreads(s.threads);
    g->generator = std::make_unique<driver::Generator>(*g->session->session, s.qlen, so);
    g->generator->feedPrompt(ids);
  }
  if (stream) return py::cast(g);
  while (g->remaining > 0) g->next();
  return py::str(vocab.decode(g->ids));
}

constexpr const char* kForwardDoc = R"(forward(tokens, targets=None, logprob=True) -> Output

Runs one segment and advances the memory.

tokens: int64 token ids [qlen, batch] (time-major, as the reference; a 1-D
array [qlen] is batch 1), each in [0, n_token). Any integer array or a list
is accepted; an int64 C-contiguous array is read in place, others are
converted once. targets: the same shape, the next token of each position.

Returns an Output with new float32 arrays (copies: the session's buffers
are reused by the next segment):
  hidden   [qlen, batch, d_model]
  logprob  [qlen, batch, n_token]   (None with logprob=False)
  nll      [qlen, batch]            (None without targets; natural log)
For 1-D tokens the batch axis is left out. The GIL is released while it runs.)";

// Session.forward() is called once per segment, and a loop over single
// tokens calls it once per token, right after the segment streamed the
// weights through the caches. So it is a plain CPython method (vectorcall,
// METH_FASTCALL | METH_KEYWORDS) rather than a pybind11 function: pybind11's
// general dispatcher (overload records, argument loaders, keyword matching)
// was the larger part of the call's cost from Python (docs/PYTHON.md,
// "Overhead"). The arguments are those of the signature in kForwardDoc;
// errors are the same Python exceptions (setPythonError).
PyObject* forwardMethod(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  try {
    static constexpr const char* kNames[3] = {"tokens", "targets", "logprob"};
    PyObject* given[3] = {nullptr, nullptr, nullptr};
    if (nargs > 3) throw py::type_error("forward() takes at most 3 arguments (" + std::to_string(nargs) + " given)");
    for (Py_ssize_t i = 0; i < nargs; ++i) given[i] = args[i];
    const Py_ssize_t keywords = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t k = 0; k < keywords; ++k) {
      const char* name = PyUnicode_AsUTF8(PyTuple_GET_ITEM(kwnames, k));
      if (!name) throw py::error_already_set();
      std::size_t i = 0;
      while (i < 3 && std::strcmp(name, kNames[i]) != 0) ++i;
      if (i == 3) throw py::type_error(std::string("forward() got an unexpected keyword argument '") + name + "'");
      if (given[i]) throw py::type_error(std::string("forward() got multiple values for argument '") + name + "'");
      given[i] = args[nargs + k];
    }
    if (!given[0]) throw py::type_error("forward() missing required argument 'tokens'");
    bool logprob = true;
    if (given[2]) {
      const int truth = PyObject_IsTrue(given[2]);
      if (truth < 0) throw py::error_already_set();
      logprob = truth != 0;
    }
    // The descriptor only passes instances of Session (or of a subclass); a
    // Session is made by Model.session() alone, so its holder is there.
    auto holder = reinterpret_cast<py::detail::instance*>(self)->get_value_and_holder();
    if (!holder.holder_constructed()) refuseUnconstructed();
    PySession& s = *holder.holder<std::shared_ptr<PySession>>();
    py::object result;
    s.forward(py::reinterpret_borrow<py::object>(given[0]),
              given[1] ? py::reinterpret_borrow<py::object>(given[1]) : py::none(), logprob, true, &result);
    return result.release().ptr();
  } catch (...) {
    setPythonError();
    return nullptr;
  }
}

void bindSession(py::module_& m) {
  // Output: a struct sequence (a named tuple made in C), so a call makes it
  // with one allocation instead of a pybind11 instance and its registration.
  outputType = PyStructSequence_NewType(&outputDesc);
  if (!outputType) throw py::error_already_set();
  outputType->tp_repr = outputRepr;  // shapes, not whole arrays
  PyType_Modified(outputType);
  m.attr("Output") = py::handle(reinterpret_cast<PyObject*>(outputType));

  auto sessionClass =
      py::class_<PySession, std::shared_ptr<PySession>>(
          m, "Session", py::is_final(),
          R"(Streams of tokens with their recurrent memory (Model.session()).

Each forward() runs one segment of qlen tokens for every stream against the
memory the previous segments left (up to mem_len positions), exactly as the
reference carries it. Not for two threads at once (calls on one Session wait
for each other); use one Session per thread.)")
          .def(
              "nll",
              [](PySession& s, const py::object& tokens, const py::object& targets) {
                return s.forward(tokens, targets, false, false).nll;
              },
              py::arg("tokens"), py::arg("targets"),
              R"(nll(tokens, targets) -> numpy.ndarray

Runs one segment (advancing the memory) and returns only the negative
log-likelihood of `targets`, float32 [qlen, batch] (or [qlen] for 1-D
tokens), without computing the full log-probabilities.)")
          .def(
              "reset",
              [](PySession& s) {
                std::lock_guard<std::mutex> lock(s.mutex);
                s.session->reset();
              },
              "Forgets the memory: the next segment starts fresh streams.")
          .def_property_readonly(
              "mlen",
              [](PySession& s) {
                std::lock_guard<std::mutex> lock(s.mutex);
                return s.session->mlen();
              },
              "Positions of memory held now (0 at the start; at most mem_len).")
          .def_property_readonly(
              "batch", [](const PySession& s) { return s.setting.batch; }, "Streams side by side.")
          .def_property_readonly(
              "mem_len", [](const PySession& s) { return s.setting.memLen; }, "Positions of memory kept.")
          .def_property_readonly(
              "qlen", [](const PySession& s) { return s.setting.qlen; },
              "The usual segment length of the setting (any other works; each new one is planned on first use).")
          .def_property_readonly(
              "setting", [](const PySession& s) { return settingToDict(s.setting); }, "The resolved setting.")
          .def_property_readonly(
              "model", [](const PySession& s) { return s.model; }, "The Model this session runs.")
          .def_property_readonly(
              "_last_forward_ns", [](const PySession& s) { return s.lastForwardNs; },
              "Nanoseconds the last forward() spent in the C++ session's forward (bench/python_overhead.py).")
          .def_property_readonly(
              "_forward_ns_total", [](const PySession& s) { return s.totalForwardNs; },
              "Nanoseconds every forward() so far spent in the C++ session's forward (bench/python_overhead.py).")
          .def_property_readonly(
              "plan_count",
              [](PySession& s) {
                std::lock_guard<std::mutex> lock(s.mutex);
                return s.session->planCount();
              },
              "Segment plans built so far (one per distinct segment shape met).")
          .def(
              "state", [](PySession& s) { return s.state(); }, R"(state() -> dict[str, numpy.ndarray]

The memory: {"mem.<slot>": float32 [mlen, batch, width]} (copies). In the
default kv form slot l holds layer l's projected keys and values; with
memory='hidden', slot l is layer l's input as the reference keeps it.)")
          .def(
              "load_state", [](PySession& s, const py::object& state) { s.loadState(state); }, py::arg("state"),
              R"(load_state(state)

Restores a memory: a dict as state() returns, or the path of a state file
(save_state(), `txlc run --state-out`), which must name this model.
Continuing from it gives bit for bit what the saved session would have.)")
          .def(
              "save_state", [](PySession& s, const py::object& path) { s.saveState(path); }, py::arg("path"),
              R"(save_state(path)

Writes the memory as a state file (safetensors, format txlc-state/1, naming
the model), which load_state() and `txlc run --state-in` read.)")
          .def("__repr__", [](PySession& s) {
            return "<txlc.Session batch=" + std::to_string(s.setting.batch) +
                   " mem_len=" + std::to_string(s.setting.memLen) + " mlen=" + std::to_string(s.session->mlen()) + ">";
          });

  static PyMethodDef forwardDef{"forward", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(forwardMethod)),
                                METH_FASTCALL | METH_KEYWORDS, kForwardDoc};
  py::object forward = py::reinterpret_steal<py::object>(
      PyDescr_NewMethod(reinterpret_cast<PyTypeObject*>(sessionClass.ptr()), &forwardDef));
  if (!forward) throw py::error_already_set();
  sessionClass.attr("forward") = forward;
  madeByTxlcOnly(sessionClass, "Model.session()");

  // Methods take self by reference (a TypeError for None), never as a member function pointer (a null `this`).
  auto generationClass = py::class_<Generation, std::shared_ptr<Generation>>(
      m, "Generation", py::is_final(),
      "An iterator over generated tokens' text (Model.generate()); several threads may iterate one: each next() "
      "is whole, and they share the sequence one thread would get.");
  generationClass.def("__iter__", [](const std::shared_ptr<Generation>& g) { return made(g); })
      .def("__next__", [](Generation& g) { return g.next(); })
      .def_property_readonly(
          "token_ids", [](const Generation& g) { return g.ids; }, "The token ids chosen so far.")
      .def_property_readonly(
          "text", [](const Generation& g) { return g.vocab->decode(g.ids); }, "The text chosen so far.")
      .def_property_readonly(
          "prompt_tokens", [](const Generation& g) { return g.promptTokens; }, "Tokens in the prompt.")
      .def_property_readonly(
          "remaining", [](const Generation& g) { return g.remaining; }, "Tokens still to generate.");
  madeByTxlcOnly(generationClass, "Model.generate()");
}

}  // namespace txl::python
