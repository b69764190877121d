#pragma once
// Where each rank of a job whose ranks outnumber the CPUs starts to run: spread evenly, rank i
// on the (i mod n)-th of the n CPUs it may use, then free to move as before.
//
// Why: the kernel places a process or thread when it starts, and the ranks of a collective,
// which poll and yield rather than sleep, keep every CPU busy from then on, so it hardly ever
// moves one again (no CPU goes idle to pull work). Eight ranks on two cores then run 4 + 4 in
// some jobs and 5 + 3 in others for their whole life, and a call takes as many turns as the
// busier core has ranks. Measured at P = 8 on 2 cores (all_reduce of 4 B back to back, the
// slowest rank's median, GCL_SPREAD=0 and 1 alternated, 2026-11-28): over shm, six jobs each,
// 11.7-15.8 us left to the kernel, 11.8-12.3 spread; on threads (spawn), eight jobs each,
// 7.4-9.6 against 7.5-7.7. `perf sched timehist` of a slow job showed one core turning through
// five ranks, the other through three (benchmark/analysis.md).
//
// A placement, not a binding: the thread's allowed CPUs are given back at once, so the kernel
// may still move it when other work needs the core (Open MPI binds nothing when ranks
// outnumber cores; neither does this). GCL_SPREAD=0 turns it off.

#include <cstddef>
#include <cstdlib>

#if defined(__linux__)
#include <sched.h>
#endif

#include "env_flag.hpp"

namespace gcl::detail {

// GCL_SPREAD's value (or `v`, for tests): true when unset, empty or "1", false for "0";
// anything else throws usage_error naming it.
inline bool spread_ranks_from(char const* v) {
  return v == nullptr || *v == '\0' || env_flag("GCL_SPREAD", v);
}

inline bool spread_ranks_from_env() {
  return spread_ranks_from(std::getenv("GCL_SPREAD"));
}

// When `count` ranks share the CPUs the calling thread may run on and outnumber them, moves the
// thread to the (index mod n)-th of those n CPUs (sched_setaffinity moves a running thread
// before it returns), then gives it back all n. Returns the CPU it moved to, or -1 when it did
// nothing: ranks no more than the CPUs (the kernel spreads those itself, onto idle cores), a
// single allowed CPU (a launcher bound the rank), or a system without sched_setaffinity.
inline int spread_over_cpus(int index, int count) noexcept {
#if defined(__linux__)
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (::sched_getaffinity(0, sizeof allowed, &allowed) != 0) return -1;
  int const cpus = CPU_COUNT(&allowed);
  if (cpus < 2 || count <= cpus || index < 0) return -1;
  int nth = index % cpus;
  std::size_t cpu = 0;
  while (!CPU_ISSET(cpu, &allowed) || nth-- > 0) ++cpu;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  if (::sched_setaffinity(0, sizeof one, &one) != 0) return -1;
  // Giving the set back cannot fail where taking one of its CPUs did not; if it did, the
  // thread would stay bound, so it is tried again.
  for (int attempt = 0; attempt < 3; ++attempt)
    if (::sched_setaffinity(0, sizeof allowed, &allowed) == 0) return static_cast<int>(cpu);
  return -1;
#else
  (void)index;
  (void)count;
  return -1;
#endif
}

}  // namespace gcl::detail
