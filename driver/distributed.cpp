// driver/distributed.cpp - joinProcesses(): one process, or MPI's when a launcher started txlc.
#include "driver/distributed.h"

#include <cstdlib>
#include <thread>

#include "ir/check.h"

namespace txl::driver {

#ifdef TXL_HAVE_MPI
std::unique_ptr<Processes> makeMpiProcesses();  // driver/distributed_mpi.cpp
#endif

namespace {

class SingleProcess final : public Processes {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  void sendToRoot(int, std::string) override { TXL_CHECK(false, "a single process has no rank 0 to send to"); }
  std::optional<Message> receive(std::chrono::milliseconds wait) override {
    std::this_thread::sleep_for(wait);
    return std::nullopt;
  }
  std::vector<SetupReport> gatherSetup(const SetupReport& mine) override { return {mine}; }
  void finish() override {}
  [[noreturn]] void abort(int code) override { std::_Exit(code); }
};

int envInt(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : 0;
}

}  // namespace

Processes::Failure Processes::firstFailure(int code) {
  const std::vector<SetupReport> all = gatherSetup({code, {}});
  for (std::size_t r = 0; r < all.size(); ++r)
    if (all[r].code != 0) return {int(r), all[r].code};
  return {};
}

int launcherSize() {
  // Open MPI's mpirun, then PMIx and PMI launchers (srun, MPICH's hydra).
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMIX_SIZE", "PMI_SIZE"})
    if (const int n = envInt(name); n > 0) return n;
  if (std::getenv("PMIX_RANK") || std::getenv("PMI_RANK")) return 1;
  return 0;
}

bool builtWithMpi() {
#ifdef TXL_HAVE_MPI
  return true;
#else
  return false;
#endif
}

std::unique_ptr<Processes> singleProcess() { return std::make_unique<SingleProcess>(); }

std::unique_ptr<Processes> joinProcesses() {
  const int launched = launcherSize();
#ifdef TXL_HAVE_MPI
  if (launched > 0) return makeMpiProcesses();
#else
  if (launched > 0)
    throw Error("started by an MPI launcher (" + std::to_string(launched) +
                " processes), but this txlc was built without MPI (install libopenmpi-dev and rebuild with "
                "-DTXLC_MPI=ON)");
#endif
  return std::make_unique<SingleProcess>();
}

}  // namespace txl::driver
