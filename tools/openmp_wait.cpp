// tools/openmp_wait.cpp - how long an idle OpenMP thread of txlc spins before
// it sleeps: a short spin, chosen before libgomp reads its environment.
//
// libgomp lets a thread that waits at a barrier or for the next parallel
// region spin for 300,000 iterations (a few hundred microseconds) before it
// blocks. When another process holds one of the cores, the spinning threads
// burn the time slices the working ones need, and a run on every core
// becomes slower than a run on one. GOMP_SPINCOUNT=1000 keeps the idle
// machine's speed within noise and makes 2 threads beside a CPU hog about as
// fast as 1 (docs/PERFORMANCE.md, "Threads on a loaded machine").
//
// libgomp reads GOMP_SPINCOUNT and OMP_WAIT_POLICY once, in its constructor,
// and nothing set later changes them: the C library's constructor, which
// runs after the executable's .preinit_array and before libgomp's, resets
// the environment to the one the kernel passed. So the hook below, the first
// code of the process, runs the executable again (the same pid, the same
// arguments, the same name) with GOMP_SPINCOUNT added to that environment;
// it costs one exec before any library is initialized. A user's own GOMP_SPINCOUNT or
// OMP_WAIT_POLICY is kept, and so is everything else when the exec fails (no
// /proc): the run then has libgomp's default. Child processes (mpirun's
// ranks, the bench's probe) inherit the setting.
#include <unistd.h>

#include <cstring>

namespace {

constexpr const char kSpinCount[] = "GOMP_SPINCOUNT=1000";

bool startsWith(const char* s, const char* prefix) { return std::strncmp(s, prefix, std::strlen(prefix)) == 0; }

void shortSpin(int, char** argv, char** envp) {
  std::size_t n = 0;
  for (; envp && envp[n]; ++n)
    if (startsWith(envp[n], "GOMP_SPINCOUNT=") || startsWith(envp[n], "OMP_WAIT_POLICY=")) return;
  // No allocation: the C library is not initialized yet.
  char* env[n + 2];
  for (std::size_t i = 0; i < n; ++i) env[i] = envp[i];
  env[n] = const_cast<char*>(kSpinCount);
  env[n + 1] = nullptr;
  // The executable's own path, so that the process keeps its name (`ps`,
  // `pkill txlc`): through /proc/self/exe it would be called "exe".
  char self[4096];
  const ssize_t len = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (len <= 0) return;
  self[len] = '\0';
  ::execve(self, argv, env);  // returns only on failure (the file gone, no /proc): run on with libgomp's default
}

}  // namespace

__attribute__((section(".preinit_array"), used)) void (*const txlcShortSpin)(int, char**, char**) = shortSpin;
