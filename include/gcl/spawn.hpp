#pragma once
/// \file
/// `spawn<Transport>(n, f)`: runs `f(comm)` for n ranks on n threads of this process, the
/// `torch.multiprocessing.spawn` of gcl. If a rank throws, every other rank is released (their
/// blocked calls throw `errc::aborted`), all threads are joined, and the first real error is
/// rethrown: nothing hangs. Where the threads outnumber the CPUs, rank r's thread starts on the
/// (r mod n)-th of the n CPUs the process may use; where they do not, no two start on one CPU.
/// Either way each is free to move from there (GCL_SPREAD=0: left to the kernel;
/// detail/spread_over_cpus.hpp says why).

#include <atomic>
#include <chrono>
#include <concepts>
#include <exception>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "communicator.hpp"
#include "detail/spread_over_cpus.hpp"
#include "error.hpp"

namespace gcl {

/// A transport that can form a group of n ranks inside one process: `typename T::group g(n,
/// opts)` creates the group, `g.connect(rank)` gives each rank its endpoint (called on that
/// rank's thread, since connecting may block on the others), and `g.abort(reason)` releases every
/// blocked call. `inproc_transport` is one; `tcp_transport` is another, over loopback sockets.
template <class T>
concept group_transport = transport<T> && requires {
  typename T::options;
  typename T::group;
} && std::constructible_from<typename T::group, int, typename T::options> &&
    requires(typename T::group& g, int rank, std::string const& reason) {
  { g.connect(rank) } -> std::same_as<T>;
  g.abort(reason);
};

namespace detail {

inline bool is_abort(std::exception_ptr const& e) {
  try {
    std::rethrow_exception(e);
  } catch (transport_error const& t) {
    return t.code() == errc::aborted;
  } catch (...) {
    return false;
  }
}

inline std::string what_of(std::exception_ptr const& e) {
  try {
    std::rethrow_exception(e);
  } catch (std::exception const& x) {
    return x.what();
  } catch (...) {
    return "an exception not derived from std::exception";
  }
}

}  // namespace detail

/// Runs `f(comm)` on `n` threads, one per rank, with `comm` a `communicator<Transport>&`.
/// Returns nothing if `f` returns nothing, else the n results indexed by rank.
///
///     gcl::spawn<gcl::inproc_transport>(4, [](auto& comm) {
///       std::printf("Rank %d: Hello, Alice!\n", comm.rank());
///     });
///     auto ranks = gcl::spawn<gcl::inproc_transport>(4, [](auto& comm) { return comm.rank(); });
template <group_transport Transport, class F>
requires std::invocable < F&, communicator<Transport>
& > auto spawn(int n, F&& f, typename Transport::options opts = {}) {
  using result = std::invoke_result_t<F&, communicator<Transport>&>;
  constexpr bool returns = !std::is_void_v<result>;
  using slot = std::conditional_t<returns, std::optional<result>, char>;

  typename Transport::group group(n, opts);  // validates n
  bool const spread = detail::spread_ranks_from_env();
  // More ranks than CPUs: each moves to its share of them. No more: each writes down its CPU,
  // and those that find a lower rank on theirs move apart (detail/spread_over_cpus.hpp).
  bool const crowded = spread && detail::ranks_outnumber_allowed_cpus(n);
  std::vector<int> where(static_cast<std::size_t>(n), -1);
  std::atomic<int> placed{0};
  std::vector<slot> results(static_cast<std::size_t>(n));
  std::mutex failure_mutex;
  std::exception_ptr first_real, first_abort;

  // The first failure of each kind is kept; a real one (not a release by the abort) aborts the
  // group, releasing every other rank.
  auto fail = [&](int rank, std::exception_ptr e) {
    bool const abort = detail::is_abort(e);
    {
      std::lock_guard lock(failure_mutex);
      auto& first = abort ? first_abort : first_real;
      if (!first) first = e;
    }
    if (!abort) group.abort("rank " + std::to_string(rank) + " failed: " + detail::what_of(e));
  };
  auto run_rank = [&](int rank) {
    bool kept = false;
    try {
      struct arrival {
        std::atomic<int>& placed;
        bool arrived = false;
        void arrive() {
          if (!std::exchange(arrived, true)) placed.fetch_add(1, std::memory_order_release);
        }
        ~arrival() { arrive(); }
      } here{placed};
      communicator<Transport> comm(group.connect(rank));  // may sleep, and wake anywhere
      if (crowded)
        detail::spread_over_cpus(rank, n);
      else if (spread)
        where[static_cast<std::size_t>(rank)] = detail::current_cpu();
      here.arrive();
      // Until every rank has its place, this one yields rather than sleep in its first call:
      // the kernel places a thread again where it wakes, often beside its waker. Every thread
      // arrives once connect has returned or thrown; a second bounds the wait all the same (a
      // thread that could not be started never arrives).
      auto const until = std::chrono::steady_clock::now() + std::chrono::seconds{1};
      while (spread && placed.load(std::memory_order_acquire) < n &&
             std::chrono::steady_clock::now() < until)
        std::this_thread::yield();
      // `where` is whole once every rank has arrived (each wrote its entry before).
      if (spread && !crowded && placed.load(std::memory_order_acquire) == n)
        detail::move_apart(rank, where);
      try {
        if constexpr (returns)
          results[static_cast<std::size_t>(rank)].emplace(std::invoke(f, comm));
        else
          std::invoke(f, comm);
      } catch (...) {
        // Kept, and the group aborted, while this rank's communicator is still alive: closing
        // it tells the peers that this rank has gone, and a peer waiting for it would then
        // fail with that (errc::peer_closed, a real error), perhaps before this rank's own
        // error was kept, and spawn would rethrow the consequence for the cause. Rethrown so
        // that the communicator still closes while the exception unwinds: a transport that
        // closes so knows its rank failed, not that it ended its job early.
        fail(rank, std::current_exception());
        kept = true;
        throw;
      }
    } catch (...) {
      if (!kept) fail(rank, std::current_exception());  // connect, or placing the thread, failed
    }
  };
  {
    std::vector<std::jthread> threads;
    threads.reserve(static_cast<std::size_t>(n));
    for (int r = 0; r < n; ++r) threads.emplace_back(run_rank, r);
  }  // joins
  if (first_real) std::rethrow_exception(first_real);
  if (first_abort) std::rethrow_exception(first_abort);
  // Every rank returned, but the group was ended by an error found after some rank's last call
  // (ranks that disagreed about a call in which nobody waited for the other): never a success.
  if constexpr (requires { group.failure(); })
    if (auto e = group.failure()) std::rethrow_exception(e);
  if constexpr (returns) {
    std::vector<result> out;
    out.reserve(results.size());
    for (auto& r : results) out.push_back(std::move(*r));
    return out;
  }
}

}  // namespace gcl
