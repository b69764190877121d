#pragma once
// Pinning to a core: a rank's thread (the benchmark harness, the cost-model checks), and the
// tasks of the machine's limits (line_round_trip.hpp, switch_cost.hpp).

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <string>
#include <thread>
#include <vector>

namespace bench::detail {

// The CPUs the calling thread may run on, in ascending order (none where the system does not
// say).
inline std::vector<int> allowed_cpus() {
  std::vector<int> cpus;
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &allowed)) cpus.push_back(c);
  return cpus;
}

// Pins the calling thread, of this process or of a forked one, to `cpu`; true when it could.
inline bool pin_to(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(static_cast<unsigned>(cpu), &set);
  return sched_setaffinity(0, sizeof set, &set) == 0;  // 0: the calling thread only
}

// Pins the calling thread (a rank) to core `rank mod cores`, as Open MPI binds its processes
// by default when they do not outnumber the cores (`--bind-to core`); unpinned otherwise.
// "core" pins even when ranks outnumber cores: a fixed placement, where an unpinned one changes
// which ranks share a core every few milliseconds and with it which algorithm is fastest.
inline void bind_rank(std::string const& how, int rank, int size) {
  unsigned const cores = std::max(1u, std::thread::hardware_concurrency());
  bool pin = how == "core" || (how == "auto" && static_cast<unsigned>(size) <= cores);
  if (!pin) return;
  pin_to(static_cast<int>(static_cast<unsigned>(rank) % cores));  // best effort
}

}  // namespace bench::detail
