// driver/stream_server.h - the streams of `txlc serve`: each client's recurrent memory, kept between requests.
//
// A stream is a batch-1 backend::Session over one compiled model (the weights
// shared), its position (tokens it holds) and its pending token: the last
// token given or generated, not yet run through the model. A request's inputs
// are [pending, tokens...] cut into segments of qlen, so scoring A then B on
// one stream runs the segments offline scoring (driver/scorer.h) runs on A+B
// when A holds k * qlen + 1 tokens and B a multiple of qlen (bit for bit).
//
// One compute thread runs every request, whole and in arrival order (FIFO):
// requests on one stream therefore run in order, and the registry is touched
// by that thread alone. Callers wait on submit(); a full queue is refused (429).
//
// Residency: at most maxResident sessions live in memory. The least recently
// used is evicted when another must become resident, and a stream idle for
// idleSeconds is evicted by the compute thread's sweep. With a state
// directory an evicted stream is spilled to `<dir>/<id>.state` (a state file,
// driver/state_file.h, with the stream's position, pending token and a
// checksum of its tensors; written atomically) and restored on its next
// request; without one it is dropped and remembered as a tombstone (410 Gone
// with the reason and its last position). A state file that does not read
// back (torn, corrupt, another model) is left as it is, named in the log, and
// its stream reported gone. One server owns a state directory at a time
// (flock on `<dir>/txlc-serve.lock`).
//
//   StreamServer server(model, setting, {.maxResident = 8, .stateDir = "state"});
//   server.submit([&](StreamServer& s) { reply = s.score("a", ids, -1, false); });
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "backend/session.h"
#include "driver/model.h"
#include "driver/sampler.h"
#include "driver/setting.h"

namespace txl::driver {

// An error a request ends with: an HTTP status, a machine-readable type and one line.
struct ServeError {
  int status = 400;
  std::string type;
  std::string message;
  nlohmann::json extra = nlohmann::json::object();  // more fields of the error object (a tombstone's reason)
};

struct StreamServerOptions {
  std::int64_t maxStreams = 1024;  // streams known (resident and spilled); 503 beyond
  std::int64_t maxResident = 64;   // sessions in memory
  double idleSeconds = 300;        // idle streams are evicted after this
  std::int64_t maxQueue = 256;     // requests waiting for the compute thread; 429 beyond
  std::int64_t maxTombstones = 10000;
  std::string stateDir;                         // empty: evicted streams are dropped
  std::function<void(const std::string&)> log;  // one line to the log (stderr)
};

struct GenerateOptions {
  std::vector<std::int64_t> prompt;  // fed before sampling (may be empty when the stream has a pending token)
  std::int64_t maxTokens = 16;
  SamplerOptions sampler;
  std::int64_t expectPosition = -1;
};

class StreamServer {
 public:
  using Clock = std::chrono::steady_clock;

  StreamServer(const Model& model, const Setting& setting, StreamServerOptions options);
  ~StreamServer();  // stops the compute thread (spillAll() first to keep the streams)
  StreamServer(const StreamServer&) = delete;
  StreamServer& operator=(const StreamServer&) = delete;

  // Runs `job` on the compute thread and waits for it. ServeError 429 when the queue is full;
  // a ServeError or txl::Error the job throws is rethrown here.
  void submit(const std::function<void(StreamServer&)>& job);

  // --- the operations (compute thread only: call them inside submit()) ---
  nlohmann::json create(const std::string& id);  // "" mints an id
  nlohmann::json describe(const std::string& id);
  // `tokens`: the request's tokens; expectPosition -1: any.
  nlohmann::json score(const std::string& id, const std::vector<std::int64_t>& tokens, std::int64_t expectPosition,
                       bool perToken);
  // Calls onToken(id, position) for every token chosen; false from it stops the generation
  // (the tokens chosen stay in the stream).
  nlohmann::json generate(const std::string& id, const GenerateOptions& options,
                          const std::function<bool(std::int64_t, std::int64_t)>& onToken);
  nlohmann::json save(const std::string& id);
  void remove(const std::string& id);
  // Spills every resident stream (with a state directory); the shutdown path.
  void spillAll();

  // --- any thread ---
  std::int64_t perStreamStateBytes() const { return perStreamBytes_; }
  std::int64_t memLen() const { return setting_.memLen; }
  std::int64_t qlen() const { return setting_.qlen; }
  const Model& model() const { return model_; }
  const Setting& setting() const { return setting_; }
  struct Counters {
    std::atomic<std::int64_t> resident{0}, spilled{0}, stateBytes{0}, queueDepth{0};
    std::atomic<std::int64_t> tokensScored{0}, tokensGenerated{0};
    std::atomic<std::int64_t> evictedIdle{0}, evictedCapacity{0}, restored{0}, corrupt{0};
  };
  const Counters& counters() const { return counters_; }

 private:
  struct Stream {
    std::string id;
    std::int64_t position = 0;
    std::int64_t pending = -1;
    std::unique_ptr<backend::Session> session;  // null: spilled
    Clock::time_point lastUsed;
    std::chrono::system_clock::time_point lastUsedWall;
  };
  struct Tombstone {
    std::string reason;
    std::int64_t position = 0;
  };

  void loop();
  void sweepIdle();
  // The stream `id`, resident (restored or made room for); `restored` set when it was read back.
  Stream& resident(const std::string& id, bool* restored, double* restoreSeconds);
  Stream& find(const std::string& id);
  void makeRoom(const std::string& keep);
  void evict(Stream& s, const std::string& reason);
  void spill(Stream& s);
  void restore(Stream& s);
  void tombstone(const std::string& id, const std::string& reason, std::int64_t position);
  void touch(Stream& s);
  std::string statePath(const std::string& id) const;
  void scanStateDir();
  void updateGauges();
  nlohmann::json info(const Stream& s) const;
  // Runs `inputs` through the session in segments of qlen; with targets, returns their NLLs,
  // else fills `lastRow` with the log-probabilities of the token after the last input.
  void run(Stream& s, const std::vector<std::int64_t>& inputs, const std::vector<std::int64_t>* targets,
           std::vector<float>* nll, std::vector<float>* lastRow);

  const Model& model_;
  Setting setting_;
  StreamServerOptions options_;
  std::shared_ptr<const backend::CompiledModel> compiled_;
  std::int64_t perStreamBytes_ = 0;
  int lockFd_ = -1;
  std::map<std::string, Stream> streams_;
  std::map<std::string, Tombstone> tombstones_;
  std::deque<std::string> tombstoneOrder_;
  std::uint64_t minted_ = 0;
  Counters counters_;

  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  bool stop_ = false;
  std::thread thread_;
};

// A stream id: 1 to 128 of [A-Za-z0-9_.-], not starting with '.'.
bool validStreamId(const std::string& id);

}  // namespace txl::driver
