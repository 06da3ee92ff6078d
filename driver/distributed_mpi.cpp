// driver/distributed_mpi.cpp - Processes on MPI (Open MPI): the one file that includes mpi.h.
//
// Messages are byte strings sent with MPI_Isend (the buffer kept until the
// send completes) so that a rank never waits on rank 0 while it computes;
// rank 0 polls with MPI_Iprobe, so that it can give up on a silent rank
// (a timeout is the caller's: receive() returns after `wait` in any case).
// MPI is initialised with MPI_THREAD_FUNNELED: only the main thread calls
// MPI, OpenMP's threads compute. Errors make MPI calls return (and then
// abort the job) instead of the default handler's abort without a word.
// The C API only: Open MPI's (and MPICH's) deprecated C++ bindings would need libmpi_cxx.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <algorithm>
#include <deque>
#include <thread>
#include <vector>

#include "driver/distributed.h"
#include "ir/check.h"

namespace txl::driver {

namespace {

void check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  throw Error(std::string(what) + ": " + std::string(text, std::size_t(len)));
}

class MpiProcesses final : public Processes {
 public:
  MpiProcesses() {
    int provided = 0;
    check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
  }
  ~MpiProcesses() override {
    if (!finished_) {
      int done = 0;
      MPI_Finalized(&done);
      if (!done) MPI_Finalize();
    }
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }

  void sendToRoot(int tag, std::string bytes) override {
    TXL_CHECK(rank_ != 0, "rank 0 sends to nobody");
    reap();
    pending_.push_back({std::move(bytes), MPI_REQUEST_NULL});
    Pending& p = pending_.back();
    check(MPI_Isend(p.bytes.data(), int(p.bytes.size()), MPI_BYTE, 0, tag, MPI_COMM_WORLD, &p.request), "MPI_Isend");
  }

  std::optional<Message> receive(std::chrono::milliseconds wait) override {
    const auto until = std::chrono::steady_clock::now() + wait;
    for (;;) {
      int flag = 0;
      MPI_Status status;
      check(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &status), "MPI_Iprobe");
      if (flag) {
        int count = 0;
        MPI_Get_count(&status, MPI_BYTE, &count);
        Message m{status.MPI_SOURCE, status.MPI_TAG, std::string(std::size_t(count), '\0')};
        check(MPI_Recv(m.bytes.data(), count, MPI_BYTE, status.MPI_SOURCE, status.MPI_TAG, MPI_COMM_WORLD,
                       MPI_STATUS_IGNORE),
              "MPI_Recv");
        return m;
      }
      if (std::chrono::steady_clock::now() >= until) return std::nullopt;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }

  std::vector<SetupReport> gatherSetup(const SetupReport& mine) override {
    // One fixed-size record per rank: the code, then the fingerprint.
    constexpr int kWords = 1 + int(std::tuple_size_v<decltype(mine.fingerprint)>);
    std::uint64_t words[kWords];
    words[0] = std::uint64_t(std::int64_t(mine.code));
    std::copy(mine.fingerprint.begin(), mine.fingerprint.end(), words + 1);
    std::vector<std::uint64_t> all(std::size_t(size_) * kWords, 0);
    check(MPI_Allgather(words, kWords, MPI_UINT64_T, all.data(), kWords, MPI_UINT64_T, MPI_COMM_WORLD),
          "MPI_Allgather");
    std::vector<SetupReport> reports(static_cast<std::size_t>(size_));
    for (int r = 0; r < size_; ++r) {
      const std::uint64_t* w = all.data() + std::size_t(r) * kWords;
      reports[std::size_t(r)].code = int(std::int64_t(w[0]));
      std::copy(w + 1, w + kWords, reports[std::size_t(r)].fingerprint.begin());
    }
    return reports;
  }

  void finish() override {
    while (!pending_.empty()) {
      reap();
      if (!pending_.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    finished_ = true;
    MPI_Finalize();
  }

  [[noreturn]] void abort(int code) override {
    MPI_Abort(MPI_COMM_WORLD, code);
    std::_Exit(code);
  }

 private:
  struct Pending {
    std::string bytes;
    MPI_Request request;
  };
  // Drops the sends that have completed (in order: a deque keeps the buffers in place).
  void reap() {
    while (!pending_.empty()) {
      int done = 0;
      check(MPI_Test(&pending_.front().request, &done, MPI_STATUS_IGNORE), "MPI_Test");
      if (!done) break;
      pending_.pop_front();
    }
  }

  int rank_ = 0, size_ = 1;
  bool finished_ = false;
  std::deque<Pending> pending_;
};

}  // namespace

std::unique_ptr<Processes> makeMpiProcesses() { return std::make_unique<MpiProcesses>(); }

}  // namespace txl::driver
