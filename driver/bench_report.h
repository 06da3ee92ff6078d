// driver/bench_report.h - benchmark reports (driver/bench.h) as people and programs read them.
//
// Formats, as `txlc bench --format` names them:
//   md     one Markdown table row per case (the default), with the profile
//          and sliding-window sections of the cases that have them below it;
//   text   every figure of every case, a block per case;
//   csv    a header and one row per case, the scalar figures only;
//   json   an array of records, one per case;
//   jsonl  one record per line.
// Every record (json, jsonl, and the csv columns) carries the build and the
// machine (driver/build_info.h), so that a figure names what made it.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "driver/bench.h"

namespace txl::driver {

enum class BenchFormat { Markdown, Text, Csv, Json, Jsonl };
// "md", "text", "csv", "json", "jsonl"; txl::Error for another name.
BenchFormat parseBenchFormat(const std::string& name);

nlohmann::json benchJson(const BenchReport& r);  // one record
std::string benchText(const BenchReport& r);     // one block
std::string formatBenchReports(const std::vector<BenchReport>& reports, BenchFormat format);

}  // namespace txl::driver
