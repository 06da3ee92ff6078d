// driver/stream_server.h - the streams of `txlc serve`: each client's recurrent memory, kept between requests.
//
// A stream is its memory, its position (tokens it holds) and its pending
// token: the last token given or generated, not yet run through the model. A
// request's inputs are [pending, tokens...] cut into segments of qlen, so
// scoring A then B on one stream runs the segments offline scoring
// (driver/scorer.h) runs on A+B when A holds k * qlen + 1 tokens and B a
// multiple of qlen.
//
// Steps. One compute thread runs every request. Instant operations (create,
// describe, save, delete) run whole; a score or a generation is stepped one
// segment at a time, so that the requests of several streams advance together.
// Requests on one stream run in the order they arrive: a request waits while
// an earlier one on its stream is in flight. Each step takes the request that
// has waited longest for a segment, and beside it up to maxBatch - 1 others
// whose next segment has the same length and kind (scoring or generating),
// longest-waiting first, at most one segment per stream:
// - alone, it runs on the stream's own batch-1 session: what offline scoring
//   and generation compute, bit for bit;
// - together, the streams are lanes of one batched session (a pool of 2, 4, …
//   maxBatch lanes, Session::loadStream / saveStream); a lane's memory is
//   masked to the positions its stream remembers, and its results equal the
//   batch-1 ones within the batched plans' rounding (docs/SERVE.md). A stream
//   stays in its lane while it keeps being batched with the same neighbours;
//   it moves (a copy of its memory) only when the group changes.
// A model that cannot mask one stream's memory (attn_type other than 0,
// without a full initial memory) runs every step alone.
//
// Residency: at most maxResident streams hold their memory in RAM (in their
// own session or a lane). The least recently used stream without a request
// in flight is evicted when another must become resident, and a stream idle
// for idleSeconds is evicted by the compute thread's sweep. With a state
// directory an evicted stream is spilled to `<dir>/<id>.state` (a state file,
// driver/state_file.h, with the stream's position, pending token and a
// checksum of its tensors; written atomically) and restored on its next
// request; without one it is dropped and remembered as a tombstone (410 Gone
// with the reason and its last position). A state file that does not read
// back (torn, corrupt, another model) is left as it is, named in the log, and
// its stream reported gone; a request that fails midway (a non-finite value)
// leaves its stream gone too ("request_failed": its memory holds part of the
// request). Several servers may share a state directory: each stream is
// owned by one of them at a time (driver/stream_lock.h); a server lists the
// unowned state files at start and takes over an unowned stream on its first
// request (one spilled by a server that stopped), while a stream another
// server owns answers 409 stream_owned_elsewhere.
//
//   StreamServer server(model, setting, {.maxResident = 8, .stateDir = "state"});
//   server.submit("a", [](StreamServer& s) { s.create("a"); });
//   nlohmann::json reply = server.score("a", ids, -1, false).get();
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <future>
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
#include "driver/stream_lock.h"

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
  std::int64_t maxBatch = 8;                    // streams stepped together (1: every step alone)
  double batchWaitSeconds = 0;                  // a step of fewer than maxBatch streams waits this long for more
  std::string stateDir;                         // empty: evicted streams are dropped
  bool durable = false;                         // with a stateDir: every request's stream saved before its reply
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

  // Runs `job` on the compute thread once the requests on stream `id` that
  // came before it are done ("*": once no request is in flight; "": no
  // stream), and waits for it. ServeError 429 when the queue is full; a
  // ServeError or txl::Error the job throws is rethrown here.
  void submit(const std::string& id, const std::function<void(StreamServer&)>& job);

  // Scores `tokens` on stream `id`; expectPosition -1: any. The reply (or the
  // ServeError that refused or ended the request) comes through the future.
  std::future<nlohmann::json> score(const std::string& id, std::vector<std::int64_t> tokens,
                                    std::int64_t expectPosition, bool perToken);
  // Generates on stream `id`. onToken(token, position) is called on the
  // compute thread for every token chosen and must not block (queue the
  // token); false from it stops the generation (the tokens chosen stay in the
  // stream). `started` (optional) is set once the request has been accepted
  // (or holds the ServeError that refused it): a caller can answer with a
  // status before it streams.
  std::future<nlohmann::json> generate(const std::string& id, GenerateOptions options,
                                       std::function<bool(std::int64_t, std::int64_t)> onToken,
                                       std::promise<void>* started = nullptr);

  // --- instant operations (compute thread only: call them inside submit()) ---
  nlohmann::json create(const std::string& id);  // "" mints an id
  nlohmann::json describe(const std::string& id);
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
  std::int64_t maxBatch() const { return maxBatch_; }  // options' maxBatch, or 1 for a model that cannot batch
  struct Counters {
    std::atomic<std::int64_t> resident{0}, spilled{0}, stateBytes{0}, queueDepth{0};
    std::atomic<std::int64_t> tokensScored{0}, tokensGenerated{0};
    std::atomic<std::int64_t> evictedIdle{0}, evictedCapacity{0}, restored{0}, corrupt{0}, failed{0};
    std::atomic<std::int64_t> steps{0}, stepStreams{0}, lastBatch{0}, laneMoves{0};
  };
  const Counters& counters() const { return counters_; }

 private:
  struct Pool;
  struct Work;
  struct Stream {
    std::string id;
    std::int64_t position = 0;
    std::int64_t pending = -1;
    // Its memory: its own batch-1 session, or lane `lane` of `pool`; neither: spilled.
    std::unique_ptr<backend::Session> session;
    Pool* pool = nullptr;
    std::int64_t lane = -1;
    Work* work = nullptr;            // the request in flight
    std::optional<StreamLock> lock;  // with a state directory: this server owns the stream
    Clock::time_point lastUsed;
    std::chrono::system_clock::time_point lastUsedWall;
    bool resident() const { return session || pool; }
  };
  struct Tombstone {
    std::string reason;
    std::int64_t position = 0;
  };
  // A request waiting for its stream: an instant job, or a score or generation.
  struct Request {
    std::string id;
    std::function<void()> job;
    std::unique_ptr<Work> work;
  };

  std::future<nlohmann::json> enqueue(std::unique_ptr<Work> work);
  void push(Request request);
  void loop();
  void admit(Request request);
  void begin(std::unique_ptr<Work> work);
  void startWaiting(const std::string& id);
  void step();
  void runAlone(Work& w);
  void runTogether(const std::vector<Work*>& group);
  // Takes the results of lane `lane` of a segment of `batch` streams; true when the request is done.
  bool advance(Work& w, const backend::ForwardResult& out, std::int64_t lane, std::int64_t batch);
  void finish(Work& w);
  void fail(Work& w, std::exception_ptr error);
  Pool& poolFor(const std::vector<Work*>& group);
  void toOwnSession(Stream& s);
  void toLane(Stream& s, Pool& pool, std::int64_t lane);
  void vacate(Stream& s);
  void sweepIdle();
  // The stream `id`, resident (restored or made room for); `restored` set when it was read back.
  Stream& resident(const std::string& id, bool* restored, double* restoreSeconds);
  Stream& find(const std::string& id);
  void makeRoom(const std::string& keep);
  void evict(Stream& s, const std::string& reason);
  void drop(const std::string& id, const std::string& reason);
  void forget(const std::string& id);
  ir::TensorMap stateOf(const Stream& s) const;
  std::int64_t memoryOf(const Stream& s) const;  // positions the resident stream remembers
  void spill(Stream& s);
  void restore(Stream& s);
  void tombstone(const std::string& id, const std::string& reason, std::int64_t position);
  void touch(Stream& s);
  std::string statePath(const std::string& id) const;
  void scanStateDir();
  // Lists the state file of stream `id` (whose lock is `lock`) as a spilled stream; txl::Error if it does not read.
  Stream& listStateFile(const std::string& id, StreamLock lock);
  // An unowned stream of the state directory, taken over; null when the directory has none of that id.
  Stream* adopt(const std::string& id);
  StreamLock claim(const std::string& id);  // ServeError 409 when another server owns `id`
  void updateGauges();
  nlohmann::json info(const Stream& s) const;

  const Model& model_;
  Setting setting_;
  StreamServerOptions options_;
  std::shared_ptr<const backend::CompiledModel> compiled_;
  std::int64_t perStreamBytes_ = 0;
  std::map<std::string, Stream> streams_;
  std::map<std::string, Tombstone> tombstones_;
  std::deque<std::string> tombstoneOrder_;
  std::uint64_t minted_ = 0;
  Counters counters_;

  std::int64_t maxBatch_ = 1;
  std::map<std::int64_t, std::shared_ptr<const backend::CompiledModel>> batched_;  // per pool size
  std::vector<std::unique_ptr<Pool>> pools_;
  std::vector<std::unique_ptr<Work>> active_;           // requests in flight, one per stream at most
  std::map<std::string, std::deque<Request>> waiting_;  // per stream, behind its request in flight
  std::deque<Request> barriers_;                        // "*" jobs, run once nothing is in flight

  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<Request> incoming_;
  std::atomic<std::int64_t> queued_{0};  // requests accepted, not yet started
  bool stop_ = false;
  std::thread thread_;
};

// A stream id: 1 to 128 of [A-Za-z0-9_.-], not starting with '.'.
bool validStreamId(const std::string& id);

}  // namespace txl::driver
