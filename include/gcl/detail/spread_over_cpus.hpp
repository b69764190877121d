#pragma once
// Where each rank of a job starts to run: when its ranks outnumber the CPUs, spread evenly, rank
// i on the (i mod n)-th of the n CPUs it may use; when they do not, never two on one CPU. Then
// free to move as before.
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
// Ranks no more than the CPUs fare the same when two start on one CPU, even with the other
// idle: at P = 2 on 2 cores, 4 B, GCL_SPREAD=0 and 1 alternated, 40 jobs each (2026-11-29),
// left to the kernel 2 spawn jobs and 6 shm jobs ran both ranks on one core for their whole
// life, 3.7-4.4 us a call against 0.15-0.16; with this, 0 and 1. So a rank that finds a lower
// rank on its CPU moves to one that no rank of its job is on (cpu_apart); ranks alone on their
// CPU stay where the kernel put them, so that jobs side by side on a large machine are not all
// crowded onto its first CPUs.
//
// A placement, not a binding: the thread's allowed CPUs are given back at once, so the kernel
// may still move it when other work needs the core (Open MPI binds nothing when ranks
// outnumber cores; neither does this). GCL_SPREAD=0 turns it off.

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <span>
#include <vector>

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

// The CPUs the calling thread may run on, in ascending order (none off Linux).
inline std::vector<int> allowed_cpus() {
  std::vector<int> cpus;
#if defined(__linux__)
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (::sched_getaffinity(0, sizeof allowed, &allowed) != 0) return cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
    if (CPU_ISSET(static_cast<std::size_t>(cpu), &allowed)) cpus.push_back(cpu);
#endif
  return cpus;
}

// The CPU the calling thread runs on now, or -1 where the system does not say.
inline int current_cpu() noexcept {
#if defined(__linux__)
  return ::sched_getcpu();
#else
  return -1;
#endif
}

// Moves the calling thread to `cpu` (sched_setaffinity moves a running thread before it
// returns), then gives it back every CPU it had. True when it moved.
inline bool move_to_cpu(int cpu) noexcept {
#if defined(__linux__)
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (cpu < 0 || cpu >= CPU_SETSIZE || ::sched_getaffinity(0, sizeof allowed, &allowed) != 0)
    return false;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(static_cast<std::size_t>(cpu), &one);
  if (::sched_setaffinity(0, sizeof one, &one) != 0) return false;
  // Giving the set back cannot fail where taking one of its CPUs did not; if it did, the
  // thread would stay bound, so it is tried again.
  for (int attempt = 0; attempt < 3; ++attempt)
    if (::sched_setaffinity(0, sizeof allowed, &allowed) == 0) return true;
  return false;
#else
  (void)cpu;
  return false;
#endif
}

// Whether `count` ranks outnumber the CPUs the calling thread may run on: the one test that
// picks spread_over_cpus (yes) or move_apart (no) for a job's ranks.
inline bool ranks_outnumber_allowed_cpus(int count, std::size_t allowed) noexcept {
  return count > 0 && static_cast<std::size_t>(count) > allowed;
}
inline bool ranks_outnumber_allowed_cpus(int count) {
  return ranks_outnumber_allowed_cpus(count, allowed_cpus().size());
}

// When `count` ranks share the CPUs the calling thread may run on and outnumber them, moves the
// thread to the (index mod n)-th of those n CPUs, and gives it back all n. Returns the CPU it
// moved to, or -1 when it did nothing: ranks no more than the CPUs (see move_apart), a single
// allowed CPU (a launcher bound the rank), or a system without sched_setaffinity.
inline int spread_over_cpus(int index, int count) {
  auto const cpus = allowed_cpus();
  auto const n = static_cast<int>(cpus.size());
  if (n < 2 || !ranks_outnumber_allowed_cpus(count, cpus.size()) || index < 0) return -1;
  int const cpu = cpus[static_cast<std::size_t>(index % n)];
  return move_to_cpu(cpu) ? cpu : -1;
}

// For ranks no more than their CPUs: the CPU rank `index` should move to so that no two ranks
// start on one, given the CPU each rank is on (`where`, -1: unknown) and the CPUs they may use
// (`allowed`, ascending), or -1 to stay. The lowest rank on a CPU stays; each rank that finds a
// lower one on its CPU takes, in rank order, the next allowed CPU that no rank is on, and stays
// when none is left. Every rank computes the same answer from the same `where`.
inline int cpu_apart(int index, std::span<int const> where, std::span<int const> allowed) {
  auto const count = static_cast<int>(where.size());
  if (allowed.size() < 2 || index < 0 || index >= count) return -1;
  auto at = [&](int r) { return where[static_cast<std::size_t>(r)]; };
  auto shares_with_a_lower_rank = [&](int r) {
    return at(r) >= 0 && std::find(where.begin(), where.begin() + r, at(r)) != where.begin() + r;
  };
  if (!shares_with_a_lower_rank(index)) return -1;
  int movers_before = 0;
  for (int r = 0; r < index; ++r) movers_before += shares_with_a_lower_rank(r) ? 1 : 0;
  for (int cpu : allowed)
    if (std::find(where.begin(), where.end(), cpu) == where.end() && movers_before-- == 0)
      return cpu;
  return -1;
}

// cpu_apart for the calling thread, rank `index`, and the move: the CPU it moved to, or -1.
inline int move_apart(int index, std::span<int const> where) {
  auto const allowed = allowed_cpus();
  int const cpu = cpu_apart(index, where, allowed);
  return cpu >= 0 && move_to_cpu(cpu) ? cpu : -1;
}

}  // namespace gcl::detail
