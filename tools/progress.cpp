// tools/progress.cpp - ProgressDisplay and PhaseLog (progress.h).
#include "tools/progress.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iomanip>
#include <iostream>
#include <sstream>

#include <unistd.h>

namespace txl::tools {

namespace {

constexpr double kTerminalInterval = 0.2;  // at most 5 rewrites a second
constexpr double kEtaAfterFraction = 0.05, kEtaAfterSeconds = 2.0;
constexpr double kRateTimeConstant = 5.0;  // seconds, of the rate's moving average
constexpr double kRateSampleSeconds = 0.5;
constexpr int kBarWidth = 24;

}  // namespace

ProgressDisplay::ProgressDisplay(std::string command, std::string unit, bool terminal, double interval)
    : command_(std::move(command)), unit_(std::move(unit)), terminal_(terminal), interval_(interval) {}

std::string ProgressDisplay::formatEta(double remaining, double rate) {
  if (!(rate > 0) || !(remaining >= 0)) return "";
  const double s = remaining / rate;
  if (!std::isfinite(s) || s > 1e7) return "";
  const auto whole = std::int64_t(std::llround(s));
  char buf[32];
  if (whole >= 3600)
    std::snprintf(buf, sizeof buf, "%lldh%02lldm", (long long)(whole / 3600), (long long)(whole % 3600 / 60));
  else if (whole >= 60)
    std::snprintf(buf, sizeof buf, "%lldm%02llds", (long long)(whole / 60), (long long)(whole % 60));
  else std::snprintf(buf, sizeof buf, "%llds", (long long)whole);
  return buf;
}

void ProgressDisplay::update(std::int64_t done, std::int64_t total, double seconds, const std::string& detail) {
  // The rate leaves out the start (loading, planning the first segment):
  // it is measured from the first update on, as the average since then for
  // the first kRateTimeConstant seconds, then as a moving average of the
  // rate between samples at least kRateSampleSeconds apart.
  if (!started_) {
    started_ = true;
    originSeconds_ = sampleSeconds_ = seconds;
    originDone_ = sampleDone_ = done;
  } else if (const double dt = seconds - sampleSeconds_; dt >= kRateSampleSeconds) {
    const double since = seconds - originSeconds_;
    if (since <= kRateTimeConstant || !rateKnown_) {
      rate_ = double(done - originDone_) / since;
    } else {
      const double sample = double(done - sampleDone_) / dt;
      rate_ += (1.0 - std::exp(-dt / kRateTimeConstant)) * (sample - rate_);
    }
    rateKnown_ = rate_ > 0;
    sampleSeconds_ = seconds;
    sampleDone_ = done;
  }
  const double every = terminal_ ? kTerminalInterval : interval_;
  if (shown_ && seconds - lastShown_ < every) return;
  shown_ = true;
  lastShown_ = seconds;

  const double fraction = total > 0 ? std::min(1.0, double(done) / double(total)) : 0.0;
  const bool etaKnown =
      total > 0 && rateKnown_ && done > 0 && (fraction >= kEtaAfterFraction || seconds >= kEtaAfterSeconds);
  const std::string eta = etaKnown ? formatEta(double(total - done), rate_) : "";
  std::ostringstream line;
  line << "txlc: " << command_ << ": ";
  if (terminal_ && total > 0) {
    const int filled = int(fraction * kBarWidth);
    line << "[" << std::string(std::size_t(filled), '#') << std::string(std::size_t(kBarWidth - filled), '-') << "] "
         << std::fixed << std::setprecision(1) << 100.0 * fraction << " % " << done << "/" << total << " " << unit_;
  } else if (total > 0) {
    line << done << "/" << total << " " << unit_ << " (" << std::fixed << std::setprecision(1) << 100.0 * fraction
         << " %)";
  } else {
    line << done << " " << unit_;
  }
  if (!detail.empty()) line << ", " << detail;
  if (total > 0) line << (eta.empty() ? "" : ", ETA " + eta);
  if (terminal_) std::cerr << "\r" << line.str() << "\033[K" << std::flush;
  else std::cerr << line.str() << std::endl;
}

void ProgressDisplay::finish() {
  if (terminal_ && shown_) std::cerr << "\r\033[K" << std::flush;
}

bool showProgress(bool on, bool off) { return on || (!off && ::isatty(2) == 1); }

PhaseLog::PhaseLog(std::string command, bool show)
    : command_(std::move(command)), show_(show), start_(Clock::now()), last_(start_) {}

void PhaseLog::done(const std::string& what) {
  const Clock::time_point now = Clock::now();
  const double s = std::chrono::duration<double>(now - last_).count();
  last_ = now;
  if (!show_) return;
  std::cerr << "txlc: " << command_ << ": " << what << " (" << std::fixed << std::setprecision(2) << s << " s)"
            << std::defaultfloat << std::endl;
}

double PhaseLog::seconds() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }

}  // namespace txl::tools
