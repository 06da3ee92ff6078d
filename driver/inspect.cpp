// driver/inspect.cpp - checkInspectRequest(), inspectModel().
#include "driver/inspect.h"

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <charconv>
#include <map>
#include <string_view>
#include <nlohmann/json.hpp>

#include "driver/compile.h"
#include "driver/graph_stats.h"
#include "frontend/graph_builder.h"
#include "ir/check.h"
#include "ir/dot.h"
#include "ir/json_io.h"
#include "ir/printer.h"

namespace txl::driver {

namespace {

void appendf(std::string& out, const char* format, ...) {
  char buf[512];
  va_list args;
  va_start(args, format);
  std::vsnprintf(buf, sizeof buf, format, args);
  va_end(args);
  out += buf;
}

std::string human(double x) {
  char buf[32];
  const char* unit[] = {"", "k", "M", "G", "T"};
  int u = 0;
  while (x >= 1000 && u < 4) x /= 1000, ++u;
  std::snprintf(buf, sizeof buf, "%.3g %s", x, unit[u]);
  return buf;
}

std::string statsText(const GraphStats& in, const GraphStats& opt, const std::vector<ir::Remark>& remarks) {
  std::string out;
  std::map<std::string, std::pair<std::int64_t, std::int64_t>> rows;
  for (const auto& [op, n] : in.ops) rows[op].first = n;
  for (const auto& [op, n] : opt.ops) rows[op].second = n;
  // The name column as wide as the longest op name (logprob_pick_gathered is 21), at least 16.
  int width = 16;
  for (const auto& [op, n] : rows) width = std::max(width, int(op.size()));
  appendf(out, "%-*s %10s %10s\n", width, "op", "input", "optimized");
  for (const auto& [op, n] : rows)
    appendf(out, "%-*s %10lld %10lld\n", width, op.c_str(), (long long)n.first, (long long)n.second);
  appendf(out, "\n%-24s %14s %14s\n", "per segment", "input", "optimized");
  appendf(out, "%-24s %13sF %13sF  (%.1f%% of the input)\n", "FLOPs", human(in.flops).c_str(), human(opt.flops).c_str(),
          in.flops > 0 ? 100.0 * opt.flops / in.flops : 0.0);
  appendf(out, "%-24s %13sB %13sB  (%.1f%% of the input)\n", "bytes moved", human(in.bytes).c_str(),
          human(opt.bytes).c_str(), in.bytes > 0 ? 100.0 * opt.bytes / in.bytes : 0.0);
  appendf(out, "%-24s %14s %13sF  (once per plan)\n", "constant subgraphs", "-", human(opt.constantFlops).c_str());
  out += "\nfusions:\n";
  if (remarks.empty()) out += "  (none)\n";
  for (const auto& r : remarks)
    out += "  " + std::string(r.applied ? "applied " : "skipped ") + r.pass + ": " + r.message + "\n";
  return out;
}

}  // namespace

void checkInspectRequest(const InspectRequest& r) {
  if (r.stage != "input" && r.stage != "optimized")
    throw Error("--stage: expected 'input' or 'optimized', got '" + r.stage + "'");
  if (r.format != "text" && r.format != "json" && r.format != "dot")
    throw Error("--format: expected 'text', 'json' or 'dot', got '" + r.format + "'");
  if (r.stats && r.format == "dot") throw Error("--stats prints text or json, not dot");
  if (r.batch < 1) throw Error("--batch: expected a positive integer, got " + std::to_string(r.batch));
}

void setInspectOutputs(InspectRequest& r, const std::string& outputs) {
  if (std::find(std::begin(kInspectOutputs), std::end(kInspectOutputs), outputs) == std::end(kInspectOutputs))
    throw Error(std::string("--outputs: expected ") + kInspectOutputsExpected + ", got " + quote(outputs));
  r.logprob = outputs.find("logprob") != std::string::npos;
  r.nll = outputs.find("nll") != std::string::npos;
}

std::int64_t inspectQlen(const frontend::ModelSpec& spec, const InspectRequest& r) {
  if (r.qlen && *r.qlen < 1) throw Error("--qlen: expected a positive integer, got " + std::to_string(*r.qlen));
  if (r.mlen && (*r.mlen < 0 || *r.mlen > spec.mem_len))
    throw Error("--mlen: expected an integer in [0, mem_len " + std::to_string(spec.mem_len) + "], got " +
                std::to_string(*r.mlen));
  return r.qlen.value_or(std::max<std::int64_t>(spec.tgt_len, 1));
}

ir::Segment inspectSegment(const frontend::ModelSpec& spec, const Setting& setting, const InspectRequest& r) {
  const std::int64_t mlen = spec.attn_type == 2 && !r.mlen ? 0 : r.mlen.value_or(spec.mem_len);
  ir::Segment segment = segmentOf(setting, inspectQlen(spec, r), mlen);
  segment.logprob = r.logprob;
  segment.nll = r.nll;
  return segment;
}

namespace {

// The spec's own setting (an artifact's too: inspect shows what its spec builds), batch and qlen as asked.
Setting inspectSetting(const frontend::ModelSpec& spec, const SettingChoice& choice,
                       const ir::PassManagerOptions& diagnostics, const InspectRequest& r) {
  SettingChoice c = choice;
  c.batch = r.batch;
  c.qlen = inspectQlen(spec, r);
  // Checked there: every size reaching a shape, before anything is built.
  Setting setting = resolveSetting(modelFrom(spec, {}), c, /*run=*/false);
  setting.pipeline.manager = diagnostics;
  return setting;
}

}  // namespace

std::string renumberNodes(const std::string& text, const ir::Graph& g) {
  const ir::Numbering numbers(g);
  std::map<std::uint64_t, std::string> byId;
  for (ir::Node n : g.nodes())
    if (numbers.number(n) >= 0) byId[g.op(n).id] = numbers.name(n);
  // Each "node " followed by decimal digits, scanned left to right.
  constexpr std::string_view kWord = "node ";
  std::string out;
  std::size_t from = 0;
  for (std::size_t at = text.find(kWord); at != std::string::npos; at = text.find(kWord, at)) {
    const std::size_t digits = at + kWord.size();
    std::size_t end = digits;
    while (end < text.size() && text[end] >= '0' && text[end] <= '9') ++end;
    std::uint64_t id = 0;
    const auto [ptr, ec] = std::from_chars(text.data() + digits, text.data() + end, id);
    const auto found = end > digits && ec == std::errc() ? byId.find(id) : byId.end();
    if (found == byId.end()) {
      at = end > digits ? end : at + 1;
      continue;
    }
    out.append(text, from, at - from);
    out += found->second;
    from = at = end;
  }
  out.append(text, from);
  return out;
}

std::string inspectModel(const frontend::ModelSpec& spec, const SettingChoice& choice,
                         const ir::PassManagerOptions& diagnostics, const InspectRequest& r) {
  checkInspectRequest(r);
  const Setting setting = inspectSetting(spec, choice, diagnostics, r);
  const ir::Segment segment = inspectSegment(spec, setting, r);
  const ir::Graph input = frontend::buildSegmentGraph(spec, segment);
  ir::PassContext ctx;
  const ir::Graph optimized = buildOptimizedGraph(spec, setting, segment, &ctx);

  if (r.stats) {
    GraphStats in = graphStats(input, false), opt = graphStats(optimized, true);
    if (r.format == "json") {
      nlohmann::json fusions = nlohmann::json::array();
      for (const auto& remark : ctx.remarks)
        fusions.push_back({{"pass", remark.pass}, {"applied", remark.applied}, {"message", remark.message}});
      return nlohmann::json{{"semantics", frontend::semanticsName(spec.semantics)},
                            {"initial_memory", frontend::initialMemoryName(spec.defaultInitialMemory())},
                            {"precision", precisionName(setting.precision)},
                            {"input", statsToJson(in)},
                            {"optimized", statsToJson(opt)},
                            {"fusions", fusions}}
                 .dump(2) +
             "\n";
    }
    std::string out;
    appendf(out, "semantics %s (initial memory %s, docs/SEMANTICS.md)\n\n", frontend::semanticsName(spec.semantics),
            frontend::initialMemoryName(spec.defaultInitialMemory()));
    return out + statsText(in, opt, ctx.remarks);
  }
  const ir::Graph& g = r.stage == "input" ? input : optimized;
  if (r.format == "json") return ir::toJson(g).dump(2) + "\n";
  if (r.format == "dot") return ir::toDot(g);
  return ir::print(g);
}

}  // namespace txl::driver
