#pragma once
/// \file
/// Asymmetric fences: a pair of memory barriers where the side that runs often (a sender,
/// after every message) pays nothing and the side that runs rarely (a receiver about to sleep)
/// pays for both, as liburcu and folly's `asymmetric_thread_fence_heavy` do.
///
/// inproc_transport's wake-up protocol is Dekker's: the sender publishes a message then reads
/// whether the receiver sleeps; the receiver registers as a sleeper then looks for the message.
/// Each side needs a full fence between its store and its load, or both may miss the other's
/// store (a lost wake-up). A full fence on the sender waits for its stores to reach the other
/// core, a cache-line round trip on every message. Linux's membarrier(2) lets the receiver
/// force that fence onto every running thread of the process instead, when it is about to
/// sleep, after polling for a while anyway. Where membarrier is unavailable (not Linux, an old
/// kernel, or a sanitizer that does not model it), both sides use ordinary fences.
///
/// Between processes (shm_transport) the same holds with membarrier's global commands: every
/// process of the job registers, and the heavy fence then reaches every running thread of
/// every registered process (`register_cross_process_fences`, `fence_reach`).

#include <atomic>

#include "sanitizers.hpp"

#if defined(__linux__) && !defined(GCL_DETAIL_TSAN)
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>
#define GCL_HAVE_MEMBARRIER 1
#endif

namespace gcl::detail {

/// A full memory barrier. ThreadSanitizer does not model standalone fences (GCC warns with
/// -Wtsan); there a sequentially consistent read-modify-write, which is a full barrier on the
/// hardware too, stands in for it.
inline void full_fence() noexcept {
#if defined(GCL_DETAIL_TSAN)
  static std::atomic<int> barrier{0};
  barrier.fetch_add(0, std::memory_order_seq_cst);
#else
  std::atomic_thread_fence(std::memory_order_seq_cst);
#endif
}

/// Whether membarrier works for this process: registers it on first use (once per process).
inline bool asymmetric_fences_available() noexcept {
#ifdef GCL_HAVE_MEMBARRIER
  static bool const available =
      syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
  return available;
#else
  return false;
#endif
}

/// The frequent side's fence: stops only the compiler when `asymmetric`.
inline void light_fence(bool asymmetric) noexcept {
  if (asymmetric)
    std::atomic_signal_fence(std::memory_order_seq_cst);
  else
    full_fence();
}

/// Who a heavy fence reaches: the running threads of this process (inproc_transport), or of
/// every process registered by `register_cross_process_fences` (shm_transport).
enum class fence_reach { this_process, registered_processes };

/// The rare side's fence: a full fence on every running thread that `reach` names when
/// `asymmetric` (one system call and an interrupt per core).
inline void heavy_fence(bool asymmetric, fence_reach reach = fence_reach::this_process) noexcept {
#ifdef GCL_HAVE_MEMBARRIER
  int const command = reach == fence_reach::this_process ? MEMBARRIER_CMD_PRIVATE_EXPEDITED
                                                         : MEMBARRIER_CMD_GLOBAL_EXPEDITED;
  if (asymmetric && syscall(SYS_membarrier, command, 0, 0) == 0) return;
#endif
  (void)asymmetric;
  (void)reach;
  full_fence();
}

/// Registers this process as one that `heavy_fence(.., fence_reach::registered_processes)`
/// reaches (every process whose light fences another's heavy fence must pair with registers,
/// before relying on it); whether that worked. Idempotent: one system call per transport's
/// setup.
inline bool register_cross_process_fences() noexcept {
#ifdef GCL_HAVE_MEMBARRIER
  return syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED, 0, 0) == 0;
#else
  return false;
#endif
}

}  // namespace gcl::detail
