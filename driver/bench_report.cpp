// driver/bench_report.cpp - the formats of bench_report.h.
#include "driver/bench_report.h"

#include <algorithm>
#include <iomanip>
#include <map>
#include <sstream>

#include "driver/build_info.h"
#include "ir/check.h"

namespace txl::driver {

namespace {

// A profile row's kind: "op primitive impl", then "(1 thread)" for a serial step.
std::string stepKind(const ProfileRow& p) {
  return p.op + " " + p.primitive + " " + p.impl + (p.serial ? " (1 thread)" : "");
}

// The profile of one case: time per kind of step, then the slowest steps.
std::string profileText(const BenchReport& r) {
  if (r.profile.empty()) return "";
  std::ostringstream out;
  out.setf(std::ios::fixed);
  double total = 0;
  for (const auto& p : r.profile) total += p.ms;
  std::map<std::string, std::pair<double, int>> byKind;
  for (const auto& p : r.profile) {
    auto& e = byKind[stepKind(p)];
    e.first += p.ms;
    e.second += 1;
  }
  std::vector<std::pair<std::string, std::pair<double, int>>> kinds(byKind.begin(), byKind.end());
  std::sort(kinds.begin(), kinds.end(), [](auto& a, auto& b) { return a.second.first > b.second.first; });
  out.precision(3);
  out << "\nprofile: " << total << " ms per segment with a wait after every step (" << r.profile.size()
      << " steps)\n  ms/segment      %  steps  op primitive impl\n";
  for (const auto& [k, v] : kinds) {
    out.width(12);
    out << v.first << "  ";
    out.precision(1);
    out.width(5);
    out << 100.0 * v.first / total << "  ";
    out.width(5);
    out << v.second << "  " << k << "\n";
    out.precision(3);
  }
  std::vector<ProfileRow> top = r.profile;
  std::sort(top.begin(), top.end(), [](auto& a, auto& b) { return a.ms > b.ms; });
  out << "\n  slowest steps (ms/segment, op, node, primitive, impl)\n";
  for (std::size_t i = 0; i < std::min<std::size_t>(15, top.size()); ++i)
    out << "  " << top[i].ms << "  " << top[i].op << " " << top[i].node << " " << top[i].primitive << " " << top[i].impl
        << (top[i].serial ? " (1 thread)" : "") << "\n";
  return out.str();
}

double mib(std::size_t b) { return double(b) / double(1 << 20); }

std::string fixed(double v, int digits) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(digits) << v;
  return s.str();
}

// The Markdown table's header, and one row per case.
std::string markdownHeader() {
  return "| model | backend | precision | batch | qlen | mem_len | threads | reps | tokens/s | median ms | p99 ms "
         "| efficiency | time / memory floor | peak RSS MiB | budget MiB |\n"
         "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n";
}

std::string markdownRow(const BenchReport& r) {
  std::ostringstream out;
  out << "| " << r.model << " | " << r.backend << " | " << r.precision << " | " << r.batch << " | " << r.qlen << " | "
      << r.memLen << " | " << r.threads << " | " << r.repetitions << " | " << fixed(r.tokensPerS, 1) << " ± "
      << fixed(r.tokensPerSStddev, 1) << " | " << fixed(r.latency.median, 2) << " | " << fixed(r.latency.p99, 2)
      << " | " << (r.probe.ok ? fixed(r.efficiency, 3) : "-") << " | "
      << (r.qlen == 1 && r.probe.ok ? fixed(r.floorRatio, 2) : "-") << " | " << fixed(mib(r.peakRssBytes), 1) << " | "
      << fixed(mib(r.rssBudgetBytes), 1) << " |\n";
  return out.str();
}

// The sections below the table: slow paths, sliding windows, profiles.
std::string markdownSections(const std::vector<BenchReport>& reports) {
  std::ostringstream out;
  for (const BenchReport& r : reports) {
    const std::string title = "batch " + std::to_string(r.batch) + ", qlen " + std::to_string(r.qlen) + ", mem_len " +
                              std::to_string(r.memLen) + ", " + std::to_string(r.threads) + " threads, " + r.precision;
    for (const auto& s : r.refImpls) out << "\nSLOW PATH (" << title << "): " << s << "\n";
    for (const auto& s : r.slidingWindow)
      out << "\nsliding window L=" << s.length << " (" << title << "): vanilla " << fixed(s.vanillaMsPerToken, 2)
          << " ms/token, memory " << fixed(s.memoryMsPerToken, 2) << " ms/token, speed-up " << fixed(s.speedup, 2)
          << "x\n";
    if (!r.profile.empty()) out << "\n" << title << "\n" << profileText(r);
  }
  return out.str();
}

// A CSV field: quoted when it holds a comma, a quote or a line break.
std::string csvField(const nlohmann::json& v) {
  std::string s = v.is_string() ? v.get<std::string>() : v.is_null() ? "" : v.dump();
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

// The scalar fields of a record in a fixed order (the setting, then the
// figures, then anything else), the build's flattened in.
std::vector<std::pair<std::string, nlohmann::json>> csvColumns(const BenchReport& r) {
  static const char* const kOrder[] = {"model",
                                       "model_form",
                                       "semantics",
                                       "initial_memory",
                                       "precision",
                                       "backend",
                                       "memory_form",
                                       "batch",
                                       "qlen",
                                       "mem_len",
                                       "mlen",
                                       "threads",
                                       "segments",
                                       "warmup",
                                       "repetitions",
                                       "prefill",
                                       "nll",
                                       "tokens_per_s",
                                       "tokens_per_s_stddev",
                                       "ms_per_segment",
                                       "avg_ms",
                                       "p90_ms",
                                       "p95_ms",
                                       "p99_ms",
                                       "min_ms",
                                       "max_ms",
                                       "useful_gflops",
                                       "efficiency",
                                       "memory_floor_ms",
                                       "memory_floor_ratio",
                                       "peak_rss_bytes",
                                       "rss_budget_bytes"};
  nlohmann::json j = benchJson(r);
  std::vector<std::pair<std::string, nlohmann::json>> cols;
  for (const char* k : kOrder) {
    cols.emplace_back(k, j.at(k));
    j.erase(k);
  }
  for (const auto& [k, v] : j.items())
    if (v.is_primitive()) cols.emplace_back(k, v);
  for (const auto& [k, v] : j.at("build").items()) cols.emplace_back(k, v);
  return cols;
}

// The CSV header (`header`) or row of a record.
std::string csvLine(const BenchReport& r, bool header) {
  std::ostringstream out;
  const auto cols = csvColumns(r);
  for (std::size_t c = 0; c < cols.size(); ++c)
    out << (c ? "," : "") << (header ? csvField(cols[c].first) : csvField(cols[c].second));
  out << "\n";
  return out.str();
}

// A record as an element of the json array: indented as dump(2) indents it there.
std::string jsonElement(const BenchReport& r) {
  const std::string a = nlohmann::json::array({benchJson(r)}).dump(2);  // "[\n  {...}\n]"
  return a.substr(2, a.size() - 4);
}

}  // namespace

BenchFormat parseBenchFormat(const std::string& name) {
  if (name == "md") return BenchFormat::Markdown;
  if (name == "text") return BenchFormat::Text;
  if (name == "csv") return BenchFormat::Csv;
  if (name == "json") return BenchFormat::Json;
  if (name == "jsonl") return BenchFormat::Jsonl;
  throw Error("--format: expected md, text, csv, json or jsonl, got '" + clip(name) + "'");
}

std::string formatBenchReports(const std::vector<BenchReport>& reports, BenchFormat format) {
  std::ostringstream out;
  BenchReportWriter w(out, format);
  for (const BenchReport& r : reports) w.add(r);
  w.finish();
  return out.str();
}

BenchReportWriter::BenchReportWriter(std::ostream& out, BenchFormat format) : out_(out), format_(format) {
  if (format_ == BenchFormat::Markdown) out_ << markdownHeader() << std::flush;
  if (format_ == BenchFormat::Json) out_ << "[\n" << std::flush;
}

void BenchReportWriter::add(const BenchReport& r) {
  const bool first = done_.empty();
  switch (format_) {
    case BenchFormat::Markdown:
      out_ << markdownRow(r);
      break;
    case BenchFormat::Csv:
      out_ << (first ? csvLine(r, true) : "") << csvLine(r, false);
      break;
    case BenchFormat::Text:
      out_ << (first ? "" : "\n") << benchText(r);
      break;
    case BenchFormat::Json:
      out_ << (first ? "" : ",\n") << jsonElement(r);
      break;
    case BenchFormat::Jsonl:
      out_ << benchJson(r).dump() << "\n";
      break;
  }
  out_ << std::flush;
  done_.push_back(r);
}

void BenchReportWriter::finish() {
  if (finished_) return;
  finished_ = true;
  if (format_ == BenchFormat::Markdown) out_ << markdownSections(done_);
  if (format_ == BenchFormat::Json) out_ << (done_.empty() ? "]\n" : "\n]\n");
  out_ << std::flush;
}

nlohmann::json benchJson(const BenchReport& r) {
  auto orNull = [](bool ok, double v) { return ok ? nlohmann::json(v) : nlohmann::json(nullptr); };
  nlohmann::json j = {
      {"model", r.model},
      {"model_form", r.modelForm},
      {"semantics", r.semantics},
      {"initial_memory", r.initialMemory},
      {"precision", r.precision},
      {"backend", r.backend},
      {"memory_form", r.memoryForm},
      {"batch", r.batch},
      {"qlen", r.qlen},
      {"mem_len", r.memLen},
      {"mlen", r.mlen},
      {"threads", r.threads},
      {"segments", r.segments},
      {"warmup", r.warmup},
      {"repetitions", r.repetitions},
      {"prefill", r.prefill},
      {"nll", r.nll},
      {"tokens_per_s", r.tokensPerS},
      {"tokens_per_s_stddev", r.tokensPerSStddev},
      {"tokens_per_s_runs", r.tokensPerSRuns},
      {"ms_per_segment", r.latency.median},
      {"avg_ms", r.latency.avg},
      {"p90_ms", r.latency.p90},
      {"p95_ms", r.latency.p95},
      {"p99_ms", r.latency.p99},
      {"min_ms", r.latency.min},
      {"max_ms", r.latency.max},
      {"useful_gflop_per_segment", r.usefulFlops / 1e9},
      {"graph_gflop_per_segment", r.graphFlops / 1e9},
      {"useful_gflops", r.usefulGflops},
      {"matmul_peak_gflops",
       orNull(r.probe.ok && r.probe.peakFor(r.precision).gflops > 0, r.probe.peakFor(r.precision).gflops)},
      {"matmul_peak_precision", r.precision},
      {"matmul_peak_shape", r.probe.peakFor(r.precision).shape},
      {"matmul_peak_impl", r.probe.peakFor(r.precision).impl},
      {"matmul_peak_f32_gflops", orNull(r.probe.ok, r.probe.f32.gflops)},
      {"matmul_peak_bf16_gflops", orNull(r.probe.ok && r.probe.bf16.gflops > 0, r.probe.bf16.gflops)},
      {"read_bandwidth_gbs", orNull(r.probe.ok, r.probe.readBandwidthGbs)},
      {"probe_cached", r.probe.cached},
      {"efficiency", orNull(r.probe.ok, r.efficiency)},
      {"memory_floor_bytes", orNull(r.qlen == 1, r.memoryFloorBytes)},
      {"memory_floor_ms", orNull(r.qlen == 1 && r.probe.ok, r.memoryFloorMs)},
      {"memory_floor_ratio", orNull(r.qlen == 1 && r.probe.ok, r.floorRatio)},
      {"peak_rss_bytes", r.peakRssBytes},
      {"peak_rss_process_bytes", r.peakRssProcessBytes},
      {"weight_bytes", r.weightBytes},
      {"state_bytes", r.stateBytes},
      {"arena_bytes", r.arenaBytes},
      {"constant_bytes", r.constantBytes},
      {"rss_budget_bytes", r.rssBudgetBytes},
      {"ref_impls", r.refImpls},
      {"build", buildJson()},
  };
  if (!r.profile.empty()) {
    nlohmann::json p = nlohmann::json::array();
    for (const auto& row : r.profile)
      p.push_back({{"op", row.op},
                   {"node", row.node},
                   {"primitive", row.primitive},
                   {"impl", row.impl},
                   {"serial", row.serial},
                   {"ms", row.ms}});
    j["profile"] = p;
  }
  if (!r.slidingWindow.empty()) {
    const auto& s = r.slidingWindow.front();
    j["sliding_window"] = {{"length", s.length},
                           {"vanilla_ms_per_token", s.vanillaMsPerToken},
                           {"memory_ms_per_token", s.memoryMsPerToken},
                           {"speedup", s.speedup}};
  }
  return j;
}

std::string benchText(const BenchReport& r) {
  std::ostringstream out;
  out.setf(std::ios::fixed);
  out.precision(1);
  out << "model        " << r.model << "\n";
  out << "model form   " << r.modelForm << ", " << r.semantics << " semantics, " << r.initialMemory
      << " initial memory, " << r.precision << ", " << r.backend << " backend, " << r.memoryForm << " memory\n";
  out << "setting      batch " << r.batch << ", qlen " << r.qlen << ", mem_len " << r.memLen << " (" << r.mlen
      << " remembered), " << r.threads << " threads" << (r.nll ? ", with NLL" : "") << "\n";
  out << "segments     " << r.repetitions << " x " << r.segments << " timed after " << r.warmup << " warm-up"
      << (r.prefill ? ", memory prefilled" : "") << "\n";
  out << "throughput   " << r.tokensPerS << " ± " << r.tokensPerSStddev << " tokens/s\n";
  out.precision(2);
  out << "latency ms   avg " << r.latency.avg << "  median " << r.latency.median << "  p90 " << r.latency.p90
      << "  p95 " << r.latency.p95 << "  p99 " << r.latency.p99 << "\n";
  out << std::defaultfloat << std::setprecision(4) << "useful work  " << r.usefulFlops / 1e9
      << " GFLOP/segment (the graph does " << r.graphFlops / 1e9 << "), " << r.usefulGflops << " GFLOP/s\n"
      << std::fixed;
  if (r.probe.ok) {
    const MatmulFigure& peak = r.probe.peakFor(r.precision);
    out << "machine      " << (r.probe.cached ? "(cached) " : "") << r.precision << " matmul peak " << peak.gflops
        << " GFLOP/s (" << peak.shape << ", " << peak.impl << "), read bandwidth " << r.probe.readBandwidthGbs
        << " GB/s\n";
    out.precision(3);
    out << "efficiency   " << r.efficiency << "\n";
    out.precision(2);
    if (r.qlen == 1)
      out << "memory floor " << r.memoryFloorMs << " ms (" << mib(std::size_t(r.memoryFloorBytes))
          << " MiB per step); measured / floor = " << r.floorRatio << "\n";
  }
  out.precision(1);
  out << "peak RSS     " << mib(r.peakRssBytes) << " MiB (budget " << mib(r.rssBudgetBytes) << " = weights "
      << mib(r.weightBytes) << " + copied constants " << mib(r.copiedConstantBytes) << " + state " << mib(r.stateBytes)
      << " + arena " << mib(r.arenaBytes) << " + 64; plan constants " << mib(r.constantBytes) << ")\n";
  for (const auto& s : r.refImpls) out << "SLOW PATH    " << s << "\n";
  for (const auto& s : r.slidingWindow) {
    out.precision(2);
    out << "sliding window L=" << s.length << ": vanilla " << s.vanillaMsPerToken << " ms/token, memory "
        << s.memoryMsPerToken << " ms/token, speed-up " << s.speedup << "x\n";
  }
  out << profileText(r);
  return out.str();
}

}  // namespace txl::driver
