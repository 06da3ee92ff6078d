// tools/cmd_serve.cpp - `txlc serve MODEL_OR_ARTIFACT`: an HTTP/1.1 + JSON server of streams with memory.
//
// The routes (docs/SERVE.md) are thin: each parses its JSON, runs one
// operation of driver::StreamServer on its compute thread and answers; every
// error is {"error": {"code", "type", "message", ...}}. SIGINT/SIGTERM stop
// the listener, spill every stream to --state-dir and exit 0.
#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <ctime>
#include <deque>
#include <fstream>
#include <future>
#include <iostream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <regex>
#include <thread>

#include "driver/bench.h"
#include "driver/build_info.h"
#include "driver/generator.h"
#include "driver/score_report.h"
#include "driver/stream_server.h"
#include "frontend/atomic_file.h"
#include "ir/check.h"
#include "tools/cli_checks.h"
#include "tools/exit_codes.h"
#include "tools/model_flags.h"

namespace txl::tools {

namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

struct Options {
  ModelFlags model;
  std::string host = "127.0.0.1";
  int port = 8080;
  std::string stateDir;
  std::int64_t maxStreams = 1024, maxResident = 64, maxQueue = 256;
  double idleSeconds = 300;
  std::string apiKey, apiKeyFile;
  bool quiet = false;
  bool durable = false;
  std::int64_t maxBodyBytes = 8 << 20;
  std::int64_t maxRequestTokens = 1 << 20;
  std::int64_t maxNewTokens = 4096;
  double timeoutSeconds = 30;
  int httpThreads = 32;
  std::int64_t maxBatch = 8;
  double batchWaitMicroseconds = 0;
  bool randomWeights = false;
  std::uint64_t seed = 0;
};

// Prometheus counters and the latency histogram of the HTTP layer.
class Metrics {
 public:
  static constexpr double kBuckets[] = {0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 60};
  void request(const std::string& route, int code, double seconds) {
    std::lock_guard lock(mutex_);
    ++requests_[{route, code}];
    for (std::size_t i = 0; i < std::size(kBuckets); ++i)
      if (seconds <= kBuckets[i]) ++buckets_[i];
    ++count_;
    sum_ += seconds;
  }
  std::string text(const driver::StreamServer& server) {
    std::lock_guard lock(mutex_);
    std::string o;
    o += "# HELP txlc_requests_total HTTP requests by route and status code.\n# TYPE txlc_requests_total counter\n";
    for (const auto& [key, n] : requests_)
      o += "txlc_requests_total{route=\"" + key.first + "\",code=\"" + std::to_string(key.second) + "\"} " +
           std::to_string(n) + "\n";
    o += "# HELP txlc_request_seconds Request latency.\n# TYPE txlc_request_seconds histogram\n";
    for (std::size_t i = 0; i < std::size(kBuckets); ++i) {
      char le[32];
      std::snprintf(le, sizeof le, "%g", kBuckets[i]);
      o += "txlc_request_seconds_bucket{le=\"" + std::string(le) + "\"} " + std::to_string(buckets_[i]) + "\n";
    }
    o += "txlc_request_seconds_bucket{le=\"+Inf\"} " + std::to_string(count_) + "\n";
    o += "txlc_request_seconds_sum " + std::to_string(sum_) + "\ntxlc_request_seconds_count " + std::to_string(count_) +
         "\n";
    const auto& c = server.counters();
    auto line = [&](const std::string& name, const std::string& type, const std::string& help, auto... rows) {
      o += "# HELP " + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
      ((o += name + rows.first + " " + std::to_string(rows.second) + "\n"), ...);
    };
    using Row = std::pair<std::string, std::int64_t>;
    line("txlc_tokens_scored_total", "counter", "Tokens scored (predicted).", Row{"", c.tokensScored.load()});
    line("txlc_tokens_generated_total", "counter", "Tokens generated.", Row{"", c.tokensGenerated.load()});
    line("txlc_streams", "gauge", "Streams by residency.", Row{"{residency=\"resident\"}", c.resident.load()},
         Row{"{residency=\"spilled\"}", c.spilled.load()});
    line("txlc_stream_evictions_total", "counter", "Streams evicted, by reason.",
         Row{"{reason=\"idle\"}", c.evictedIdle.load()}, Row{"{reason=\"capacity\"}", c.evictedCapacity.load()});
    line("txlc_stream_restores_total", "counter", "Spilled streams restored.", Row{"", c.restored.load()});
    line("txlc_state_files_refused_total", "counter", "State files refused (torn, corrupt, another model).",
         Row{"", c.corrupt.load()});
    line("txlc_state_bytes", "gauge", "Bytes of resident stream memory.", Row{"", c.stateBytes.load()});
    line("txlc_queue_depth", "gauge", "Requests waiting for the compute thread.", Row{"", c.queueDepth.load()});
    line("txlc_requests_failed_total", "counter", "Requests that failed midway (their stream dropped).",
         Row{"", c.failed.load()});
    line("txlc_steps_total", "counter", "Segments run by the compute thread (each for one or more streams).",
         Row{"", c.steps.load()});
    line("txlc_step_streams_total", "counter", "Stream segments run (over txlc_steps_total: the mean batch size).",
         Row{"", c.stepStreams.load()});
    line("txlc_batch_size", "gauge", "Streams in the last step.", Row{"", c.lastBatch.load()});
    line("txlc_lane_moves_total", "counter", "Stream memories copied between sessions to batch them.",
         Row{"", c.laneMoves.load()});
    return o;
  }

 private:
  std::mutex mutex_;
  std::map<std::pair<std::string, int>, std::int64_t> requests_;
  std::int64_t buckets_[std::size(kBuckets)] = {};
  std::int64_t count_ = 0;
  double sum_ = 0;
};

// The route of a path, for the metrics: stream ids replaced by {id}.
std::string routeOf(const std::string& path) {
  static const std::regex stream(R"(^/v1/streams/[^/]+(/(score|generate|save))?$)");
  std::smatch m;
  if (std::regex_match(path, m, stream)) return "/v1/streams/{id}" + m[1].str();
  if (path == "/health" || path == "/metrics" || path == "/v1/models" || path == "/v1/streams" ||
      path == "/v1/tokenize")
    return path;
  return "other";
}

const char* statusType(int status) {
  switch (status) {
    case 400:
      return "invalid_request";
    case 401:
      return "unauthorized";
    case 404:
      return "not_found";
    case 405:
      return "method_not_allowed";
    case 413:
      return "payload_too_large";
    case 429:
      return "queue_full";
    default:
      return status >= 500 ? "server_error" : "error";
  }
}

json errorBody(int status, const std::string& type, const std::string& message, const json& extra = json::object()) {
  json e = {{"code", status}, {"type", type}, {"message", message}};
  for (auto it = extra.begin(); it != extra.end(); ++it) e[it.key()] = it.value();
  return {{"error", e}};
}

// JSON text; a byte sequence that is not UTF-8 (a token holding part of a character) becomes U+FFFD.
std::string dumpJson(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

void reply(httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_content(dumpJson(body) + "\n", "application/json");
}

void replyError(httplib::Response& res, const driver::ServeError& e) {
  reply(res, e.status, errorBody(e.status, e.type, e.message, e.extra));
}

// The request body as a JSON object; an empty body is {}.
json parseBody(const httplib::Request& req) {
  if (req.body.empty()) return json::object();
  json j;
  try {
    j = json::parse(req.body);
  } catch (const json::parse_error& e) {
    throw driver::ServeError{400, "invalid_json", std::string("the body is not JSON: ") + e.what()};
  }
  if (!j.is_object()) throw driver::ServeError{400, "invalid_json", "expected a JSON object as the body"};
  return j;
}

template <class T>
T field(const json& j, const char* key, T fallback) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  try {
    if constexpr (std::is_same_v<T, std::int64_t>) {
      if (!it->is_number_integer()) throw std::invalid_argument("");
    } else if constexpr (std::is_same_v<T, double>) {
      if (!it->is_number()) throw std::invalid_argument("");
    } else if constexpr (std::is_same_v<T, bool>) {
      if (!it->is_boolean()) throw std::invalid_argument("");
    } else if constexpr (std::is_same_v<T, std::string>) {
      if (!it->is_string()) throw std::invalid_argument("");
    }
    return it->get<T>();
  } catch (const std::exception&) {
    throw driver::ServeError{400, "invalid_request",
                             std::string(key) + ": expected " +
                                 (std::is_same_v<T, std::int64_t> ? "an integer"
                                  : std::is_same_v<T, double>     ? "a number"
                                  : std::is_same_v<T, bool>       ? "true or false"
                                                                  : "a string") +
                                 ", got " + clip(it->dump())};
  }
}

// The tokens of a streamed generation, from the compute thread to the connection's thread.
class Events {
 public:
  // From the compute thread: false once the client has gone (the generation stops).
  bool push(std::int64_t token, std::int64_t position) {
    std::lock_guard lock(mutex_);
    if (gone_) return false;
    tokens_.emplace_back(token, position);
    cv_.notify_one();
    return true;
  }
  // The tokens queued so far, waiting up to `ms` for the first.
  std::vector<std::pair<std::int64_t, std::int64_t>> take(int ms) {
    std::unique_lock lock(mutex_);
    cv_.wait_for(lock, std::chrono::milliseconds(ms), [&] { return !tokens_.empty(); });
    std::vector<std::pair<std::int64_t, std::int64_t>> out(tokens_.begin(), tokens_.end());
    tokens_.clear();
    return out;
  }
  void leave() {
    std::lock_guard lock(mutex_);
    gone_ = true;
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::pair<std::int64_t, std::int64_t>> tokens_;
  bool gone_ = false;
};

class Server {
 public:
  Server(const Options& o, const Model& m, driver::StreamServer& streams) : o_(o), m_(m), streams_(streams) {}

  // "text" or "tokens" of a request, as token ids (at most --max-request-tokens).
  std::vector<std::int64_t> tokensOf(const json& j, const char* textKey, const char* tokensKey, bool required) {
    std::vector<std::int64_t> ids;
    if (j.contains(textKey) && j.contains(tokensKey))
      throw driver::ServeError{400, "invalid_request",
                               std::string("give either ") + textKey + " or " + tokensKey + ", not both"};
    if (j.contains(textKey)) {
      const std::string text = field<std::string>(j, textKey, "");
      if (!m_.vocabulary)
        throw driver::ServeError{400, "invalid_request", "the model has no vocabulary: send token ids"};
      try {
        ids = driver::scoreInputFromText(m_, text, textKey).ids;
      } catch (const Error& e) {
        throw driver::ServeError{400, "invalid_request", oneLine(e.what())};
      }
    } else if (j.contains(tokensKey)) {
      const json& t = j[tokensKey];
      if (!t.is_array())
        throw driver::ServeError{400, "invalid_request", std::string(tokensKey) + ": expected an array"};
      for (const json& v : t) {
        if (!v.is_number_integer())
          throw driver::ServeError{400, "invalid_request",
                                   std::string(tokensKey) + ": expected integer token ids, got " + clip(v.dump())};
        ids.push_back(v.get<std::int64_t>());
      }
    } else if (required) {
      throw driver::ServeError{400, "invalid_request", std::string("expected ") + textKey + " or " + tokensKey};
    }
    if (std::int64_t(ids.size()) > o_.maxRequestTokens)
      throw driver::ServeError{413, "too_many_tokens",
                               std::to_string(ids.size()) + " tokens, more than --max-request-tokens " +
                                   std::to_string(o_.maxRequestTokens)};
    return ids;
  }

  // Runs `body`, turning its errors into JSON errors.
  template <class F>
  void guarded(httplib::Response& res, F&& body) {
    try {
      body();
    } catch (const driver::ServeError& e) {
      replyError(res, e);
    } catch (const Error& e) {
      reply(res, 400, errorBody(400, "invalid_request", oneLine(e.what())));
    } catch (const std::bad_alloc&) {
      reply(res, 503, errorBody(503, "out_of_memory", "out of memory"));
    } catch (const std::exception& e) {
      reply(res, 500, errorBody(500, "server_error", oneLine(e.what())));
    }
  }

  void install(httplib::Server& http, Metrics& metrics, std::atomic<bool>& ready) {
    http.Get("/health", [&](const httplib::Request&, httplib::Response& res) {
      if (!ready) return reply(res, 503, errorBody(503, "loading", "the model is loading"));
      reply(res, 200, {{"status", "ok"}});
    });
    http.Get("/metrics", [&](const httplib::Request&, httplib::Response& res) {
      res.set_content(metrics.text(streams_), "text/plain; version=0.0.4");
    });
    http.Get("/v1/models", [&](const httplib::Request&, httplib::Response& res) {
      const Setting& s = streams_.setting();
      reply(res, 200,
            {{"data",
              {{{"id", m_.modelId},
                {"path", m_.path},
                {"n_token", m_.spec.n_token},
                {"n_layer", m_.spec.n_layer},
                {"d_model", m_.spec.d_model},
                {"qlen", s.qlen},
                {"mem_len", s.memLen},
                {"max_batch", streams_.maxBatch()},
                {"precision", driver::precisionName(s.precision)},
                {"parameters", m_.spec.parameterCount()},
                {"vocabulary",
                 m_.vocabulary ? (m_.vocabulary->kind() == frontend::VocabKind::Char ? "char" : "word") : "none"},
                {"state_bytes_per_stream", streams_.perStreamStateBytes()}}}}});
    });
    http.Post("/v1/tokenize", [&](const httplib::Request& req, httplib::Response& res) {
      guarded(res, [&] {
        const json j = parseBody(req);
        reply(res, 200, {{"tokens", tokensOf(j, "text", "tokens_unused", true)}});
      });
    });
    http.Post("/v1/streams", [&](const httplib::Request& req, httplib::Response& res) {
      guarded(res, [&] {
        const json j = parseBody(req);
        const std::string id = field<std::string>(j, "id", "");
        json r;
        streams_.submit(id, [&](driver::StreamServer& s) { r = s.create(id); });
        reply(res, 201, r);
      });
    });
    http.Get(R"(/v1/streams/([^/]+))", [&](const httplib::Request& req, httplib::Response& res) {
      guarded(res, [&] {
        json r;
        const std::string id = req.matches[1];
        streams_.submit(id, [&](driver::StreamServer& s) { r = s.describe(id); });
        reply(res, 200, r);
      });
    });
    http.Delete(R"(/v1/streams/([^/]+))", [&](const httplib::Request& req, httplib::Response& res) {
      guarded(res, [&] {
        const std::string id = req.matches[1];
        streams_.submit(id, [&](driver::StreamServer& s) { s.remove(id); });
        reply(res, 200, {{"id", req.matches[1]}, {"deleted", true}});
      });
    });
    http.Post(R"(/v1/streams/([^/]+)/save)", [&](const httplib::Request& req, httplib::Response& res) {
      guarded(res, [&] {
        json r;
        const std::string id = req.matches[1];
        streams_.submit(id, [&](driver::StreamServer& s) { r = s.save(id); });
        reply(res, 200, r);
      });
    });
    http.Post(R"(/v1/streams/([^/]+)/score)", [&](const httplib::Request& req, httplib::Response& res) {
      guarded(res, [&] {
        const json j = parseBody(req);
        const std::vector<std::int64_t> ids = tokensOf(j, "text", "tokens", true);
        const std::int64_t expect = field<std::int64_t>(j, "expect_position", -1);
        const bool perToken = field<bool>(j, "per_token", false);
        reply(res, 200, streams_.score(req.matches[1], ids, expect, perToken).get());
      });
    });
    http.Post(R"(/v1/streams/([^/]+)/generate)",
              [&](const httplib::Request& req, httplib::Response& res) { guarded(res, [&] { generate(req, res); }); });
  }

  void generate(const httplib::Request& req, httplib::Response& res) {
    const json j = parseBody(req);
    auto g = std::make_shared<driver::GenerateOptions>();
    g->prompt = tokensOf(j, "prompt", "prompt_tokens", false);
    g->maxTokens = field<std::int64_t>(j, "max_tokens", 16);
    if (g->maxTokens < 1 || g->maxTokens > o_.maxNewTokens)
      throw driver::ServeError{400, "invalid_request",
                               "max_tokens: expected 1 to " + std::to_string(o_.maxNewTokens) +
                                   " (--max-new-tokens), got " + std::to_string(g->maxTokens)};
    g->sampler.temperature = field<double>(j, "temperature", 1.0);
    g->sampler.greedy = field<bool>(j, "greedy", false) || g->sampler.temperature == 0;
    if (g->sampler.greedy) g->sampler.temperature = 1.0;
    g->sampler.topK = field<std::int64_t>(j, "top_k", 0);
    g->sampler.topP = field<double>(j, "top_p", 1.0);
    const std::int64_t seed = field<std::int64_t>(j, "seed", 0);
    if (seed < 0) throw driver::ServeError{400, "invalid_request", "seed: expected a non-negative integer"};
    g->sampler.seed = std::uint64_t(seed);
    g->expectPosition = field<std::int64_t>(j, "expect_position", -1);
    const std::string id = req.matches[1];
    const bool stream = field<bool>(j, "stream", false);
    const frontend::Vocabulary* vocab = m_.vocabulary ? &*m_.vocabulary : nullptr;
    if (!stream) {
      json r = streams_.generate(id, *g, nullptr).get();
      if (vocab) r["text"] = vocab->decode(r["token_ids"].get<std::vector<std::int64_t>>());
      return reply(res, 200, r);
    }
    // Server-sent events. The compute thread queues each token (it never
    // waits on a client); this connection's thread writes them. Errors known
    // before the request starts keep their status.
    auto events = std::make_shared<Events>();
    std::promise<void> started;
    std::future<void> accepted = started.get_future();
    auto result = std::make_shared<std::future<json>>(streams_.generate(
        id, *g, [events](std::int64_t token, std::int64_t position) { return events->push(token, position); },
        &started));
    accepted.get();
    res.set_header("Cache-Control", "no-cache");
    res.set_chunked_content_provider(
        "text/event-stream", [events, result, g, vocab](std::size_t, httplib::DataSink& sink) {
          auto send = [&](const json& event) {
            const std::string line = "data: " + dumpJson(event) + "\n\n";
            return sink.is_writable() && sink.write(line.data(), line.size());
          };
          std::int64_t previous = g->prompt.empty() ? -1 : g->prompt.back();
          bool open = true;
          std::int64_t sent = 0;
          for (;;) {  // until the generation ends: its last token, or its result (a stop, an error)
            const bool finished = result->wait_for(std::chrono::milliseconds(0)) == std::future_status::ready;
            for (const auto& [token, position] : events->take(finished ? 0 : 50)) {
              ++sent;
              json e = {{"token", token}, {"position", position}};
              if (vocab) e["text"] = vocab->decodeToken(token, previous);
              previous = token;
              if (open && !send(e)) {
                open = false;
                events->leave();  // the generation stops at its next token; what was chosen stays
              }
            }
            if (finished || sent == g->maxTokens) break;
          }
          try {
            json r = result->get();
            r.erase("token_ids");
            if (open)
              send({{"done", true}, {"position", r["position"]}, {"usage", r["usage"]}, {"timings", r["timings"]}});
          } catch (const driver::ServeError& e) {
            if (open) send(errorBody(e.status, e.type, e.message, e.extra));
          } catch (const std::exception& e) {
            if (open) send(errorBody(500, "server_error", oneLine(e.what())));
          }
          const std::string done = "data: [DONE]\n\n";
          if (open && sink.is_writable()) sink.write(done.data(), done.size());
          sink.done();
          return true;
        });
  }

 private:
  const Options& o_;
  const Model& m_;
  driver::StreamServer& streams_;
};

thread_local Clock::time_point requestStart;

int run(const Options& o) {
  OpenOptions open = o.model.openOptions();
  open.randomWeights = o.randomWeights;
  open.seed = o.seed;
  Model m = openModel(o.model.model, open);
  if (o.randomWeights) mapRandomWeights(m);
  Setting setting = o.model.setting(m);
  setting.batch = 1;
  std::string apiKey = o.apiKey;
  if (!o.apiKeyFile.empty()) {
    std::ifstream f(o.apiKeyFile);
    if (!f) throw Error("--api-key-file " + o.apiKeyFile + ": cannot read it");
    std::getline(f, apiKey);
    while (!apiKey.empty() && (apiKey.back() == '\r' || apiKey.back() == ' ')) apiKey.pop_back();
    if (apiKey.empty()) throw Error("--api-key-file " + o.apiKeyFile + ": empty; expected the key on its first line");
  }
  std::mutex logMutex;
  auto log = [&](const std::string& line) {
    std::lock_guard lock(logMutex);
    std::cerr << "txlc serve: " << line << std::endl;
  };
  driver::StreamServerOptions so;
  so.maxStreams = o.maxStreams;
  so.maxResident = o.maxResident;
  so.idleSeconds = o.idleSeconds;
  so.maxQueue = o.maxQueue;
  so.stateDir = o.stateDir;
  so.durable = o.durable;
  so.maxBatch = o.maxBatch;
  so.batchWaitSeconds = o.batchWaitMicroseconds * 1e-6;
  so.log = log;
  driver::StreamServer streams(m, setting, so);
  noteReplanning(m, setting);
  log("model " + m.modelId + " (" + m.path + "), qlen " + std::to_string(setting.qlen) + ", mem_len " +
      std::to_string(setting.memLen) + "; " + std::to_string(streams.perStreamStateBytes()) +
      " bytes of memory per stream, --max-resident " + std::to_string(o.maxResident) + ": up to " +
      std::to_string(streams.perStreamStateBytes() * o.maxResident) + " bytes resident, up to " +
      std::to_string(streams.maxBatch()) + " streams per step" +
      (o.stateDir.empty() ? ", evicted streams dropped (no --state-dir)"
                          : ", evicted streams spilled to " + o.stateDir));

  httplib::Server http;
  Metrics metrics;
  std::atomic<bool> ready{false};
  http.new_task_queue = [n = o.httpThreads] { return new httplib::ThreadPool(std::size_t(n)); };
  http.set_tcp_nodelay(true);
  http.set_keep_alive_max_count(100000);
  const auto timeout =
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::duration<double>(o.timeoutSeconds));
  http.set_read_timeout(timeout.count() / 1000000, timeout.count() % 1000000);
  http.set_write_timeout(timeout.count() / 1000000, timeout.count() % 1000000);
  // An idle keep-alive connection holds a thread, and a stop waits for it: 5 s at most.
  http.set_keep_alive_timeout(std::clamp<time_t>(time_t(o.timeoutSeconds), 1, 5));
  http.set_payload_max_length(std::size_t(o.maxBodyBytes));
  http.set_pre_routing_handler([&](const httplib::Request& req, httplib::Response& res) {
    requestStart = Clock::now();
    if (!apiKey.empty() && req.path != "/health" && req.get_header_value("Authorization") != "Bearer " + apiKey) {
      reply(res, 401, errorBody(401, "unauthorized", "expected the header Authorization: Bearer <--api-key>"));
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });
  http.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    std::string message = res.status == 404   ? "no route " + req.method + " " + clip(req.path)
                          : res.status == 413 ? "the body is larger than --max-body-bytes"
                          : res.status == 400 ? "malformed HTTP request (a POST needs a body or Content-Length: 0)"
                                              : "HTTP " + std::to_string(res.status);
    reply(res, res.status, errorBody(res.status, statusType(res.status), message));
  });
  http.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
    std::string what = "unknown error";
    try {
      std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    reply(res, 500, errorBody(500, "server_error", oneLine(what)));
  });
  http.set_logger([&](const httplib::Request& req, const httplib::Response& res) {
    const double seconds = std::chrono::duration<double>(Clock::now() - requestStart).count();
    metrics.request(routeOf(req.path), res.status, seconds);
    if (!o.quiet) {
      char ms[32];
      std::snprintf(ms, sizeof ms, "%.1f", seconds * 1000);
      log(req.remote_addr + " " + req.method + " " + clip(req.path) + " " + std::to_string(res.status) + " " + ms +
          " ms");
    }
  });
  Server server(o, m, streams);
  server.install(http, metrics, ready);

  const int port = o.port == 0 ? http.bind_to_any_port(o.host) : (http.bind_to_port(o.host, o.port) ? o.port : -1);
  if (port < 0) throw Error("--host " + o.host + " --port " + std::to_string(o.port) + ": cannot listen there");
  frontend::catchInterrupts();
  std::atomic<bool> finished{false};
  std::thread watcher([&] {
    while (!finished && frontend::interruptSignal() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    http.stop();
  });
  ready = true;
  // The address on stdout (one line, flushed) so that a script started with --port 0 learns it.
  std::cout << "listening on http://" << o.host << ":" << port << std::endl;
  log("listening on http://" + o.host + ":" + std::to_string(port) + (apiKey.empty() ? "" : " (API key required)"));
  http.listen_after_bind();
  finished = true;
  watcher.join();
  streams.submit("*", [](driver::StreamServer& s) { s.spillAll(); });
  log("stopped" +
      std::string(frontend::interruptSignal() ? " on signal " + std::to_string(frontend::interruptSignal()) : ""));
  return kExitOk;
}

}  // namespace

void registerServe(CLI::App& app, Action& action) {
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("serve", "an HTTP server of streams, each keeping its memory between requests");
  o->model.add(*cmd, ModelFlags::Shape::NoBatch);
  cmd->add_option("--host", o->host, "address to listen on (default 127.0.0.1)");
  cmd->add_option("--port", o->port, "port (default 8080; 0: any free port, printed on stdout)")
      ->check(integerIn(0, 65535, "a port in [0, 65535]"));
  CLI::Option* stateDirOpt = cmd->add_option(
      "--state-dir", o->stateDir,
      "directory of spilled streams (kept across restarts; one server at a time); default: none, evicted "
      "streams are dropped");
  cmd->add_option("--max-streams", o->maxStreams, "streams held, resident or spilled (default 1024; 503 beyond)")
      ->check(integerIn(1, std::numeric_limits<std::int64_t>::max(), "a positive integer"));
  cmd->add_option("--max-resident", o->maxResident, "streams whose memory stays in RAM (default 64)")
      ->check(integerIn(1, std::numeric_limits<std::int64_t>::max(), "a positive integer"));
  cmd->add_option("--stream-idle-s", o->idleSeconds, "evict a stream idle this long (default 300; 0: never)")
      ->check(realIn(0, 1e9, false, "a number >= 0"));
  cmd->add_option("--max-queue", o->maxQueue, "requests waiting for the compute thread (default 256; 429 beyond)")
      ->check(integerIn(1, std::numeric_limits<std::int64_t>::max(), "a positive integer"));
  cmd->add_option("--max-body-bytes", o->maxBodyBytes, "largest request body (default 8 MiB; 413 beyond)")
      ->check(integerIn(1, std::numeric_limits<std::int64_t>::max(), "a positive integer"));
  cmd->add_option("--max-request-tokens", o->maxRequestTokens, "tokens per request (default 1048576; 413 beyond)")
      ->check(integerIn(1, std::numeric_limits<std::int64_t>::max(), "a positive integer"));
  cmd->add_option("--max-new-tokens", o->maxNewTokens, "largest max_tokens of a generation (default 4096)")
      ->check(integerIn(1, std::numeric_limits<std::int64_t>::max(), "a positive integer"));
  cmd->add_option("--timeout-s", o->timeoutSeconds, "socket read and write timeout (default 30)")
      ->check(realIn(0, 1e6, true, "a number above 0"));
  cmd->add_option("--http-threads", o->httpThreads, "connections served at once (default 32)")
      ->check(integerIn(1, 4096, "an integer in [1, 4096]"));
  auto* key = cmd->add_option("--api-key", o->apiKey, "require Authorization: Bearer KEY (not on /health)");
  cmd->add_option("--api-key-file", o->apiKeyFile, "the API key from the first line of a file")->excludes(key);
  cmd->add_flag("--durable", o->durable,
                "save a stream's state to --state-dir after every request, before its reply (kill -9 then loses at "
                "most the requests in flight)")
      ->needs(stateDirOpt);
  cmd->add_option("--max-batch", o->maxBatch, "streams stepped together in one batched segment (default 8; 1: alone)")
      ->check(integerIn(1, 256, "an integer in [1, 256]"));
  cmd->add_option("--batch-wait-us", o->batchWaitMicroseconds,
                  "a step of fewer than --max-batch streams waits this long for more (default 0)")
      ->check(realIn(0, 1e7, false, "a number >= 0"));
  CLI::Option* random = cmd->add_flag("--random-weights", o->randomWeights, "seeded random weights (benchmarks)");
  if (o->model.weightsOpt) random->excludes(o->model.weightsOpt);
  cmd->add_option("--seed", o->seed, "seed of the random weights (default 0)");
  cmd->add_flag("--quiet", o->quiet, "no log line per request");
  cmd->callback([o, &action] { action = [o] { return run(*o); }; });
}

}  // namespace txl::tools
