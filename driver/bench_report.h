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
// BenchReportWriter prints a sweep as its cases finish, so that an
// interrupted or killed run keeps the rows already done.
#pragma once

#include <ostream>
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

// Prints reports one at a time, flushing `out` after each: md the table's
// header at once and a row per case, the cases' profile, sliding-window and
// slow-path sections below the table at finish(); text a block per case;
// csv the header with the first row; json the array's "[" at once, a record
// per case, the "]" at finish() (an interrupted run that reaches finish()
// still prints one valid array; a killed one is cut: jsonl is the form that
// stays valid line by line); jsonl a line per case.
class BenchReportWriter {
 public:
  BenchReportWriter(std::ostream& out, BenchFormat format);
  void add(const BenchReport& r);
  void finish();  // once; the sections and closing of the formats that have them

 private:
  std::ostream& out_;
  BenchFormat format_;
  std::vector<BenchReport> done_;  // md: for the sections below the table
  bool finished_ = false;
};

}  // namespace txl::driver
