// driver/model_summary.cpp - describeModel() and its text form.
#include "driver/model_summary.h"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <sstream>

#include "driver/compile.h"
#include "ir/check.h"
#include "passes/pipeline.h"

namespace txl::driver {

namespace {

// Bytes on disk: the file, or a directory's files (not recursive).
std::uint64_t bytesOnDisk(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_regular_file(path, ec)) return fs::file_size(path, ec);
  std::uint64_t total = 0;
  if (fs::is_directory(path, ec))
    for (const auto& e : fs::directory_iterator(path, ec))
      if (e.is_regular_file(ec)) total += e.file_size(ec);
  return total;
}

std::string mib(double bytes) {
  std::ostringstream s;
  s.setf(std::ios::fixed);
  s.precision(1);
  s << bytes / double(1 << 20) << " MiB";
  return s.str();
}

std::string shown(const std::string& s) {
  const bool plain = s.size() <= kMaxQuoted && std::all_of(s.begin(), s.end(), [](char c) {
                       const auto u = static_cast<unsigned char>(c);
                       return u >= 0x20 && u != 0x7f;
                     });
  return plain ? s : quote(s);
}

}  // namespace

nlohmann::json describeModel(const Model& m) {
  const frontend::ModelSpec& spec = m.spec;
  nlohmann::json d;
  d["path"] = m.path;
  d["form"] = m.form;
  d["model_id"] = m.modelId.empty() ? nlohmann::json(nullptr) : nlohmann::json(m.modelId);
  d["bytes_on_disk"] = m.form == "embedded" ? nlohmann::json(nullptr) : nlohmann::json(bytesOnDisk(m.path));

  // The weights: distinct buffers (tied names count once) and their types.
  std::set<const void*> seen;
  std::set<std::string> dtypes;
  std::int64_t parameters = 0;
  for (const auto& [name, t] : m.weights) {
    if (!seen.insert(t.raw()).second) continue;
    parameters += t.numel();
    dtypes.insert(std::string(ir::dtypeName(t.dtype())));
  }
  d["parameters"] = parameters;
  d["weight_bytes"] = ir::distinctBytes(m.weights);
  d["weight_tensors"] = m.weights.size();
  d["precision"] = dtypes.size() == 1 ? *dtypes.begin() : dtypes.empty() ? "none" : "mixed";
  d["weight_dtypes"] = dtypes;

  d["semantics"] = frontend::semanticsName(spec.semantics);
  d["spec"] = spec.toJson();
  if (m.vocabulary)
    d["vocabulary"] = {{"kind", m.vocabulary->kind() == frontend::VocabKind::Char ? "characters" : "words"},
                       {"size", m.vocabulary->size()}};
  else d["vocabulary"] = nullptr;

  const Setting s = defaultSetting(m);
  d["setting"] = {{"batch", s.batch},
                  {"qlen", s.qlen},
                  {"mem_len", s.memLen},
                  {"clamp_len", s.clampLen},
                  {"same_length", s.sameLength},
                  {"initial_memory", frontend::initialMemoryName(s.initialMemory)},
                  {"precision", precisionName(s.precision)},
                  {"memory_form", memoryForm(s)}};
  d["pipeline"] = s.resolved.passes;
  if (m.artifact) {
    // What info shows of an artifact is what run would use: an altered
    // stored graph is refused here as it is there.
    verifyStoredGraphs(*m.artifact, m.path);
    d["txlc_version"] = m.artifact->txlcVersion;
    d["compiled_on_cpu"] = m.artifact->cpuIsa;
    nlohmann::json graphs = nlohmann::json::array();
    for (const StoredGraph& g : m.artifact->graphs)
      graphs.push_back({{"role", g.role},
                        {"qlen", g.segment.qlen},
                        {"mlen", g.segment.mlen},
                        {"logprob", g.segment.logprob},
                        {"nll", g.segment.nll},
                        {"padded", g.segment.padded},
                        {"nodes", g.graph.contains("nodes") ? g.graph["nodes"].size() : 0}});
    d["graphs"] = graphs;
  }
  return d;
}

std::string modelSummaryText(const nlohmann::json& d) {
  std::ostringstream out;
  const nlohmann::json& sp = d["spec"];
  const nlohmann::json& st = d["setting"];
  // Strings come from files (an artifact's manifest, a spec): shown as they
  // are when short and printable, else quoted and escaped (ir/check.h).
  auto str = [](const nlohmann::json& v) { return v.is_string() ? shown(v.get<std::string>()) : v.dump(); };
  out << "model        " << str(d["path"]) << " (" << str(d["form"]) << ")\n";
  if (!d["model_id"].is_null()) out << "model id     " << str(d["model_id"]) << "\n";
  out << "architecture " << str(sp.value("n_layer", nlohmann::json())) << " layers, d_model "
      << str(sp.value("d_model", nlohmann::json())) << ", " << str(sp.value("n_head", nlohmann::json())) << " heads of "
      << str(sp.value("d_head", nlohmann::json())) << ", d_inner " << str(sp.value("d_inner", nlohmann::json())) << ", "
      << str(sp.value("n_token", nlohmann::json())) << " tokens\n";
  out << "semantics    " << str(d["semantics"]) << " (initial memory " << str(st["initial_memory"]) << ")\n";
  if (d["weight_tensors"].get<std::size_t>() == 0) {
    out << "weights      none read (a spec file: pass --weights)\n";
  } else {
    out << "weights      " << str(d["parameters"]) << " parameters, " << str(d["precision"]) << ", "
        << mib(d["weight_bytes"].get<double>()) << " in " << str(d["weight_tensors"]) << " tensors";
    if (!d["bytes_on_disk"].is_null()) out << "; " << mib(d["bytes_on_disk"].get<double>()) << " on disk";
    out << "\n";
  }
  if (d["vocabulary"].is_null()) out << "vocabulary   none\n";
  else out << "vocabulary   " << str(d["vocabulary"]["size"]) << " " << str(d["vocabulary"]["kind"]) << "\n";
  out << "setting      batch " << str(st["batch"]) << ", qlen " << str(st["qlen"]) << ", mem_len " << str(st["mem_len"])
      << ", clamp_len " << str(st["clamp_len"]) << (st["same_length"].get<bool>() ? ", same length" : "") << "; "
      << str(st["memory_form"]) << " memory" << (str(st["precision"]) == "f32" ? "" : ", " + str(st["precision"]))
      << "\n";
  std::string passes;
  for (const auto& p : d["pipeline"]) passes += (passes.empty() ? "" : ", ") + str(p);
  out << "pipeline     " << (passes.empty() ? "none" : passes) << "\n";
  if (d.contains("txlc_version"))
    out << "compiled     by txlc " << str(d["txlc_version"]) << " on " << str(d["compiled_on_cpu"]) << ", "
        << d["graphs"].size() << " stored graphs\n";
  if (d.contains("graphs"))
    for (const auto& g : d["graphs"])
      out << "  graph      " << str(g["role"]) << ": qlen " << str(g["qlen"]) << ", mlen " << str(g["mlen"])
          << (g["nll"].get<bool>() ? ", nll" : "") << (g["logprob"].get<bool>() ? ", logprob" : "")
          << (g["padded"].get<bool>() ? ", padded" : "") << ", " << str(g["nodes"]) << " nodes\n";
  return out.str();
}

}  // namespace txl::driver
