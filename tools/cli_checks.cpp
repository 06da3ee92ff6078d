// tools/cli_checks.cpp - validators and shared command helpers.
#include "tools/cli_checks.h"

#include <unistd.h>

#include <charconv>
#include <cmath>

#include "driver/model.h"

namespace txl::tools {

CLI::Validator integerIn(std::int64_t min, std::int64_t max, const std::string& what) {
  return CLI::Validator(
      [=](std::string& s) -> std::string {
        std::int64_t v = 0;
        auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
        if (ec != std::errc() || p != s.data() + s.size() || v < min || v > max)
          return "expected " + what + ", got '" + s + "'";
        return {};
      },
      what == "a positive integer" ? "POSITIVE" : "INT");
}

CLI::Validator oneOf(std::vector<std::string> values, const std::string& what) {
  return CLI::Validator(
      [=](std::string& s) -> std::string {
        for (const std::string& v : values)
          if (s == v) return {};
        return "expected " + what + ", got '" + s + "'";
      },
      "NAME");
}

CLI::Validator realIn(double min, double max, bool openMin, const std::string& what) {
  return CLI::Validator(
      [=](std::string& s) -> std::string {
        char* end = nullptr;
        double v = std::strtod(s.c_str(), &end);
        if (s.empty() || end != s.c_str() + s.size() || !std::isfinite(v) || v > max || v < min ||
            (openMin && v == min))
          return "expected " + what + ", got '" + s + "'";
        return {};
      },
      "NUMBER");
}

void addModelArgument(CLI::App& cmd, std::string& model, const std::string& help) {
  if (driver::embeddedArtifact()) {
    model = driver::kEmbeddedModelPath;
    return;
  }
  cmd.add_option("model", model, help)->required();
}

bool stderrIsTerminal() { return ::isatty(2) == 1; }

}  // namespace txl::tools
