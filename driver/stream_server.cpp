// driver/stream_server.cpp - StreamServer.
#include "driver/stream_server.h"

#include <fcntl.h>
#include <sys/resource.h>
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
#include "frontend/atomic_file.h"
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

// A server holds a descriptor per stream it owns: the soft limit on open files goes up to the hard one.
void raiseOpenFileLimit() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &limit);
  }
}

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
    raiseOpenFileLimit();  // a lock file per stream held
  }
  compiled_ = compile(model_, setting_);
  const backend::ModelInfo& info = compiled_->info();
  const bool canMask = info.padWarmup || info.fullInitialMemory || info.memLen == 0;
  maxBatch_ = canMask ? std::max<std::int64_t>(options_.maxBatch, 1) : 1;
  if (options_.log && options_.maxBatch > 1 && !canMask)
    options_.log("every step runs alone: this model cannot mask one stream's memory (only attn_type 0 pads)");
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
}

// --- requests ------------------------------------------------------------------

// A score or generation in flight: its inputs, run a segment at a time, and what it has produced.
struct StreamServer::Work {
  std::string id;
  bool generating = false;
  std::vector<std::int64_t> tokens;  // score: the request's tokens
  std::int64_t expectPosition = -1;
  bool perToken = false;
  GenerateOptions options;
  std::function<bool(std::int64_t, std::int64_t)> onToken;
  std::promise<void>* started = nullptr;
  std::promise<nlohmann::json> done;

  // Inputs [pending, ...] and, when scoring, the token each predicts; a
  // generation appends every token it chooses, to be run by the next step.
  std::vector<std::int64_t> inputs, targets;
  std::size_t next = 0;  // inputs run so far
  std::vector<float> nll;
  std::optional<Sampler> sampler;
  std::vector<std::int64_t> chosen;
  bool restored = false;
  double restoreSeconds = 0, firstTokenSeconds = 0;
  Clock::time_point start, promptDone, lastStep;

  std::int64_t segment(std::int64_t qlen) const {
    return std::min<std::int64_t>(qlen, std::int64_t(inputs.size() - next));
  }
};

// A batched session whose lanes hold streams ("" : vacant).
struct StreamServer::Pool {
  std::unique_ptr<backend::Session> session;
  std::vector<std::string> lanes;
  std::int64_t size() const { return std::int64_t(lanes.size()); }
};

void StreamServer::push(Request request) {
  {
    std::lock_guard lock(mutex_);
    if (stop_) throw ServeError{503, "shutting_down", "the server is shutting down"};
    if (queued_ >= options_.maxQueue)
      throw ServeError{429, "queue_full",
                       "the queue holds " + std::to_string(queued_.load()) + " requests (--max-queue); retry later"};
    ++queued_;
    counters_.queueDepth = queued_.load();
    incoming_.push_back(std::move(request));
  }
  cv_.notify_one();
}

void StreamServer::submit(const std::string& id, const std::function<void(StreamServer&)>& job) {
  auto done = std::make_shared<std::promise<void>>();
  std::future<void> f = done->get_future();
  push({id,
        [this, job, done] {
          try {
            job(*this);
            done->set_value();
          } catch (...) {
            done->set_exception(std::current_exception());
          }
        },
        nullptr});
  f.get();
}

std::future<nlohmann::json> StreamServer::enqueue(std::unique_ptr<Work> work) {
  std::future<nlohmann::json> f = work->done.get_future();
  const std::string id = work->id;
  push({id, nullptr, std::move(work)});
  return f;
}

std::future<nlohmann::json> StreamServer::score(const std::string& id, std::vector<std::int64_t> tokens,
                                                std::int64_t expectPosition, bool perToken) {
  auto w = std::make_unique<Work>();
  w->id = id;
  w->tokens = std::move(tokens);
  w->expectPosition = expectPosition;
  w->perToken = perToken;
  return enqueue(std::move(w));
}

std::future<nlohmann::json> StreamServer::generate(const std::string& id, GenerateOptions options,
                                                   std::function<bool(std::int64_t, std::int64_t)> onToken,
                                                   std::promise<void>* started) {
  auto w = std::make_unique<Work>();
  w->id = id;
  w->generating = true;
  w->expectPosition = options.expectPosition;
  w->options = std::move(options);
  w->onToken = std::move(onToken);
  w->started = started;
  return enqueue(std::move(w));
}

void StreamServer::loop() {
  auto lastSweep = Clock::now();
  for (;;) {
    std::deque<Request> arrived;
    {
      std::unique_lock lock(mutex_);
      const bool busy = !active_.empty();
      if (!busy) cv_.wait_for(lock, std::chrono::milliseconds(500), [&] { return stop_ || !incoming_.empty(); });
      else if (options_.batchWaitSeconds > 0 && std::int64_t(active_.size()) < maxBatch_)
        cv_.wait_for(lock, std::chrono::duration<double>(options_.batchWaitSeconds),
                     [&] { return stop_ || !incoming_.empty(); });
      arrived.swap(incoming_);
      if (arrived.empty() && !busy && stop_) return;
    }
    for (Request& r : arrived) admit(std::move(r));
    if (!active_.empty()) step();
    while (active_.empty() && !barriers_.empty()) {
      Request r = std::move(barriers_.front());
      barriers_.pop_front();
      --queued_;
      r.job();
    }
    counters_.queueDepth = queued_.load();
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

// Starts a request now, or queues it behind the one in flight on its stream.
void StreamServer::admit(Request r) {
  if (r.id == "*") {
    barriers_.push_back(std::move(r));
    return;
  }
  auto it = streams_.find(r.id);
  const bool inFlight = it != streams_.end() && it->second.work;
  auto w = waiting_.find(r.id);
  if (inFlight || (w != waiting_.end() && !w->second.empty())) {
    waiting_[r.id].push_back(std::move(r));
    return;
  }
  --queued_;
  if (r.job) r.job();
  else begin(std::move(r.work));
}

void StreamServer::startWaiting(const std::string& id) {
  auto it = waiting_.find(id);
  while (it != waiting_.end() && !it->second.empty()) {
    auto s = streams_.find(id);
    if (s != streams_.end() && s->second.work) return;
    Request r = std::move(it->second.front());
    it->second.pop_front();
    --queued_;
    if (r.job) r.job();
    else begin(std::move(r.work));
  }
  if (it != waiting_.end()) waiting_.erase(it);
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

void checkIds(const std::vector<std::int64_t>& ids, std::int64_t nToken, const char* what) {
  for (std::int64_t t : ids)
    if (t < 0 || t >= nToken)
      throw ServeError{400, "invalid_request",
                       std::string(what) + " id " + std::to_string(t) + " outside [0, " + std::to_string(nToken) + ")"};
}
}  // namespace

// Checks a request against its stream, makes the stream resident and lays out its inputs.
void StreamServer::begin(std::unique_ptr<Work> owned) {
  Work& w = *owned;
  try {
    Stream& found = find(w.id);
    checkPosition(w.id, w.expectPosition, found.position);
    if (w.generating) {
      checkIds(w.options.prompt, model_.spec.n_token, "prompt token");
      try {
        checkSamplerOptions(w.options.sampler);
      } catch (const Error& e) {
        throw ServeError{400, "invalid_request", oneLine(e.what())};
      }
      if (w.options.maxTokens < 1) throw ServeError{400, "invalid_request", "max_tokens: expected at least 1"};
      if (found.pending < 0 && w.options.prompt.empty())
        throw ServeError{400, "invalid_request", "stream " + quote(w.id) + " is empty: give a prompt to continue"};
    } else {
      if (w.tokens.empty()) throw ServeError{400, "invalid_request", "expected at least one token to score"};
      checkIds(w.tokens, model_.spec.n_token, "token");
    }
    Stream& s = resident(w.id, &w.restored, &w.restoreSeconds);
    w.start = w.lastStep = Clock::now();
    if (s.pending >= 0) w.inputs.push_back(s.pending);
    if (w.generating) {
      // The pending token and the prompt, in segments of qlen (driver/generator.h's
      // order); then every token chosen is run alone when the next is asked for.
      w.inputs.insert(w.inputs.end(), w.options.prompt.begin(), w.options.prompt.end());
      w.sampler.emplace(w.options.sampler);
    } else {
      // Inputs [pending, tokens[0..n-2]] predict tokens; a fresh stream's first token is only an input.
      w.inputs.insert(w.inputs.end(), w.tokens.begin(), w.tokens.end() - 1);
      w.targets.assign(w.tokens.begin() + (s.pending >= 0 ? 0 : 1), w.tokens.end());
    }
    if (w.started) w.started->set_value();
    s.work = &w;
    active_.push_back(std::move(owned));
  } catch (...) {
    if (w.started) w.started->set_exception(std::current_exception());
    w.done.set_exception(std::current_exception());
    return;
  }
  if (!w.generating && w.inputs.empty()) finish(w);  // one token on a fresh stream: nothing to predict
}

void StreamServer::step() {
  const std::int64_t qlen = setting_.qlen;
  Work* lead = nullptr;
  for (const auto& w : active_)
    if (!lead || w->lastStep < lead->lastStep) lead = w.get();
  std::vector<Work*> group = {lead};
  if (maxBatch_ > 1) {
    std::vector<Work*> others;
    for (const auto& w : active_)
      if (w.get() != lead && w->generating == lead->generating && w->segment(qlen) == lead->segment(qlen))
        others.push_back(w.get());
    std::sort(others.begin(), others.end(), [](Work* a, Work* b) { return a->lastStep < b->lastStep; });
    for (Work* w : others) {
      if (std::int64_t(group.size()) >= maxBatch_) break;
      group.push_back(w);
    }
  }
  ++counters_.steps;
  counters_.stepStreams += std::int64_t(group.size());
  counters_.lastBatch = std::int64_t(group.size());
  if (group.size() == 1) runAlone(*lead);
  else runTogether(group);
}

namespace {
// A segment's tokens (and targets) for `batch` lanes, lane b taking `inputs[b]` (null: vacant, token 0).
ir::Tensor segmentIds(std::int64_t len, std::int64_t batch,
                      const std::function<const std::int64_t*(std::int64_t lane)>& laneIds) {
  ir::Tensor t = ir::Tensor::zeros({ir::DType::I64, {len, batch}});
  std::int64_t* out = t.data<std::int64_t>();
  for (std::int64_t b = 0; b < batch; ++b)
    if (const std::int64_t* ids = laneIds(b))
      for (std::int64_t i = 0; i < len; ++i) out[i * batch + b] = ids[i];
  return t;
}
}  // namespace

void StreamServer::runAlone(Work& w) {
  Stream& s = streams_.at(w.id);
  if (!s.session) toOwnSession(s);
  const std::int64_t len = w.segment(setting_.qlen);
  const auto ids = [&](const std::vector<std::int64_t>& v) {
    return segmentIds(len, 1, [&](std::int64_t) { return v.data() + w.next; });
  };
  try {
    const ir::Tensor tokens = ids(w.inputs);
    backend::ForwardResult out;
    if (w.generating) out = s.session->forward(tokens, nullptr, /*logprob=*/true);
    else {
      const ir::Tensor targets = ids(w.targets);
      out = s.session->forward(tokens, &targets, /*logprob=*/false);
    }
    advance(w, out, 0, 1);
  } catch (...) {
    fail(w, std::current_exception());
  }
}

void StreamServer::runTogether(const std::vector<Work*>& group) {
  Pool& pool = poolFor(group);
  const std::int64_t len = group.front()->segment(setting_.qlen), batch = pool.size();
  std::vector<Work*> byLane(std::size_t(batch), nullptr);
  for (Work* w : group) byLane[std::size_t(streams_.at(w->id).lane)] = w;
  const auto ids = [&](bool targets) {
    return segmentIds(len, batch, [&](std::int64_t b) -> const std::int64_t* {
      Work* w = byLane[std::size_t(b)];
      return w ? (targets ? w->targets.data() : w->inputs.data()) + w->next : nullptr;
    });
  };
  backend::ForwardResult out;
  try {
    const ir::Tensor tokens = ids(false);
    if (group.front()->generating) out = pool.session->forward(tokens, nullptr, /*logprob=*/true);
    else {
      const ir::Tensor targets = ids(true);
      out = pool.session->forward(tokens, &targets, /*logprob=*/false);
    }
  } catch (...) {
    for (Work* w : group) fail(*w, std::current_exception());
    return;
  }
  for (std::int64_t b = 0; b < batch; ++b)
    if (Work* w = byLane[std::size_t(b)]) {
      try {
        advance(*w, out, b, batch);
      } catch (...) {
        fail(*w, std::current_exception());
      }
    }
}

bool StreamServer::advance(Work& w, const backend::ForwardResult& out, std::int64_t lane, std::int64_t batch) {
  Stream& s = streams_.at(w.id);
  const std::int64_t len = w.segment(setting_.qlen);
  const std::int64_t at = s.position + std::int64_t(w.next);  // the first token this segment predicts
  w.next += std::size_t(len);
  w.lastStep = Clock::now();
  if (!w.generating) {
    const float* v = out.nll->data<float>();
    for (std::int64_t t = 0; t < len; ++t) {
      const float x = v[t * batch + lane];
      if (!std::isfinite(x))
        throwNonFinite(model_.path, "the NLL of token " + std::to_string(at + t) + " of stream " + s.id, x);
      w.nll.push_back(x);
    }
    if (w.next < w.inputs.size()) return false;
    s.position += std::int64_t(w.tokens.size());
    s.pending = w.tokens.back();
    counters_.tokensScored += std::int64_t(w.nll.size());
    finish(w);
    return true;
  }
  if (w.next < w.inputs.size()) return false;  // the prompt goes on
  const std::int64_t nToken = out.logprob->shape().back();
  const float* row = out.logprob->data<float>() + ((len - 1) * batch + lane) * nToken;
  if (const std::int64_t k = firstNonFinite(row, nToken); k >= 0)
    throwNonFinite(model_.path, "the log-probability of token id " + std::to_string(k) + " in stream " + s.id, row[k]);
  if (w.chosen.empty()) {
    s.position += std::int64_t(w.options.prompt.size());
    s.pending = -1;  // fed
    w.promptDone = Clock::now();
  }
  const std::int64_t token = w.sampler->next(std::span<const float>(row, std::size_t(nToken)));
  s.pending = token;
  ++s.position;
  w.chosen.push_back(token);
  ++counters_.tokensGenerated;
  if (w.chosen.size() == 1) w.firstTokenSeconds = std::chrono::duration<double>(Clock::now() - w.start).count();
  const bool more = (!w.onToken || w.onToken(token, s.position)) && std::int64_t(w.chosen.size()) < w.options.maxTokens;
  if (more) {
    w.inputs.push_back(token);
    return false;
  }
  finish(w);
  return true;
}

void StreamServer::finish(Work& w) {
  Stream& s = streams_.at(w.id);
  touch(s);
  nlohmann::json r;
  if (!w.generating) {
    double sum = 0;
    for (float v : w.nll) sum += double(v);
    const std::int64_t scored = std::int64_t(w.nll.size());
    if (w.inputs.empty()) {  // nothing was run
      s.position += std::int64_t(w.tokens.size());
      s.pending = w.tokens.back();
    }
    r = {{"id", w.id},
         {"nll_sum", sum},
         {"tokens", scored},
         {"nll_per_token", scored ? sum / double(scored) : 0.0},
         {"perplexity", scored ? std::exp(sum / double(scored)) : 1.0},
         {"position", s.position},
         {"restored", w.restored},
         {"seconds", std::chrono::duration<double>(Clock::now() - w.start).count()}};
    if (w.perToken) r["per_token"] = std::vector<double>(w.nll.begin(), w.nll.end());  // exact: each float as a double
  } else {
    const double genSeconds = std::chrono::duration<double>(Clock::now() - w.promptDone).count();
    r = {{"id", w.id},
         {"token_ids", w.chosen},
         {"position", s.position},
         {"restored", w.restored},
         {"usage", {{"prompt_tokens", w.options.prompt.size()}, {"completion_tokens", w.chosen.size()}}},
         {"timings",
          {{"prompt_seconds", std::chrono::duration<double>(w.promptDone - w.start).count()},
           {"first_token_seconds", w.firstTokenSeconds},
           {"tokens_per_second", genSeconds > 0 ? double(w.chosen.size()) / genSeconds : 0.0}}}};
  }
  if (w.restored) r["restore_seconds"] = w.restoreSeconds;
  s.work = nullptr;
  try {
    if (options_.durable && !options_.stateDir.empty()) spill(s);  // on disk before the reply
    w.done.set_value(std::move(r));
  } catch (...) {
    w.done.set_exception(std::current_exception());
  }
  const std::string id = w.id;
  std::erase_if(active_, [&](const std::unique_ptr<Work>& p) { return p.get() == &w; });
  startWaiting(id);
}

// A request that fails midway leaves its stream's memory holding part of it:
// the stream is dropped (and its state file removed) rather than served from that memory.
void StreamServer::fail(Work& w, std::exception_ptr error) {
  const std::string id = w.id;
  std::string what = "unknown error";
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    what = oneLine(e.what());
  } catch (...) {
  }
  ++counters_.failed;
  if (options_.log) options_.log("request on stream " + id + " failed midway; the stream is dropped: " + what);
  w.done.set_exception(error);
  Stream& s = streams_.at(id);
  s.work = nullptr;
  std::erase_if(active_, [&](const std::unique_ptr<Work>& p) { return p.get() == &w; });
  drop(id, "request_failed");
  startWaiting(id);
}

// --- pools ---------------------------------------------------------------------

StreamServer::Pool& StreamServer::poolFor(const std::vector<Work*>& group) {
  const std::int64_t n = std::int64_t(group.size());
  std::int64_t size = 2;
  while (size < n) size *= 2;
  size = std::min(size, maxBatch_);
  const auto member = [&](const std::string& id) {
    return !id.empty() && std::any_of(group.begin(), group.end(), [&](Work* w) { return w->id == id; });
  };
  // The pool holding the most members (the smallest on a tie); else a vacant
  // one of the size; else a new one, up to maxResident / size of that size.
  Pool* best = nullptr;
  std::int64_t held = 0, ofSize = 0;
  for (const auto& p : pools_) {
    if (p->size() < n) continue;
    ofSize += p->size() == size;
    const std::int64_t h = std::count_if(p->lanes.begin(), p->lanes.end(), member);
    if (h > held || (h == held && h > 0 && p->size() < best->size())) best = p.get(), held = h;
  }
  if (!best)
    for (const auto& p : pools_)
      if (p->size() == size && std::all_of(p->lanes.begin(), p->lanes.end(), [](auto& l) { return l.empty(); }))
        best = p.get();
  if (!best && ofSize < std::max<std::int64_t>(1, options_.maxResident / size)) {
    auto& compiled = batched_[size];
    if (!compiled) {
      Setting s = setting_;
      s.batch = size;
      compiled = compile(model_, s, compiled_.get());  // one packed copy of the weights for every pool
    }
    auto pool = std::make_unique<Pool>();
    pool->session = std::make_unique<backend::Session>(compiled);
    pool->lanes.assign(std::size_t(size), "");
    pools_.push_back(std::move(pool));
    best = pools_.back().get();
  }
  if (!best)  // every pool of the size is in use: take the one used least recently
    for (const auto& p : pools_) {
      if (p->size() != size) continue;
      const auto last = [&](Pool& q) {
        Clock::time_point t{};
        for (const auto& id : q.lanes)
          if (!id.empty()) t = std::max(t, streams_.at(id).lastUsed);
        return t;
      };
      if (!best || last(*p) < last(*best)) best = p.get();
    }
  for (const std::string& id : std::vector<std::string>(best->lanes))
    if (!id.empty() && !member(id)) toOwnSession(streams_.at(id));
  for (Work* w : group) {
    Stream& s = streams_.at(w->id);
    if (s.pool == best) continue;
    const auto lane = std::find(best->lanes.begin(), best->lanes.end(), "");
    toLane(s, *best, std::int64_t(lane - best->lanes.begin()));
  }
  return *best;
}

void StreamServer::vacate(Stream& s) {
  if (!s.pool) return;
  s.pool->lanes[std::size_t(s.lane)].clear();
  s.pool->session->resetStream(s.lane);  // a vacant lane's rows are masked
  s.pool = nullptr;
  s.lane = -1;
}

void StreamServer::toOwnSession(Stream& s) {
  if (s.session) return;
  TXL_CHECK(s.pool != nullptr, "moving a stream that is not resident");
  auto session = std::make_unique<backend::Session>(compiled_);
  session->copyStream(0, *s.pool->session, s.lane);
  vacate(s);
  s.session = std::move(session);
  ++counters_.laneMoves;
}

void StreamServer::toLane(Stream& s, Pool& pool, std::int64_t lane) {
  TXL_CHECK(lane >= 0 && lane < pool.size() && pool.lanes[std::size_t(lane)].empty(), "a lane that is not vacant");
  if (s.session) pool.session->copyStream(lane, *s.session, 0);
  else pool.session->copyStream(lane, *s.pool->session, s.lane);
  vacate(s);
  s.session.reset();
  s.pool = &pool;
  s.lane = lane;
  pool.lanes[std::size_t(lane)] = s.id;
  ++counters_.laneMoves;
}

ir::TensorMap StreamServer::stateOf(const Stream& s) const {
  TXL_CHECK(s.resident(), "the state of a stream that is not resident");
  return s.session ? s.session->saveState() : s.pool->session->saveStream(s.lane);
}

std::int64_t StreamServer::memoryOf(const Stream& s) const {
  return s.session ? s.session->mlen() : s.pool->session->streamMlen(s.lane);
}

std::string StreamServer::statePath(const std::string& id) const {
  return (fs::path(options_.stateDir) / (id + kStateSuffix)).string();
}

StreamLock StreamServer::claim(const std::string& id) {
  std::optional<StreamLock> lock = StreamLock::claim(options_.stateDir, id);
  if (!lock)
    throw ServeError{409, "stream_owned_elsewhere",
                     "stream " + quote(id) + " is owned by another server sharing --state-dir " + options_.stateDir};
  return std::move(*lock);
}

StreamServer::Stream& StreamServer::listStateFile(const std::string& id, StreamLock lock) {
  const std::string path = statePath(id);
  frontend::SafetensorsFile f = frontend::SafetensorsFile::open(path);
  const auto& meta = f.metadata();
  auto it = meta.find("stream_id");
  if (it == meta.end() || it->second != id) throw Error(path + ": __metadata__/stream_id: expected " + quote(id));
  Stream s;
  s.id = id;
  s.position = parseCount(meta, "position", path, 0);
  s.pending = parseCount(meta, "pending", path, -1);
  s.lock = std::move(lock);
  s.lastUsed = Clock::now();
  s.lastUsedWall = std::chrono::system_clock::now();
  return streams_.insert_or_assign(id, std::move(s)).first->second;
}

void StreamServer::scanStateDir() {
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(options_.stateDir))
    if (e.is_regular_file() && e.path().extension() == kStateSuffix) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  std::int64_t elsewhere = 0;
  for (const fs::path& p : files) {
    const std::string id = p.stem().string();
    if (!validStreamId(id) || std::int64_t(streams_.size()) >= options_.maxStreams) continue;
    std::optional<StreamLock> lock = StreamLock::claim(options_.stateDir, id);
    if (!lock) {
      ++elsewhere;
      continue;
    }
    try {
      listStateFile(id, std::move(*lock));
    } catch (const Error& e) {
      ++counters_.corrupt;
      if (options_.log) options_.log("refused state file " + p.string() + " (left as it is): " + oneLine(e.what()));
      tombstone(id, "corrupt_state", -1);
    }
  }
  if (options_.log && (!streams_.empty() || elsewhere))
    options_.log("found " + std::to_string(streams_.size()) + " spilled stream(s) in " + options_.stateDir +
                 (elsewhere ? " (" + std::to_string(elsewhere) + " more owned by other servers)" : ""));
}

StreamServer::Stream* StreamServer::adopt(const std::string& id) {
  if (options_.stateDir.empty() || !validStreamId(id)) return nullptr;
  std::error_code ec;
  if (!fs::exists(statePath(id), ec) && !fs::exists(fs::path(options_.stateDir) / (id + ".lock"), ec)) return nullptr;
  StreamLock lock = claim(id);
  if (!fs::exists(statePath(id), ec)) return nullptr;  // a lock left by a server that stopped before a spill
  if (std::int64_t(streams_.size()) >= options_.maxStreams)
    throw ServeError{503, "too_many_streams",
                     "the server holds " + std::to_string(streams_.size()) + " streams (--max-streams); stream " +
                         quote(id) + " stays on disk"};
  try {
    Stream& s = listStateFile(id, std::move(lock));
    if (options_.log) options_.log("took over stream " + id + " from " + options_.stateDir);
    updateGauges();
    return &s;
  } catch (const Error& e) {
    ++counters_.corrupt;
    if (options_.log) options_.log("refused state file " + statePath(id) + " (left as it is): " + oneLine(e.what()));
    tombstone(id, "corrupt_state", -1);
    return nullptr;  // find() answers with the tombstone
  }
}

void StreamServer::updateGauges() {
  std::int64_t resident = 0;
  for (const auto& [id, s] : streams_) resident += s.resident() ? 1 : 0;
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
  if (Stream* s = adopt(id)) return *s;
  if (tombstones_.contains(id)) return find(id);  // its state file was just refused
  throw notFound(id);
}

void StreamServer::spill(Stream& s) {
  ir::TensorMap state = stateOf(s);
  std::vector<std::pair<std::string, ir::Tensor>> tensors(state.begin(), state.end());
  // The file may have been read (listed, restored): it is the server's own, to be replaced.
  frontend::forgetInputFile(statePath(s.id));
  try {
    frontend::writeSafetensors(statePath(s.id), tensors,
                               {{"format", kStateFormat},
                                {"model_id", model_.modelId},
                                {"batch", "1"},
                                {"mem_len", std::to_string(setting_.memLen)},
                                {"mlen", std::to_string(memoryOf(s))},
                                {"semantics", frontend::semanticsName(model_.spec.semantics)},
                                {"initial_memory", frontend::initialMemoryName(setting_.initialMemory)},
                                {"stream_id", s.id},
                                {"position", std::to_string(s.position)},
                                {"pending", std::to_string(s.pending)},
                                {"checksum", stateChecksum(state)}});
  } catch (const Error& e) {  // the stream stays as it was (resident); the file as it was
    ServeError err{507, "state_not_saved", "stream " + quote(s.id) + ": its state was not saved: " + oneLine(e.what())};
    err.extra = {{"position", s.position}};
    throw err;
  }
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
  if (!s.resident() || s.work) return;
  if (!options_.stateDir.empty()) {
    spill(s);
    vacate(s);
    s.session.reset();
    if (options_.log)
      options_.log("spilled stream " + s.id + " (" + reason + ") at position " + std::to_string(s.position));
  } else {
    drop(s.id, reason);
  }
  ++(reason == "idle" ? counters_.evictedIdle : counters_.evictedCapacity);
  updateGauges();
}

// Forgets stream `id` (its memory, its state file) and leaves a tombstone.
void StreamServer::drop(const std::string& id, const std::string& reason) {
  Stream& s = streams_.at(id);
  const std::int64_t position = s.position;
  vacate(s);
  forget(id);
  tombstone(id, reason, position);
  if (options_.log) options_.log("dropped stream " + id + " (" + reason + ") at position " + std::to_string(position));
  updateGauges();
}

void StreamServer::makeRoom(const std::string& keep) {
  for (;;) {
    std::int64_t resident = 0;
    Stream* oldest = nullptr;
    for (auto& [id, s] : streams_) {
      if (!s.resident()) continue;
      ++resident;
      if (id != keep && !s.work && (!oldest || s.lastUsed < oldest->lastUsed)) oldest = &s;
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
    if (s.resident() && !s.work && s.lastUsed < limit) idle.push_back(id);
  for (const std::string& id : idle) evict(streams_.at(id), "idle");
}

StreamServer::Stream& StreamServer::resident(const std::string& id, bool* restored, double* restoreSeconds) {
  Stream& s = find(id);
  if (restored) *restored = false;
  if (s.resident()) return s;
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
      {"mem_filled",
       s.resident() ? memoryOf(s) : std::min<std::int64_t>(std::max<std::int64_t>(s.position - 1, 0), setting_.memLen)},
      {"residency", s.resident() ? "resident" : "spilled"},
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
  if (streams_.contains(id) || adopt(id)) throw ServeError{409, "stream_exists", "stream " + quote(id) + " exists"};
  if (std::int64_t(streams_.size()) >= options_.maxStreams)
    throw ServeError{
        503, "too_many_streams",
        "the server holds " + std::to_string(streams_.size()) + " streams (--max-streams); delete one or retry later"};
  std::optional<StreamLock> lock;
  if (!options_.stateDir.empty()) lock = claim(id);
  makeRoom(id);
  Stream s;
  s.id = id;
  s.lock = std::move(lock);
  s.session = std::make_unique<backend::Session>(compiled_);
  touch(s);
  tombstones_.erase(id);  // a new stream under a dropped one's id
  auto [it, inserted] = streams_.emplace(id, std::move(s));
  if (options_.durable && !options_.stateDir.empty()) {
    try {
      spill(it->second);
    } catch (const ServeError&) {
      forget(id);  // not created: nothing of it is kept
      throw;
    }
  }
  updateGauges();
  return info(it->second);
}

nlohmann::json StreamServer::describe(const std::string& id) { return info(find(id)); }

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
  vacate(find(id));
  forget(id);
  updateGauges();
}

// Erases stream `id` with its state file and lock file (the lock held until both are gone).
void StreamServer::forget(const std::string& id) {
  std::optional<StreamLock> lock = std::move(streams_.at(id).lock);
  streams_.erase(id);
  if (lock) {
    std::error_code ec;
    fs::remove(statePath(id), ec);
    lock->remove();
  }
}

void StreamServer::spillAll() {
  if (options_.stateDir.empty()) return;
  std::int64_t n = 0;
  for (auto& [id, s] : streams_)
    if (s.resident()) {
      try {
        spill(s);
      } catch (const ServeError& e) {
        if (options_.log) options_.log(e.message + "; its memory is lost");
        continue;
      }
      vacate(s);
      s.session.reset();
      ++n;
    }
  updateGauges();
  if (options_.log) options_.log("spilled " + std::to_string(n) + " stream(s) to " + options_.stateDir);
}

}  // namespace txl::driver
