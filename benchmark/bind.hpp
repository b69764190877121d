#pragma once
// Pinning a rank's thread to a core, shared by the benchmark harness and the cost-model checks.

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <string>
#include <thread>

namespace bench::detail {

// Pins the calling thread (a rank) to core `rank mod cores`, as Open MPI binds its processes
// by default when they do not outnumber the cores (`--bind-to core`); unpinned otherwise.
// "core" pins even when ranks outnumber cores: a fixed placement, where an unpinned one changes
// which ranks share a core every few milliseconds and with it which algorithm is fastest.
inline void bind_rank(std::string const& how, int rank, int size) {
  unsigned const cores = std::max(1u, std::thread::hardware_concurrency());
  bool pin = how == "core" || (how == "auto" && static_cast<unsigned>(size) <= cores);
  if (!pin) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(static_cast<unsigned>(rank) % cores, &set);
  pthread_setaffinity_np(pthread_self(), sizeof set, &set);  // best effort
}

}  // namespace bench::detail
