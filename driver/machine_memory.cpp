// driver/machine_memory.cpp - parseMeminfo(), readMachineMemory().
#include "driver/machine_memory.h"

#include <unistd.h>

#include <charconv>
#include <fstream>
#include <sstream>
#include <string>

namespace txl::driver {

namespace {

// The kB figure of the line "NAME:   N kB", or nullopt when `line` is another line or malformed.
std::optional<double> kbFigure(std::string_view line, std::string_view name) {
  if (!line.starts_with(name) || line.size() <= name.size() || line[name.size()] != ':') return std::nullopt;
  std::string_view rest = line.substr(name.size() + 1);
  while (!rest.empty() && (rest.front() == ' ' || rest.front() == '\t')) rest.remove_prefix(1);
  unsigned long long kb = 0;
  const auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), kb);
  if (ec != std::errc() || end == rest.data()) return std::nullopt;
  std::string_view unit(end, std::size_t(rest.data() + rest.size() - end));
  while (!unit.empty() && (unit.front() == ' ' || unit.front() == '\t')) unit.remove_prefix(1);
  while (!unit.empty() && (unit.back() == ' ' || unit.back() == '\t' || unit.back() == '\r')) unit.remove_suffix(1);
  if (unit != "kB") return std::nullopt;
  return double(kb) * 1024.0;
}

}  // namespace

MachineMemory parseMeminfo(std::string_view text) {
  MachineMemory m;
  while (!text.empty()) {
    const std::size_t eol = text.find('\n');
    const std::string_view line = text.substr(0, eol);
    if (!m.total) m.total = kbFigure(line, "MemTotal");
    if (!m.available) m.available = kbFigure(line, "MemAvailable");
    if (eol == std::string_view::npos) break;
    text.remove_prefix(eol + 1);
  }
  return m;
}

MachineMemory readMachineMemory() {
  std::ifstream in("/proc/meminfo");
  std::ostringstream text;
  if (in) text << in.rdbuf();
  MachineMemory m = parseMeminfo(text.str());
  if (!m.total) {
    const long pages = ::sysconf(_SC_PHYS_PAGES), pageSize = ::sysconf(_SC_PAGE_SIZE);
    if (pages > 0 && pageSize > 0) m.total = double(pages) * double(pageSize);
  }
  return m;
}

}  // namespace txl::driver
