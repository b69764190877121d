#pragma once
// Whether the ranks on one host outnumber its CPUs: the question behind the transports'
// defaults that depend on ranks sharing cores (the sizes from which inproc and shm combine a
// message as it arrives, how long their waits look and poll before yielding and before they
// sleep), and the step their waits take between two looks.

#include <chrono>
#include <thread>

namespace gcl::detail {

// The CPUs std::thread::hardware_concurrency reports, looked up once; 0 when it cannot tell.
inline unsigned host_cpus() noexcept {
  static unsigned const cpus = std::thread::hardware_concurrency();
  return cpus;
}

// True when `ranks` are more than `per_cpu` times the CPUs; false when it cannot tell.
inline bool ranks_outnumber_cpus(int ranks, unsigned per_cpu = 1) noexcept {
  unsigned const cpus = host_cpus();
  return cpus != 0 && ranks > 0 && static_cast<unsigned>(ranks) > per_cpu * cpus;
}

// True when `ranks` are at least twice the CPUs, so that every core (the ranks spread evenly)
// runs two or more of them: there a round of messages waits for about one switch per rank on
// the core, and all_reduce's small messages go fastest in the fewest messages of few rounds
// (`gcl::by_size`, `all_reduce_thresholds::parameter_server_below_if_cores_crowded`). False
// when it cannot tell.
inline bool ranks_crowd_cpus(int ranks) noexcept {
  unsigned const cpus = host_cpus();
  return cpus != 0 && ranks > 0 && static_cast<unsigned>(ranks) >= 2 * cpus;
}

// How many times a blocked call of inproc or shm looks for what it waits for, a pause apart,
// before it reads the clock and starts to yield the core: 16 where each rank has a core (the
// message is often a cache miss away), 1 where the ranks outnumber the CPUs. There the sender
// is often a rank waiting for this very core, and the looks (on shm, each drains every ring to
// the rank) cost about 0.3 us per process switch, of which a call makes about 15: measured at
// P = 8 on 2 cores, shm, all_reduce of 4 B to 1 KiB back to back, ten jobs each, the mean call
// took 15.9-18.6 us against 21.0-24.1; in a second run, six jobs each interleaved with Open
// MPI's vader, 16.4-19.7 against 20.2-24.2 (vader 16.3-29.7); threads at P = 8 15-21 against
// 18-24 (benchmark/analysis.md).
inline int looks_before_yielding_when(bool cores_shared) noexcept {
  return cores_shared ? 1 : 16;
}
inline int looks_before_yielding(int ranks) noexcept {
  return looks_before_yielding_when(ranks_outnumber_cpus(ranks));
}

// How long a blocked call of inproc or shm then polls, a pause apart, before it yields the core
// between looks: 5 us where each rank has a core, none where the ranks outnumber the CPUs (there
// the awaited sender may need this very core). Where each rank has a core nobody needs this one,
// and a yield is only a system call, which in some virtual machines costs more than the message:
// about 1.2 us on the AMD EPYC host of 2026-12-05 (a paravirtualised guest, where every system
// call traps), where a message between its two cores took about 0.3 to 0.5 us, so a wait that
// outlasted the 16 paused looks yielded and came back late. Open MPI polls without yielding too
// unless told the ranks oversubscribe the cores. Measured there at P = 2 (benchmark/all_reduce,
// back to back, four rounds, builds alternated with Open MPI's vader): threads 8 B 0.54-0.59 us
// against 0.63-0.69 (vader 0.55), 4 KiB 1.28-1.40 against 1.78-2.85, 32 KiB 3.5-4.3 against
// 5.7-6.5; shm 8 B 0.47-0.50 against 0.53-0.58, 32 KiB 3.6-4.1 against 5.4-6.7; from 256 KiB
// level. 102,770 yields in 300,000 calls of 8 B between threads against 2,102
// (benchmark/analysis.md).
inline std::chrono::nanoseconds polling_before_yielding_when(bool cores_shared) noexcept {
  return cores_shared ? std::chrono::nanoseconds{0} : std::chrono::microseconds{5};
}
inline std::chrono::nanoseconds polling_before_yielding(int ranks) noexcept {
  return polling_before_yielding_when(ranks_outnumber_cpus(ranks));
}

// How long a blocked call of inproc or shm polls (yielding the core between looks, after
// `polling_before_yielding`) before it sleeps, unless its options say (`spin`): 2 ms where each
// rank has a core, 50 us where the ranks outnumber the CPUs. Where each rank has a core nobody
// else needs it, and what a sleep costs is the wake-up, about 100 us here, paid by every call
// a rank enters ahead of its peers (a training step whose ranks finish their work at different
// times), where polling costs nothing; Open MPI polls without end there. Measured on 2 cores
// (2026-12-06, P = 2, rank 1 working X us before each barrier, 300 iterations, the time beyond
// the work per iteration): X = 1 ms, threads 102 us with 50 us of polling against 6 with 2 ms,
// shm 87 against 11 (Open MPI's vader 5); X = 200 us, shm 55 against 5; X = 5 ms, shm 225
// against 109 with 1 ms of polling and 7 with 10 ms. So waits shorter than 2 ms cost
// microseconds, longer ones a wake-up, under a tenth of the wait. Where ranks share cores, the
// awaited sender may need this very core, and longer polling was no better (tcp_options).
inline constexpr std::chrono::microseconds own_core_spin{2000};
inline constexpr std::chrono::microseconds shared_core_spin{50};
inline std::chrono::microseconds default_spin(int ranks) noexcept {
  return ranks_outnumber_cpus(ranks) ? shared_core_spin : own_core_spin;
}

// Tells the core that this thread is polling (x86's pause: it spares the sibling hyperthread
// and the memory-order flush when the polled line changes).
inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// What a blocked call of inproc or shm does between two looks while it polls: a pause until
// `yield_from` (its start plus `polling_before_yielding`), a yield from then on. The call
// reads the clock only now and then, and says what it read (`at`).
class between_looks {
 public:
  explicit between_looks(std::chrono::steady_clock::time_point yield_from) noexcept
      : yield_from_(yield_from) {}
  void at(std::chrono::steady_clock::time_point now) noexcept { pausing_ = now < yield_from_; }
  void operator()() const noexcept {
    if (pausing_)
      cpu_relax();
    else
      std::this_thread::yield();
  }

 private:
  std::chrono::steady_clock::time_point yield_from_;
  bool pausing_ = true;
};

}  // namespace gcl::detail
