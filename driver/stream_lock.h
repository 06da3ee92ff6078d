// driver/stream_lock.h - which server owns a stream of a state directory that several servers share.
//
// A stream of `txlc serve --state-dir D` is owned by one server at a time:
// the one holding an exclusive flock(2) on `D/<id>.lock`. A server holds the
// lock of every stream it lists (resident or spilled) for as long as it lists
// it; the kernel releases it when the server exits, however it exits, so a
// stream spilled by a server that stopped (or was killed) can be taken over
// by another one on its next request. The lock file outlives its holder;
// only deleting the stream removes it.
//
//   if (auto lock = StreamLock::claim("state", "a")) { ... the stream is ours until *lock is destroyed ... }
#pragma once

#include <optional>
#include <string>

namespace txl::driver {

class StreamLock {
 public:
  // Takes `<dir>/<id>.lock` (made if missing): nullopt when another process
  // holds it; txl::Error when the file cannot be opened. A lock file removed
  // by its holder while this one waited is not taken: the claim starts over.
  static std::optional<StreamLock> claim(const std::string& dir, const std::string& id);

  StreamLock(StreamLock&& other) noexcept;
  StreamLock& operator=(StreamLock&& other) noexcept;
  StreamLock(const StreamLock&) = delete;
  StreamLock& operator=(const StreamLock&) = delete;
  ~StreamLock();  // releases the lock; the file stays

  // Removes the lock file, then releases the lock (the stream is deleted).
  void remove();

 private:
  StreamLock(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  void release();
  int fd_ = -1;
  std::string path_;
};

}  // namespace txl::driver
