#pragma once
/// \file
/// The floor of a small message between two threads: how long a cache line takes to go from one
/// core to another and back. Two threads, each pinned to a core of its own (as the benchmarks
/// pin two ranks), pass a counter back and forth through one line: one writes n, the other
/// waits to read n and writes n + 1, the first waits for n + 1, and so on. A round of the two
/// is two transfers of the line, one each way, which is what a message and its answer cost
/// at the least, with nothing of gcl's between them; a back-to-back all_reduce of a few bytes
/// at P = 2 moves a line each way per call, each rank's message to the other, and a line it
/// writes again was last read by the other core. Nothing here knows gcl.

#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "bind.hpp"
#include "common.hpp"

namespace bench::line_round_trip {

namespace detail {

// The first two CPUs this thread may run on, or nothing when it may run on fewer.
inline std::optional<std::pair<int, int>> two_cpus() {
  auto const cpus = bench::detail::allowed_cpus();
  if (cpus.size() < 2) return std::nullopt;
  return std::pair(cpus[0], cpus[1]);
}

}  // namespace detail

/// Median nanoseconds of one round (the line there and back) over `reps` timed runs of
/// `rounds` rounds each, the first run a warm-up; nothing when this process has fewer than two
/// CPUs to pin the threads to (two threads spinning on one core would time the scheduler).
inline std::optional<double> nanoseconds(int rounds, int reps) {
  auto const cpus = detail::two_cpus();
  if (!cpus) return std::nullopt;
  struct alignas(128) line {
    std::atomic<std::uint64_t> value{0};
  };
  auto shared = std::make_unique<line>();
  auto& v = shared->value;
  std::vector<double> per_round;
  // The value the first thread writes next; the line holds the one before it, so that the
  // answerer's first wait is for the asker's first write.
  std::uint64_t next = 1;
  v.store(next - 1, std::memory_order_relaxed);
  for (int rep = 0; rep < reps + 1; ++rep) {
    std::uint64_t const start = next, end = start + 2 * static_cast<std::uint64_t>(rounds);
    double seconds = 0;
    std::atomic<bool> answering{false};  // on a line of its own: the stack frame, not `shared`
    std::jthread answerer([&, start, end] {
      bench::detail::pin_to(cpus->second);  // best effort
      answering.store(true, std::memory_order_release);
      for (std::uint64_t n = start + 1; n < end; n += 2) {
        while (v.load(std::memory_order_acquire) != n - 1) {
        }
        v.store(n, std::memory_order_release);
      }
    });
    std::jthread asker([&, start, end] {
      bench::detail::pin_to(cpus->first);
      // Timed once the answerer runs on its core, not from its thread's start.
      while (!answering.load(std::memory_order_acquire)) {
      }
      auto const t0 = bench::clock::now();
      for (std::uint64_t n = start; n < end; n += 2) {
        v.store(n, std::memory_order_release);
        while (v.load(std::memory_order_acquire) != n + 1) {
        }
      }
      seconds = bench::seconds_since(t0);
    });
    answerer.join();
    asker.join();
    next = end;  // the line holds end - 1, the answerer's last
    if (rep > 0) per_round.push_back(seconds * 1e9 / rounds);
  }
  return bench::median(per_round);
}

}  // namespace bench::line_round_trip
