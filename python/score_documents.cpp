// python/score_documents.cpp - Model.score_documents: a corpus scored document by document, as
// `txlc score --documents` scores it.
//
// The corpus is a JSON Lines or plain-text file, or an iterable of dicts
// (each a JSON Lines object: "text" and an optional "id") or of strings (one
// document each). It runs the command's job (driver/score_job.h) in this
// process, with the GIL released, and returns each document's line as a dict
// and the summary the command writes with --summary.
#include <pybind11/stl.h>

#include "driver/compile.h"
#include "driver/distributed.h"
#include "driver/score_job.h"
#include "python/convert.h"
#include "python/errors.h"
#include "python/made_by_txlc.h"
#include "python/model.h"

namespace txl::python {

namespace {

// The documents of `corpus`: a path (str or os.PathLike), or an iterable of dicts or of strings.
std::vector<driver::Document> corpusDocuments(const py::object& corpus, driver::DocumentFormat format,
                                              std::string& source) {
  if (py::isinstance<py::str>(corpus) || py::hasattr(corpus, "__fspath__")) {
    source = pathArg(corpus, "corpus");
    py::gil_scoped_release release;
    return driver::readDocuments(source, format);
  }
  if (!py::hasattr(corpus, "__iter__"))
    throw py::type_error("score_documents: expected a path or an iterable of dicts or strings, got " +
                         std::string(py::str(py::type::handle_of(corpus).attr("__name__"))));
  const py::object dumps = py::module_::import("json").attr("dumps");
  std::string content;
  bool dicts = false, strings = false;
  for (const py::handle item : corpus) {
    if (py::isinstance<py::dict>(item)) {
      dicts = true;
      content += utf8Text(dumps(item, py::arg("ensure_ascii") = false), "corpus: a document");
    } else if (py::isinstance<py::str>(item)) {
      strings = true;
      const std::string line = utf8Text(item, "corpus: a document");
      if (line.find('\n') != std::string::npos)
        throw py::value_error("score_documents: a document string holds a line break (one document is one line)");
      content += line;
    } else {
      throw py::type_error("score_documents: expected each document as a dict or a str, got " +
                           std::string(py::str(py::type::handle_of(item).attr("__name__"))));
    }
    content += '\n';
    if (dicts && strings) throw py::type_error("score_documents: documents are all dicts or all strings, not both");
  }
  source = "<documents>";
  return driver::parseDocuments(content, source,
                                dicts ? driver::DocumentFormat::JsonLines : driver::DocumentFormat::Lines);
}

py::dict scoreDocuments(const std::shared_ptr<PyModel>& pm, const py::object& corpus, const py::object& formatObject,
                        std::int64_t maxTokens, bool strict, const py::kwargs& kwargs) {
  made(pm);
  const std::string format = utf8Text(formatObject, "format");
  const driver::Setting s = pm->resolve(kwargs, "score_documents");
  driver::DocumentJob job;
  job.docs = corpusDocuments(corpus, driver::documentFormat(format), job.source);
  if (maxTokens < 1) throw SettingFailure("max_tokens: expected a positive integer, got " + std::to_string(maxTokens));
  job.limits.maxTokens = maxTokens;
  job.strict = strict;
  job.threads = s.threads;
  job.compiled = pm->compiled(s);
  driver::DocumentJobResult r;
  {
    py::gil_scoped_release release;
    driver::applyThreads(s.threads);
    std::unique_ptr<driver::Processes> procs = driver::singleProcess();
    driver::SplitPhase phase{*procs};
    r = driver::scoreDocumentJob(pm->model, s, job, *procs, phase);
  }
  py::list documents;
  for (std::size_t i = 0; i < r.documents.size(); ++i)
    documents.append(toPython(nlohmann::json::parse(driver::outcomeLine(job.docs[i], r.documents[i]))));
  py::dict d;
  d["documents"] = documents;
  d["summary"] = toPython(r.summary);
  return d;
}

}  // namespace

void bindScoreDocuments(py::module_& m) {
  auto model = py::reinterpret_borrow<py::class_<PyModel, std::shared_ptr<PyModel>>>(m.attr("Model"));
  model.def("score_documents", &scoreDocuments, py::arg("corpus"), py::kw_only(), py::arg("format") = "auto",
            py::arg("max_tokens") = std::int64_t(1) << 20, py::arg("strict") = false,
            R"(score_documents(corpus, *, format='auto', max_tokens=1048576, strict=False, **setting) -> dict

Scores each document of a corpus on its own, as `txlc score --documents`
does: corpus is a file (JSON Lines with "text" and an optional "id", or one
document per line; format 'auto', 'lines' or 'jsonl'), or an iterable of
dicts (JSON Lines objects) or of strings (one document each). Returns
{"documents": [...], "summary": {...}}: each document's output line as a
dict (id, tokens, nll_sum, perplexity, bits_per_token, unk_tokens; or id and
error), in input order, and the summary `--summary` writes (documents,
scored, failed, tokens, nll_sum, nll_per_token, perplexity, bits_per_token,
seconds, ...). strict=True makes a document that cannot be scored an
InputError instead of an error entry.)");
}

}  // namespace txl::python
