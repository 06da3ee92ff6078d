// driver/bench_plot.h - a sweep of `txlc bench` drawn as an SVG chart (`bench --plot FILE.svg`).
//
// tokens/s (the mean over the repetitions, with a bar of ± one standard
// deviation) against the swept axis: the first of batch, qlen, mem_len,
// threads and precision that takes more than one value in the reports (batch
// when none does), its values evenly spaced in the order the cases ran. One
// series per combination of the other axes that vary, each in its own colour,
// named in the legend. The SVG is self-contained (no script, font file or
// style sheet) and written by this code alone: plain elements, the text
// XML-escaped.
//
//   std::string svg = benchPlotSvg(reports);   // then frontend::AtomicFile
#pragma once

#include <string>
#include <vector>

#include "driver/bench.h"

namespace txl::driver {

// "batch", "qlen", "mem_len", "threads" or "precision": the axis benchPlotSvg() puts across.
std::string benchPlotAxis(const std::vector<BenchReport>& reports);
std::string benchPlotSvg(const std::vector<BenchReport>& reports);

}  // namespace txl::driver
