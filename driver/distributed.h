// driver/distributed.h - the processes of one run: which one this is, and
// the messages the others send to rank 0.
//
// A run split between processes (`mpirun -np N txlc score ...`) is N ranks
// of which rank 0 collects: every other rank sends its results and its
// progress to rank 0, which writes the output. That is all the messaging a
// split run needs, so this interface is all the rest of txlc sees of MPI:
// only driver/distributed_mpi.cpp includes mpi.h, and a build without MPI
// (CMake option TXLC_MPI off, or no Open MPI found) has the single-process
// implementation alone.
//
//   std::unique_ptr<Processes> p = joinProcesses();   // MPI under mpirun, else one process
//   if (p->rank() != 0) p->sendToRoot(kTagResults, bytes);
//   else while (auto m = p->receive(std::chrono::milliseconds(100))) ...;
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace txl::driver {

struct Message {
  int source = 0;
  int tag = 0;
  std::string bytes;
};

class Processes {
 public:
  virtual ~Processes() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Queues `bytes` for rank 0 without waiting for it (from a rank other
  // than 0); messages from one rank arrive in the order sent.
  virtual void sendToRoot(int tag, std::string bytes) = 0;
  // On rank 0: the next message from another rank, waiting at most `wait`
  // (0: only what has arrived); nullopt when none came.
  virtual std::optional<Message> receive(std::chrono::milliseconds wait) = 0;
  // What one rank reports at the end of its setup: its exit code (0: set
  // up) and the fingerprints every rank must share (driver/split_run.h).
  struct SetupReport {
    int code = 0;
    std::array<std::uint64_t, 4> fingerprint{};
  };
  // Every rank's report, in rank order (a collective: every rank calls it
  // once, at the end of its setup, successful or not).
  virtual std::vector<SetupReport> gatherSetup(const SetupReport& mine) = 0;
  // The lowest rank whose `code` is non-zero and its code, or rank -1 when
  // every rank's is 0: gatherSetup() with no fingerprint. A run's setup
  // (reading the model and the input, which every rank does) ends with it,
  // so that one rank reports a problem and every rank stops.
  struct Failure {
    int rank = -1;
    int code = 0;
  };
  Failure firstFailure(int code);
  // Waits until every message this rank queued has left, then ends this
  // rank's part of the run normally.
  virtual void finish() = 0;
  // Ends every rank of the run at once, with exit status `code`.
  [[noreturn]] virtual void abort(int code) = 0;
};

// The processes of this run: MPI's when launched by an MPI launcher (and
// txlc was built with MPI), else just this process. txl::Error when an MPI
// launcher started a txlc built without MPI.
std::unique_ptr<Processes> joinProcesses();
// Just this process (rank 0 of 1), whatever launched it: a library caller's
// job that is not split (the Python module).
std::unique_ptr<Processes> singleProcess();
// The number of processes an MPI launcher (mpirun, srun, hydra) announces
// in the environment (OMPI_COMM_WORLD_SIZE, PMIX_SIZE... ), 0 when none did.
int launcherSize();
bool builtWithMpi();

}  // namespace txl::driver
