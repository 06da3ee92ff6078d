// driver/stream_server.cpp - StreamServer.
#include "driver/stream_server.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <future>
#include <random>

#include "driver/compile.h"
#include "driver/content_hash.h"
#include "driver/finite.h"
#include "driver/state_file.h"
#include "frontend/model_spec.h"
#include "frontend/safetensors.h"
#include "ir/check.h"

namespace txl::driver {

namespace fs = std::filesystem;

namespace {

constexpr const char* kStateSuffix = ".state";

std::string hex(std::uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

// The checksum of a state: ContentHash over each tensor's name and f32 bytes, in name order.
std::string stateChecksum(const ir::TensorMap& state) {
  ContentHash h;
  for (const auto& [name, t] : state) {
    h.update(name);
    h.update(t.data<float>(), t.bytes());
  }
  return hex(h.digest());
}

std::int64_t parseCount(const std::map<std::string, std::string>& meta, const char* key, const std::string& path,
                        std::int64_t min) {
  auto it = meta.find(key);
  if (it == meta.end()) throw Error(path + ": __metadata__/" + key + ": missing; expected a txlc serve state file");
  try {
    std::size_t used = 0;
    const long long v = std::stoll(it->second, &used);
    if (used == it->second.size() && v >= min) return v;
  } catch (const std::exception&) {
  }
  throw Error(path + ": __metadata__/" + key + ": expected an integer >= " + std::to_string(min) + ", got " +
              quote(clip(it->second)));
}

ServeError notFound(const std::string& id) { return {404, "stream_not_found", "no stream " + quote(clip(id))}; }

}  // namespace

bool validStreamId(const std::string& id) {
  if (id.empty() || id.size() > 128 || id[0] == '.') return false;
  return std::all_of(id.begin(), id.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
           c == '.';
  });
}

StreamServer::StreamServer(const Model& model, const Setting& setting, StreamServerOptions options)
    : model_(model), setting_(setting), options_(std::move(options)) {
  TXL_CHECK(setting_.batch == 1, "a stream server runs batch 1 sessions");
  if (options_.maxResident < 1) throw Error("--max-resident: expected at least 1 stream");
  if (!options_.stateDir.empty()) {
    std::error_code ec;
    fs::create_directories(options_.stateDir, ec);
    if (!fs::is_directory(options_.stateDir))
      throw Error("--state-dir " + options_.stateDir + ": not a directory" + (ec ? " (" + ec.message() + ")" : ""));
    const std::string lock = (fs::path(options_.stateDir) / "txlc-serve.lock").string();
    lockFd_ = ::open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (lockFd_ < 0) throw Error(lock + ": cannot open the lock file");
    if (::flock(lockFd_, LOCK_EX | LOCK_NB) != 0) {
      ::close(lockFd_);
      throw Error("--state-dir " + options_.stateDir + ": another server owns it (" + lock + " is locked)");
    }
  }
  compiled_ = compile(model_, setting_);
  for (const auto& slot : compiled_->stateLayout()) {
    std::int64_t row = 1;
    for (std::int64_t d : slot.rowShape) row *= d;
    perStreamBytes_ += setting_.memLen * row * (slot.dtype == ir::DType::BF16 ? 2 : 4);
  }
  if (!options_.stateDir.empty()) scanStateDir();
  updateGauges();
  thread_ = std::thread([this] { loop(); });
}

StreamServer::~StreamServer() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (lockFd_ >= 0) ::close(lockFd_);
}

void StreamServer::submit(const std::function<void(StreamServer&)>& job) {
  auto done = std::make_shared<std::promise<void>>();
  std::future<void> f = done->get_future();
  {
    std::lock_guard lock(mutex_);
    if (stop_) throw ServeError{503, "shutting_down", "the server is shutting down"};
    if (std::int64_t(queue_.size()) >= options_.maxQueue)
      throw ServeError{429, "queue_full",
                       "the queue holds " + std::to_string(queue_.size()) + " requests (--max-queue); retry later"};
    queue_.push_back([this, job, done] {
      try {
        job(*this);
        done->set_value();
      } catch (...) {
        done->set_exception(std::current_exception());
      }
    });
    counters_.queueDepth = std::int64_t(queue_.size());
  }
  cv_.notify_one();
  f.get();
}

void StreamServer::loop() {
  auto lastSweep = Clock::now();
  for (;;) {
    std::function<void()> job;
    {
      std::unique_lock lock(mutex_);
      cv_.wait_for(lock, std::chrono::milliseconds(500), [&] { return stop_ || !queue_.empty(); });
      if (!queue_.empty()) {
        job = std::move(queue_.front());
        queue_.pop_front();
        counters_.queueDepth = std::int64_t(queue_.size());
      } else if (stop_) {
        return;
      }
    }
    if (job) job();
    if (Clock::now() - lastSweep > std::chrono::milliseconds(500)) {
      lastSweep = Clock::now();
      try {
        sweepIdle();
      } catch (const std::exception& e) {
        if (options_.log) options_.log(std::string("idle sweep: ") + e.what());
      }
    }
  }
}

std::string StreamServer::statePath(const std::string& id) const {
  return (fs::path(options_.stateDir) / (id + kStateSuffix)).string();
}

void StreamServer::scanStateDir() {
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(options_.stateDir))
    if (e.is_regular_file() && e.path().extension() == kStateSuffix) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  for (const fs::path& p : files) {
    const std::string id = p.stem().string();
    if (!validStreamId(id)) continue;
    try {
      frontend::SafetensorsFile f = frontend::SafetensorsFile::open(p.string());
      const auto& meta = f.metadata();
      auto it = meta.find("stream_id");
      if (it == meta.end() || it->second != id)
        throw Error(p.string() + ": __metadata__/stream_id: expected " + quote(id));
      Stream s;
      s.id = id;
      s.position = parseCount(meta, "position", p.string(), 0);
      s.pending = parseCount(meta, "pending", p.string(), -1);
      s.lastUsed = Clock::now();
      s.lastUsedWall = std::chrono::system_clock::now();
      streams_.emplace(id, std::move(s));
    } catch (const Error& e) {
      ++counters_.corrupt;
      if (options_.log) options_.log("refused state file " + p.string() + " (left as it is): " + oneLine(e.what()));
      tombstone(id, "corrupt_state", -1);
    }
  }
  if (options_.log && !streams_.empty())
    options_.log("found " + std::to_string(streams_.size()) + " spilled stream(s) in " + options_.stateDir);
}

void StreamServer::updateGauges() {
  std::int64_t resident = 0;
  for (const auto& [id, s] : streams_) resident += s.session ? 1 : 0;
  counters_.resident = resident;
  counters_.spilled = std::int64_t(streams_.size()) - resident;
  counters_.stateBytes = resident * perStreamBytes_;
}

void StreamServer::tombstone(const std::string& id, const std::string& reason, std::int64_t position) {
  if (!tombstones_.contains(id)) tombstoneOrder_.push_back(id);
  tombstones_[id] = {reason, position};
  while (std::int64_t(tombstoneOrder_.size()) > options_.maxTombstones) {
    tombstones_.erase(tombstoneOrder_.front());
    tombstoneOrder_.pop_front();
  }
}

void StreamServer::touch(Stream& s) {
  s.lastUsed = Clock::now();
  s.lastUsedWall = std::chrono::system_clock::now();
}

StreamServer::Stream& StreamServer::find(const std::string& id) {
  auto it = streams_.find(id);
  if (it != streams_.end()) return it->second;
  auto t = tombstones_.find(id);
  if (t != tombstones_.end()) {
    ServeError e{410, "stream_evicted",
                 "stream " + quote(id) + " is gone (" + t->second.reason + "); its memory cannot be rebuilt here"};
    e.extra = {{"reason", t->second.reason}};
    if (t->second.position >= 0) e.extra["position"] = t->second.position;
    throw e;
  }
  throw notFound(id);
}

void StreamServer::spill(Stream& s) {
  TXL_CHECK(s.session != nullptr, "spilling a stream that is not resident");
  ir::TensorMap state = s.session->saveState();
  std::vector<std::pair<std::string, ir::Tensor>> tensors(state.begin(), state.end());
  frontend::writeSafetensors(statePath(s.id), tensors,
                             {{"format", kStateFormat},
                              {"model_id", model_.modelId},
                              {"batch", "1"},
                              {"mem_len", std::to_string(setting_.memLen)},
                              {"mlen", std::to_string(s.session->mlen())},
                              {"semantics", frontend::semanticsName(model_.spec.semantics)},
                              {"initial_memory", frontend::initialMemoryName(setting_.initialMemory)},
                              {"stream_id", s.id},
                              {"position", std::to_string(s.position)},
                              {"pending", std::to_string(s.pending)},
                              {"checksum", stateChecksum(state)}});
}

void StreamServer::restore(Stream& s) {
  const std::string path = statePath(s.id);
  auto session = std::make_unique<backend::Session>(compiled_);
  frontend::SafetensorsFile f = frontend::SafetensorsFile::open(path);
  const auto meta = f.metadata();
  const std::int64_t position = parseCount(meta, "position", path, 0);
  const std::int64_t pending = parseCount(meta, "pending", path, -1);
  if (position != s.position || pending != s.pending)
    throw Error(path + ": holds position " + std::to_string(position) + ", the stream is at " +
                std::to_string(s.position));
  auto sum = meta.find("checksum");
  if (sum == meta.end()) throw Error(path + ": __metadata__/checksum: missing");
  ir::TensorMap state = readStateFile(model_, *compiled_, path);
  if (stateChecksum(state) != sum->second)
    throw Error(path + ": checksum mismatch: the file is corrupt (expected " + clip(sum->second) + ")");
  loadState(*session, state, path);
  s.session = std::move(session);
}

void StreamServer::evict(Stream& s, const std::string& reason) {
  if (!s.session) return;
  if (!options_.stateDir.empty()) {
    spill(s);
    s.session.reset();
    if (options_.log)
      options_.log("spilled stream " + s.id + " (" + reason + ") at position " + std::to_string(s.position));
  } else {
    const std::string id = s.id;
    const std::int64_t position = s.position;
    streams_.erase(id);
    tombstone(id, reason, position);
    if (options_.log)
      options_.log("dropped stream " + id + " (" + reason + ") at position " + std::to_string(position));
  }
  ++(reason == "idle" ? counters_.evictedIdle : counters_.evictedCapacity);
  updateGauges();
}

void StreamServer::makeRoom(const std::string& keep) {
  for (;;) {
    std::int64_t resident = 0;
    Stream* oldest = nullptr;
    for (auto& [id, s] : streams_) {
      if (!s.session) continue;
      ++resident;
      if (id != keep && (!oldest || s.lastUsed < oldest->lastUsed)) oldest = &s;
    }
    if (resident < options_.maxResident || !oldest) return;
    evict(*oldest, "capacity");
  }
}

void StreamServer::sweepIdle() {
  if (options_.idleSeconds <= 0) return;
  const auto limit =
      Clock::now() - std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(options_.idleSeconds));
  std::vector<std::string> idle;
  for (auto& [id, s] : streams_)
    if (s.session && s.lastUsed < limit) idle.push_back(id);
  for (const std::string& id : idle) evict(streams_.at(id), "idle");
}

StreamServer::Stream& StreamServer::resident(const std::string& id, bool* restored, double* restoreSeconds) {
  Stream& s = find(id);
  if (restored) *restored = false;
  if (s.session) return s;
  makeRoom(id);
  const auto start = Clock::now();
  try {
    restore(s);
  } catch (const Error& e) {
    const std::int64_t position = s.position;
    streams_.erase(id);
    tombstone(id, "corrupt_state", position);
    ++counters_.corrupt;
    updateGauges();
    if (options_.log) options_.log("refused state file of stream " + id + " (left as it is): " + oneLine(e.what()));
    ServeError err{410, "stream_evicted",
                   "stream " + quote(id) + " is gone: its state file was refused: " + oneLine(e.what())};
    err.extra = {{"reason", "corrupt_state"}, {"position", position}};
    throw err;
  }
  ++counters_.restored;
  if (restored) *restored = true;
  if (restoreSeconds) *restoreSeconds = std::chrono::duration<double>(Clock::now() - start).count();
  updateGauges();
  return s;
}

nlohmann::json StreamServer::info(const Stream& s) const {
  const auto wall = std::chrono::duration<double>(s.lastUsedWall.time_since_epoch()).count();
  return {
      {"id", s.id},
      {"position", s.position},
      {"mem_len", setting_.memLen},
      {"mem_filled", s.session ? s.session->mlen()
                               : std::min<std::int64_t>(std::max<std::int64_t>(s.position - 1, 0), setting_.memLen)},
      {"residency", s.session ? "resident" : "spilled"},
      {"last_used", wall},
      {"bytes", perStreamBytes_}};
}

nlohmann::json StreamServer::create(const std::string& requested) {
  std::string id = requested;
  if (id.empty()) {
    static std::mt19937_64 rng{std::random_device{}()};
    do id = "s-" + hex(rng()).substr(0, 12) + std::to_string(minted_++);
    while (streams_.contains(id));
  } else if (!validStreamId(id)) {
    throw ServeError{400, "invalid_request",
                     "id: expected 1 to 128 of [A-Za-z0-9_.-], not starting with '.', got " + quote(clip(id))};
  }
  if (streams_.contains(id)) throw ServeError{409, "stream_exists", "stream " + quote(id) + " exists"};
  if (std::int64_t(streams_.size()) >= options_.maxStreams)
    throw ServeError{
        503, "too_many_streams",
        "the server holds " + std::to_string(streams_.size()) + " streams (--max-streams); delete one or retry later"};
  makeRoom(id);
  Stream s;
  s.id = id;
  s.session = std::make_unique<backend::Session>(compiled_);
  touch(s);
  tombstones_.erase(id);  // a new stream under a dropped one's id
  auto [it, inserted] = streams_.emplace(id, std::move(s));
  updateGauges();
  return info(it->second);
}

nlohmann::json StreamServer::describe(const std::string& id) { return info(find(id)); }

void StreamServer::run(Stream& s, const std::vector<std::int64_t>& inputs, const std::vector<std::int64_t>* targets,
                       std::vector<float>* nll, std::vector<float>* lastRow) {
  const std::int64_t n = std::int64_t(inputs.size()), qlen = setting_.qlen;
  for (std::int64_t i = 0; i < n; i += qlen) {
    const std::int64_t len = std::min(qlen, n - i);
    ir::Tensor tok = ir::Tensor::zeros({ir::DType::I64, {len, 1}});
    std::copy(inputs.begin() + i, inputs.begin() + i + len, tok.data<std::int64_t>());
    if (targets) {
      ir::Tensor tgt = ir::Tensor::zeros({ir::DType::I64, {len, 1}});
      std::copy(targets->begin() + i, targets->begin() + i + len, tgt.data<std::int64_t>());
      backend::ForwardResult out = s.session->forward(tok, &tgt, /*logprob=*/false);
      const float* v = out.nll->data<float>();
      for (std::int64_t t = 0; t < len; ++t) {
        if (!std::isfinite(v[t]))
          throwNonFinite(model_.path, "the NLL of token " + std::to_string(s.position + i + t) + " of stream " + s.id,
                         v[t]);
        nll->push_back(v[t]);
      }
    } else {
      backend::ForwardResult out = s.session->forward(tok, nullptr, /*logprob=*/true);
      const std::int64_t nToken = out.logprob->shape().back();
      const float* last = out.logprob->data<float>() + (len - 1) * nToken;
      if (i + len == n) {
        if (const std::int64_t k = firstNonFinite(last, nToken); k >= 0)
          throwNonFinite(model_.path, "the log-probability of token id " + std::to_string(k) + " in stream " + s.id,
                         last[k]);
        lastRow->assign(last, last + nToken);
      }
    }
  }
}

namespace {
void checkPosition(const std::string& id, std::int64_t expect, std::int64_t position) {
  if (expect >= 0 && expect != position) {
    ServeError e{409, "position_mismatch",
                 "stream " + quote(id) + " is at position " + std::to_string(position) + ", the request expected " +
                     std::to_string(expect)};
    e.extra = {{"position", position}};
    throw e;
  }
}
}  // namespace

nlohmann::json StreamServer::score(const std::string& id, const std::vector<std::int64_t>& tokens,
                                   std::int64_t expectPosition, bool perToken) {
  checkPosition(id, expectPosition, find(id).position);
  if (tokens.empty()) throw ServeError{400, "invalid_request", "expected at least one token to score"};
  for (std::int64_t t : tokens)
    if (t < 0 || t >= model_.spec.n_token)
      throw ServeError{400, "invalid_request",
                       "token id " + std::to_string(t) + " outside [0, " + std::to_string(model_.spec.n_token) + ")"};
  bool restored = false;
  double restoreSeconds = 0;
  Stream& s = resident(id, &restored, &restoreSeconds);
  const auto start = Clock::now();
  // Inputs [pending, tokens[0..n-2]] predict tokens; a fresh stream's first token is only an input.
  std::vector<std::int64_t> inputs, targets;
  if (s.pending >= 0) inputs.push_back(s.pending);
  inputs.insert(inputs.end(), tokens.begin(), tokens.end() - 1);
  targets.assign(tokens.begin() + (s.pending >= 0 ? 0 : 1), tokens.end());
  std::vector<float> nll;
  run(s, inputs, &targets, &nll, nullptr);
  s.position += std::int64_t(tokens.size());
  s.pending = tokens.back();
  touch(s);
  double sum = 0;
  for (float v : nll) sum += double(v);
  counters_.tokensScored += std::int64_t(nll.size());
  const std::int64_t scored = std::int64_t(nll.size());
  nlohmann::json r = {{"id", id},
                      {"nll_sum", sum},
                      {"tokens", scored},
                      {"nll_per_token", scored ? sum / double(scored) : 0.0},
                      {"perplexity", scored ? std::exp(sum / double(scored)) : 1.0},
                      {"position", s.position},
                      {"restored", restored},
                      {"seconds", std::chrono::duration<double>(Clock::now() - start).count()}};
  if (restored) r["restore_seconds"] = restoreSeconds;
  if (perToken) r["per_token"] = std::vector<double>(nll.begin(), nll.end());  // exact: each float as a double
  return r;
}

nlohmann::json StreamServer::generate(const std::string& id, const GenerateOptions& o,
                                      const std::function<bool(std::int64_t, std::int64_t)>& onToken) {
  checkPosition(id, o.expectPosition, find(id).position);
  for (std::int64_t t : o.prompt)
    if (t < 0 || t >= model_.spec.n_token)
      throw ServeError{
          400, "invalid_request",
          "prompt token id " + std::to_string(t) + " outside [0, " + std::to_string(model_.spec.n_token) + ")"};
  try {
    checkSamplerOptions(o.sampler);
  } catch (const Error& e) {
    throw ServeError{400, "invalid_request", oneLine(e.what())};
  }
  if (o.maxTokens < 1) throw ServeError{400, "invalid_request", "max_tokens: expected at least 1"};
  if (find(id).pending < 0 && o.prompt.empty())
    throw ServeError{400, "invalid_request", "stream " + quote(id) + " is empty: give a prompt to continue"};
  bool restored = false;
  double restoreSeconds = 0;
  Stream& s = resident(id, &restored, &restoreSeconds);
  const auto start = Clock::now();
  // The pending token and the prompt, in segments of qlen (driver/generator.h's order); then
  // every token chosen is fed alone when the next is asked for, and the last one stays pending.
  std::vector<std::int64_t> inputs;
  if (s.pending >= 0) inputs.push_back(s.pending);
  inputs.insert(inputs.end(), o.prompt.begin(), o.prompt.end());
  std::vector<float> row;
  run(s, inputs, nullptr, nullptr, &row);
  s.position += std::int64_t(o.prompt.size());
  s.pending = -1;  // fed
  Sampler sampler(o.sampler);
  std::vector<std::int64_t> chosen;
  const auto promptDone = Clock::now();
  double firstTokenSeconds = 0;
  for (std::int64_t k = 0; k < o.maxTokens; ++k) {
    if (k > 0) run(s, {s.pending}, nullptr, nullptr, &row);
    const std::int64_t next = sampler.next(row);
    s.pending = next;
    ++s.position;
    chosen.push_back(next);
    ++counters_.tokensGenerated;
    if (k == 0) firstTokenSeconds = std::chrono::duration<double>(Clock::now() - start).count();
    if (onToken && !onToken(next, s.position)) break;
  }
  touch(s);
  const double genSeconds = std::chrono::duration<double>(Clock::now() - promptDone).count();
  nlohmann::json r = {{"id", id},
                      {"token_ids", chosen},
                      {"position", s.position},
                      {"restored", restored},
                      {"usage", {{"prompt_tokens", o.prompt.size()}, {"completion_tokens", chosen.size()}}},
                      {"timings",
                       {{"prompt_seconds", std::chrono::duration<double>(promptDone - start).count()},
                        {"first_token_seconds", firstTokenSeconds},
                        {"tokens_per_second", genSeconds > 0 ? double(chosen.size()) / genSeconds : 0.0}}}};
  if (restored) r["restore_seconds"] = restoreSeconds;
  return r;
}

nlohmann::json StreamServer::save(const std::string& id) {
  if (options_.stateDir.empty())
    throw ServeError{400, "no_state_dir", "the server has no --state-dir to save streams to"};
  Stream& s = resident(id, nullptr, nullptr);
  spill(s);
  touch(s);
  nlohmann::json r = info(s);
  r["path"] = statePath(id);
  return r;
}

void StreamServer::remove(const std::string& id) {
  find(id);
  streams_.erase(id);
  if (!options_.stateDir.empty()) {
    std::error_code ec;
    fs::remove(statePath(id), ec);
  }
  updateGauges();
}

void StreamServer::spillAll() {
  if (options_.stateDir.empty()) return;
  std::int64_t n = 0;
  for (auto& [id, s] : streams_)
    if (s.session) {
      spill(s);
      s.session.reset();
      ++n;
    }
  updateGauges();
  if (options_.log) options_.log("spilled " + std::to_string(n) + " stream(s) to " + options_.stateDir);
}

}  // namespace txl::driver
