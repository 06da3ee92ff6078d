// driver/bench_plot.cpp - benchPlotSvg() (bench_plot.h).
#include "driver/bench_plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

namespace txl::driver {

namespace {

const char* const kAxes[] = {"batch", "qlen", "mem_len", "threads", "precision"};

std::string axisValue(const BenchReport& r, const std::string& axis) {
  if (axis == "batch") return std::to_string(r.batch);
  if (axis == "qlen") return std::to_string(r.qlen);
  if (axis == "mem_len") return std::to_string(r.memLen);
  if (axis == "threads") return std::to_string(r.threads);
  return r.precision;
}

// The distinct values of `axis` in the order the reports first meet them.
std::vector<std::string> valuesOf(const std::vector<BenchReport>& reports, const std::string& axis) {
  std::vector<std::string> values;
  for (const BenchReport& r : reports)
    if (const std::string v = axisValue(r, axis); std::find(values.begin(), values.end(), v) == values.end())
      values.push_back(v);
  return values;
}

std::string xmlEscape(const std::string& s) {
  std::string out;
  for (char c : s) switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        out += (static_cast<unsigned char>(c) < 0x20) ? ' ' : c;
    }
  return out;
}

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

// A tick step of 1, 2 or 5 times a power of ten giving about `ticks` ticks up to `top`.
double niceStep(double top, int ticks) {
  const double raw = top / ticks, p = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * p >= raw) return m * p;
  return 10 * p;
}

std::string tickLabel(double v) {
  char buf[32];
  if (v >= 1e6) std::snprintf(buf, sizeof buf, "%gM", v / 1e6);
  else if (v >= 1e4) std::snprintf(buf, sizeof buf, "%gk", v / 1e3);
  else std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

}  // namespace

std::string benchPlotAxis(const std::vector<BenchReport>& reports) {
  for (const char* axis : kAxes)
    if (valuesOf(reports, axis).size() > 1) return axis;
  return "batch";
}

std::string benchPlotSvg(const std::vector<BenchReport>& reports) {
  const std::string axis = benchPlotAxis(reports);
  const std::vector<std::string> xs = valuesOf(reports, axis);
  std::vector<std::string> others;  // the other axes that vary: one series per combination
  for (const char* a : kAxes)
    if (a != axis && valuesOf(reports, a).size() > 1) others.push_back(a);
  auto seriesName = [&](const BenchReport& r) {
    std::string name;
    for (const auto& a : others) name += (name.empty() ? "" : ", ") + a + " " + axisValue(r, a);
    return name.empty() ? std::string("tokens/s") : name;
  };
  std::vector<std::string> names;
  std::map<std::string, std::vector<const BenchReport*>> series;
  double top = 0;
  for (const BenchReport& r : reports) {
    const std::string n = seriesName(r);
    if (!series.count(n)) names.push_back(n);
    series[n].push_back(&r);
    top = std::max(top, r.tokensPerS + r.tokensPerSStddev);
  }
  if (!(top > 0)) top = 1;
  const double step = niceStep(top * 1.05, 5);
  const double yMax = std::ceil(top * 1.05 / step) * step;

  const double width = 860, height = 500, left = 90, right = 250, topMargin = 60, bottom = 70;
  const double plotW = width - left - right, plotH = height - topMargin - bottom;
  auto xAt = [&](const std::string& v) {
    const auto i = double(std::find(xs.begin(), xs.end(), v) - xs.begin());
    return left + (i + 0.5) * plotW / double(std::max<std::size_t>(1, xs.size()));
  };
  auto yAt = [&](double v) { return topMargin + plotH * (1 - v / yMax); };
  static const char* const kColours[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e",
                                         "#9467bd", "#8c564b", "#e377c2", "#17becf"};

  std::ostringstream svg;
  svg << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << height
      << "\" viewBox=\"0 0 " << width << " " << height << "\" font-family=\"sans-serif\" font-size=\"13\">\n"
      << "<title>txlc bench: tokens/s against " << axis << "</title>\n"
      << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  const std::string model = reports.empty() ? std::string() : reports.front().model;
  svg << "<text x=\"" << left << "\" y=\"28\" font-size=\"16\">" << xmlEscape("txlc bench " + model) << "</text>\n";
  // Grid and y ticks.
  for (double v = 0; v <= yMax + step / 2; v += step) {
    const double y = yAt(v);
    svg << "<line x1=\"" << left << "\" y1=\"" << num(y) << "\" x2=\"" << left + plotW << "\" y2=\"" << num(y)
        << "\" stroke=\"#dddddd\"/>\n"
        << "<text x=\"" << left - 8 << "\" y=\"" << num(y + 4) << "\" text-anchor=\"end\">" << tickLabel(v)
        << "</text>\n";
  }
  // Axes, x ticks and titles.
  svg << "<line x1=\"" << left << "\" y1=\"" << topMargin << "\" x2=\"" << left << "\" y2=\"" << topMargin + plotH
      << "\" stroke=\"black\"/>\n"
      << "<line x1=\"" << left << "\" y1=\"" << topMargin + plotH << "\" x2=\"" << left + plotW << "\" y2=\""
      << topMargin + plotH << "\" stroke=\"black\"/>\n";
  for (const std::string& v : xs)
    svg << "<text x=\"" << num(xAt(v)) << "\" y=\"" << topMargin + plotH + 20 << "\" text-anchor=\"middle\">"
        << xmlEscape(v) << "</text>\n";
  svg << "<text x=\"" << left + plotW / 2 << "\" y=\"" << height - 20 << "\" text-anchor=\"middle\">" << xmlEscape(axis)
      << "</text>\n"
      << "<text transform=\"translate(22," << topMargin + plotH / 2
      << ") rotate(-90)\" text-anchor=\"middle\">tokens/s</text>\n";
  // Series: a line through the points, a ± one standard deviation bar at each, the legend.
  for (std::size_t s = 0; s < names.size(); ++s) {
    const char* colour = kColours[s % (sizeof kColours / sizeof *kColours)];
    const auto& points = series[names[s]];
    svg << "<g stroke=\"" << colour << "\" fill=\"" << colour << "\">\n";
    if (points.size() > 1) {
      svg << "<polyline fill=\"none\" stroke-width=\"2\" points=\"";
      for (std::size_t i = 0; i < points.size(); ++i)
        svg << (i ? " " : "") << num(xAt(axisValue(*points[i], axis))) << "," << num(yAt(points[i]->tokensPerS));
      svg << "\"/>\n";
    }
    for (const BenchReport* r : points) {
      const double x = xAt(axisValue(*r, axis));
      svg << "<line x1=\"" << num(x) << "\" y1=\"" << num(yAt(std::max(0.0, r->tokensPerS - r->tokensPerSStddev)))
          << "\" x2=\"" << num(x) << "\" y2=\"" << num(yAt(r->tokensPerS + r->tokensPerSStddev)) << "\"/>\n"
          << "<circle cx=\"" << num(x) << "\" cy=\"" << num(yAt(r->tokensPerS)) << "\" r=\"4\"><title>"
          << xmlEscape(axis + " " + axisValue(*r, axis) + ": " + num(r->tokensPerS) + " tokens/s")
          << "</title></circle>\n";
    }
    const double ly = topMargin + 10 + 22 * double(s);
    svg << "<line x1=\"" << left + plotW + 20 << "\" y1=\"" << ly << "\" x2=\"" << left + plotW + 44 << "\" y2=\"" << ly
        << "\" stroke-width=\"2\"/>\n"
        << "<text x=\"" << left + plotW + 52 << "\" y=\"" << ly + 4 << "\" stroke=\"none\" fill=\"black\">"
        << xmlEscape(names[s]) << "</text>\n</g>\n";
  }
  svg << "</svg>\n";
  return svg.str();
}

}  // namespace txl::driver
