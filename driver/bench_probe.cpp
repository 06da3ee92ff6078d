// driver/bench_probe.cpp - the machine probes, their child process and their cache (bench_probe.h).
#include "driver/bench_probe.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "backend/onednn/onednn_probe.h"
#include "backend/platform.h"
#include "driver/build_info.h"
#include "driver/content_hash.h"
#include "frontend/atomic_file.h"
#include "frontend/input_file.h"
#include "ir/check.h"

namespace txl::driver {

ProbeResult runProbes(int threads, std::int64_t probeMiB) {
  backend::setThreads(threads);
  ProbeResult p;
  const auto figure = [](const backend::MatmulPeak& m) { return MatmulFigure{m.gflops, m.shape, m.impl}; };
  p.f32 = figure(backend::measureMatmulPeak(false));
  if (backend::platform().bf16Matmuls) p.bf16 = figure(backend::measureMatmulPeak(true));
  p.readBandwidthGbs = backend::measureReadBandwidth(std::size_t(probeMiB) << 20);
  p.ok = true;
  return p;
}

nlohmann::json probeJson(const ProbeResult& p) {
  return {{"matmul_peak_gflops", p.f32.gflops},
          {"matmul_shape", p.f32.shape},
          {"matmul_impl", p.f32.impl},
          {"matmul_peak_bf16_gflops", p.bf16.gflops},
          {"matmul_bf16_shape", p.bf16.shape},
          {"matmul_bf16_impl", p.bf16.impl},
          {"read_bandwidth_gbs", p.readBandwidthGbs},
          {"threads", backend::threadCount()}};
}

namespace {

ProbeResult probeFromJson(const nlohmann::json& j) {
  ProbeResult p;
  p.f32 = {j.at("matmul_peak_gflops"), j.at("matmul_shape"), j.at("matmul_impl")};
  p.bf16 = {j.at("matmul_peak_bf16_gflops"), j.at("matmul_bf16_shape"), j.at("matmul_bf16_impl")};
  p.readBandwidthGbs = j.at("read_bandwidth_gbs");
  p.ok = p.f32.gflops > 0 && p.readBandwidthGbs > 0;
  if (!p.ok) p.error = "the probe reported no figures";
  return p;
}

// What a cached figure is valid for: the same CPU, CPUs available, threads,
// probe size, txlc and oneDNN.
nlohmann::json cacheKey(int threads, std::int64_t probeMiB) {
  const backend::Platform& pl = backend::platform();
  return {{"cpu", pl.cpu},
          {"logical_cpus", pl.logicalCpus},
          {"threads", threads},
          {"probe_mib", probeMiB},
          {"probes", "matmul f32 and bf16, read bandwidth"},  // a cache of other probes is measured again
          {"isa", pl.onednnIsa},
          {"txlc_version", buildInfo().version},
          {"onednn_version", pl.onednnVersion}};
}

std::string cacheFolder() {
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x == '/') return std::string(x) + "/txlc";
  if (const char* h = std::getenv("HOME"); h && *h == '/') return std::string(h) + "/.cache/txlc";
  return "";
}

}  // namespace

ProbeResult runProbeChild(const std::string& self, int threads, std::int64_t probeMiB) {
  ProbeResult p;
  int fds[2];
  if (pipe(fds) != 0) {
    p.error = "pipe failed";
    return p;
  }
  std::cout.flush();
  std::cerr.flush();
  const std::string t = std::to_string(threads), mib = std::to_string(probeMiB);
  const pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    p.error = "fork failed";
    return p;
  }
  if (pid == 0) {
    dup2(fds[1], STDOUT_FILENO);
    close(fds[0]);
    close(fds[1]);
    execl(self.c_str(), self.c_str(), "bench-probe", "--threads", t.c_str(), "--probe-mib", mib.c_str(),
          static_cast<char*>(nullptr));
    _exit(127);
  }
  close(fds[1]);
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;) out.append(buf, std::size_t(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  // Named as the command the user knows, not by `self` (/proc/self/exe, a path only this process can resolve).
  if (WIFSIGNALED(status)) {
    p.error =
        "txlc bench-probe (the machine probe's child process) was killed by signal " + std::to_string(WTERMSIG(status));
    return p;
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    p.error = "txlc bench-probe (the machine probe's child process) exited with status " +
              std::to_string(WEXITSTATUS(status));
    return p;
  }
  try {
    p = probeFromJson(nlohmann::json::parse(out));
  } catch (const nlohmann::json::exception& e) {
    p.error = std::string("bench-probe printed no valid JSON: ") + e.what();
  }
  return p;
}

std::string probeCachePath(int threads, std::int64_t probeMiB) {
  const std::string folder = cacheFolder();
  if (folder.empty()) return "";
  ContentHash h;
  h.update(cacheKey(threads, probeMiB).dump());
  std::ostringstream name;
  name << folder << "/probe-" << std::hex << h.digest() << ".json";
  return name.str();
}

ProbeResult machineProbe(const std::string& self, int threads, std::int64_t probeMiB, ProbeMode mode) {
  if (mode == ProbeMode::Skip) return {};
  const std::string path = probeCachePath(threads, probeMiB);
  if (mode == ProbeMode::Cached && !path.empty()) {
    // Read as any input (a regular file, bounded): a cache entry that is not one is ignored and re-measured.
    std::string text;
    try {
      text = frontend::readInputFile(path, std::uint64_t(1) << 20, "a probe cache file");
    } catch (const Error&) {
    }
    frontend::forgetInputFile(path);  // the cache's own file: replaced when re-measured
    if (!text.empty()) {
      try {
        const nlohmann::json j = nlohmann::json::parse(text);
        if (j.at("key") == cacheKey(threads, probeMiB)) {
          ProbeResult p = probeFromJson(j.at("probe"));
          if (p.ok) {
            p.cached = true;
            return p;
          }
        }
      } catch (const nlohmann::json::exception&) {
        // a damaged or foreign cache file: measured again and replaced below
      }
    }
  }
  std::cerr << "txlc: bench: measuring this machine's matmul peaks and read bandwidth (cached in "
            << (path.empty() ? std::string("nowhere: no cache folder") : path) << ")" << std::endl;
  ProbeResult p = runProbeChild(self, threads, probeMiB);
  if (p.ok && !path.empty()) {
    try {
      std::filesystem::create_directories(std::filesystem::path(path).parent_path());
      const std::string text =
          nlohmann::json{{"key", cacheKey(threads, probeMiB)}, {"probe", probeJson(p)}}.dump(2) + "\n";
      frontend::AtomicFile f(path, 0644);
      f.write(text.data(), text.size());
      f.commit();
    } catch (const std::exception& e) {
      std::cerr << "txlc: warning: the machine probe is not cached: " << oneLine(e.what()) << std::endl;
    }
  }
  return p;
}

}  // namespace txl::driver
