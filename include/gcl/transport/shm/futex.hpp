#pragma once
// Sleeping and waking across processes. libstdc++'s std::atomic::wait uses FUTEX_PRIVATE_FLAG,
// which keys the wait on this process's address space, so a waker in another process never
// finds the sleeper; a shared futex (no PRIVATE flag) is keyed on the page of the shared
// mapping, and works between processes and between threads alike.

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <climits>
#include <cstdint>

namespace gcl::detail {

static_assert(std::atomic<std::uint32_t>::is_always_lock_free &&
                  sizeof(std::atomic<std::uint32_t>) == sizeof(std::uint32_t),
              "a futex word must be a plain 32-bit word");

// Sleeps while `*word == expected`, at most `limit` (a signal or a spurious wake returns
// early: callers re-check what they wait for).
inline void futex_wait(std::atomic<std::uint32_t>& word, std::uint32_t expected,
                       std::chrono::nanoseconds limit) noexcept {
  if (limit.count() <= 0) return;
  timespec ts;
  ts.tv_sec = static_cast<time_t>(limit.count() / 1000000000);
  ts.tv_nsec = static_cast<long>(limit.count() % 1000000000);
  (void)::syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word), FUTEX_WAIT, expected, &ts,
                  nullptr, 0);
}

// Wakes every sleeper on `word`, in any process that maps it.
inline void futex_wake_all(std::atomic<std::uint32_t>& word) noexcept {
  (void)::syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word), FUTEX_WAKE, INT_MAX, nullptr,
                  nullptr, 0);
}

}  // namespace gcl::detail
