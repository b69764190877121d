#pragma once
/// \file
/// The floor of a small message where ranks outnumber the cores: how long one core takes to
/// switch from one task to another, for threads of one process and for processes. A few tasks
/// are pinned to one CPU and hand it round by sched_yield; a switch is counted whenever a task
/// finds that another ran last, so a yield that switches nothing is not counted. Between
/// processes the kernel also changes the address space, which in some virtual machines costs
/// several times the rest (on the 2-core host of 2026-12-06: 2.0-2.6 us between threads,
/// 4.9 us between two processes and 8-10 us among three or more).
///
/// Where ranks outnumber the cores, a back-to-back collective of a few bytes cannot end until
/// every rank has run once more, so each core switches at least as many times a call as it has
/// ranks: at P = 8 on 2 cores, four switches a call; that, not the messages, bounds the
/// transport of processes (shm) against the one of threads (inproc) there. Nothing here knows
/// gcl.

#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <new>
#include <optional>
#include <system_error>
#include <thread>
#include <vector>

#include "bind.hpp"
#include "common.hpp"

namespace bench::switch_cost {

enum class tasks_are { threads, processes };

namespace detail {

// What the tasks share: in memory mapped before the fork, so that processes share it too.
struct ring {
  std::atomic<int> ready{0};  // tasks pinned and waiting for the start
  std::atomic<int> last{-1};  // the task that ran last
  std::atomic<std::uint64_t> switches{0};
  std::atomic<bool> stop{false};
  std::atomic<std::int64_t> start_ns{0};  // steady clock, set by the last task to get ready
  std::atomic<std::int64_t> stop_ns{0};
};

inline std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// One task: pinned to `cpu`, it yields until the ring has switched `target` times (or, should
// a task be lost, for 10 s at most: never a hang). True when it could pin itself.
inline bool take_turns(ring& r, int me, int tasks, int cpu, std::uint64_t target) {
  bool const pinned = bench::detail::pin_to(cpu);
  if (r.ready.fetch_add(1) + 1 == tasks) r.start_ns.store(now_ns());
  auto const give_up = now_ns() + std::int64_t{10'000'000'000};
  while (r.ready.load() < tasks && now_ns() < give_up) sched_yield();
  while (!r.stop.load(std::memory_order_relaxed)) {
    // Only one task of the CPU runs at a time: the read and the write need not be one step.
    bool done = false;
    if (r.last.load(std::memory_order_relaxed) != me) {
      r.last.store(me, std::memory_order_relaxed);
      done = r.switches.fetch_add(1, std::memory_order_relaxed) + 1 >= target;
    }
    // Also when this task is the only one left running (the others died or never started).
    if (done || now_ns() >= give_up) {
      r.stop_ns.store(now_ns());
      r.stop.store(true);
    }
    sched_yield();
  }
  return pinned;
}

// Nanoseconds per switch of one round of `tasks` tasks, or nothing when they could not be
// started or pinned.
inline std::optional<double> one_round(tasks_are kind, int tasks, std::uint64_t target) {
  auto const cpus = bench::detail::allowed_cpus();
  if (cpus.empty()) return std::nullopt;
  int const cpu = cpus.front();
  void* mem =
      mmap(nullptr, sizeof(ring), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) return std::nullopt;
  auto* r = new (mem) ring{};
  bool ok = true;
  if (kind == tasks_are::threads) {
    std::atomic<bool> all_pinned{true};
    {
      std::vector<std::jthread> pool;  // joined on every way out of this block
      try {
        for (int t = 0; t < tasks; ++t)
          pool.emplace_back([&, t] {
            if (!take_turns(*r, t, tasks, cpu, target)) all_pinned = false;
          });
      } catch (std::system_error const&) {  // a thread could not be started
        all_pinned = false;
        r->stop.store(true);
        r->ready.store(tasks);  // no task waits for the one that was not started
      }
    }
    ok = all_pinned;
  } else {
    std::vector<pid_t> children;
    for (int t = 0; t < tasks; ++t) {
      pid_t const pid = fork();
      if (pid == 0) _exit(take_turns(*r, t, tasks, cpu, target) ? 0 : 1);
      if (pid < 0) {
        ok = false;
        r->stop.store(true);
        r->ready.store(tasks);  // no task waits for the one that was not started
        break;
      }
      children.push_back(pid);
    }
    for (pid_t const pid : children) {
      int status = 0;
      if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        ok = false;
    }
  }
  std::optional<double> ns;
  auto const switches = r->switches.load();
  if (ok && switches > 0)
    ns =
        static_cast<double>(r->stop_ns.load() - r->start_ns.load()) / static_cast<double>(switches);
  r->~ring();
  munmap(mem, sizeof(ring));
  return ns;
}

}  // namespace detail

/// Median nanoseconds per switch between `tasks` tasks (threads of this process, or processes
/// forked from it) sharing one CPU, over `reps` timed rounds of `switches` switches each, after
/// one round of warm-up; nothing when the tasks could not be started or pinned. Call it while
/// this process has no other threads (it forks).
inline std::optional<double> nanoseconds(tasks_are kind, int tasks, std::uint64_t switches,
                                         int reps) {
  std::vector<double> per_switch;
  for (int rep = 0; rep < reps + 1; ++rep) {
    auto const ns = detail::one_round(kind, tasks, switches);
    if (!ns) return std::nullopt;
    if (rep > 0) per_switch.push_back(*ns);
  }
  return bench::median(per_switch);
}

}  // namespace bench::switch_cost
