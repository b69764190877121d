#pragma once
/// \file
/// Non-blocking collectives (MPI_Iallreduce and the rest; torch.distributed's `async_op=True`):
/// `gcl::iall_reduce(comm, ...)` takes the arguments of `gcl::all_reduce(comm, ...)`, returns a
/// `gcl::collective_request` at once, and the collective runs meanwhile on the communicator's
/// progress thread, over a lane of its own (nonblocking/progress_engine.hpp):
///
///     auto r = gcl::iall_reduce(comm, grads, gcl::sum{});
///     compute();  // the all_reduce progresses whether or not anyone tests it
///     r.wait();   // grads holds the sum; an error is thrown here
///
///  - Any number may be outstanding on a communicator; they run, and complete, in the order
///    they were started (the same on every rank, as for blocking collectives). Communicators
///    (split, dup) have a thread each: theirs complete independently.
///  - The buffers (and count arrays) belong to gcl until `wait()` returns: lvalue ranges and the
///    buffer arguments are used in place, everything else (root, operator, algorithm, spans) is
///    copied when the call is made.
///  - The first non-blocking call on a communicator is collective, as a blocking collective is:
///    it forms the lane (a fork of the transport, `forkable_transport`) with a broadcast and a
///    barrier on the communicator. `gcl::ibarrier(comm).wait()` forms it up front.
///  - An error (timeout, dead peer, mismatch, a wrong argument) is thrown by `wait()`, with the
///    message the blocking call would give; the collectives started after a failed one fail
///    with the same error. Blocking calls, point-to-point ones included, may be made in
///    between: they use the communicator's own channels and never meet these messages.

#include <cstddef>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>

#include "../communicator.hpp"
#include "../concepts.hpp"
#include "../nonblocking/progress_engine.hpp"
#include "../nonblocking/request.hpp"
#include "all_gather.hpp"
#include "all_gatherv.hpp"
#include "all_reduce.hpp"
#include "all_to_all.hpp"
#include "all_to_allv.hpp"
#include "barrier.hpp"
#include "broadcast.hpp"
#include "exscan.hpp"
#include "gather.hpp"
#include "gatherv.hpp"
#include "reduce.hpp"
#include "reduce_scatter.hpp"
#include "reduce_scatterv.hpp"
#include "scan.hpp"
#include "scatter.hpp"
#include "scatterv.hpp"

namespace gcl {

namespace detail {

// How the argument at `index` is kept until the collective runs: the first `buffers` (data, or
// in and out) and any later lvalue range (counts) by reference, the rest (a root, an operator,
// an algorithm, an rvalue) by value: a loop that starts one broadcast per root must not see
// its loop variable change under the queued calls.
template <std::size_t index, std::size_t buffers, class A>
using held_t =
    std::conditional_t<std::is_lvalue_reference_v<A> &&
                           (index < buffers || std::ranges::range<std::remove_cvref_t<A>>),
                       A, std::decay_t<A>>;

template <std::size_t buffers, class Transport, class Call, class... Args, std::size_t... I>
collective_request start_nonblocking(communicator<Transport>& comm, std::string_view name,
                                     Call call, std::index_sequence<I...>, Args&&... args) {
  static_assert(forkable_transport<Transport>,
                "gcl: non-blocking collectives need a transport that can fork a second lane for "
                "its progress thread (forkable_transport): inproc_transport, tcp_transport, "
                "shm_transport, counting<> of one of them; hybrid_transport cannot yet");
  if constexpr (forkable_transport<Transport>) {
    using held = std::tuple<held_t<I, buffers, Args&&>...>;
    return comm.template cached<progress_engine<Transport>>().start(
        comm, name, [call, args = held(std::forward<Args>(args)...)](auto& lane) mutable {
          std::apply([&](auto&... a) { call(lane, a...); }, args);
        });
  } else {
    return {};
  }
}

template <std::size_t buffers, class Transport, class Call, class... Args>
collective_request start_nonblocking(communicator<Transport>& comm, std::string_view name,
                                     Call call, Args&&... args) {
  return start_nonblocking<buffers>(comm, name, call, std::index_sequence_for<Args...>{},
                                    std::forward<Args>(args)...);
}

}  // namespace detail

/// `gcl::all_reduce`, non-blocking: in place `(data, op, alg)` or `(in, out, op, alg)`.
template <class Transport, class... Args>
[[nodiscard]] collective_request iall_reduce(communicator<Transport>& comm, Args&&... args) {
  return detail::start_nonblocking<1>(
      comm, "all_reduce", [](auto& c, auto&... a) { all_reduce(c, a...); },
      std::forward<Args>(args)...);
}

/// `gcl::reduce`, non-blocking: `(data, root, op, alg)` or `(in, out, root, op, alg)`.
template <class Transport, class... Args>
[[nodiscard]] collective_request ireduce(communicator<Transport>& comm, Args&&... args) {
  return detail::start_nonblocking<1>(
      comm, "reduce", [](auto& c, auto&... a) { reduce(c, a...); }, std::forward<Args>(args)...);
}

/// `gcl::broadcast`, non-blocking: `(data, root, alg)` or `(in, out, root, alg)`.
template <class Transport, class... Args>
[[nodiscard]] collective_request ibroadcast(communicator<Transport>& comm, Args&&... args) {
  return detail::start_nonblocking<1>(
      comm, "broadcast", [](auto& c, auto&... a) { broadcast(c, a...); },
      std::forward<Args>(args)...);
}

/// `gcl::scan`, non-blocking: `(data, op, alg)`.
template <class Transport, class... Args>
[[nodiscard]] collective_request iscan(communicator<Transport>& comm, Args&&... args) {
  return detail::start_nonblocking<1>(
      comm, "scan", [](auto& c, auto&... a) { scan(c, a...); }, std::forward<Args>(args)...);
}

/// `gcl::exscan`, non-blocking: `(data, op, alg)`.
template <class Transport, class... Args>
[[nodiscard]] collective_request iexscan(communicator<Transport>& comm, Args&&... args) {
  return detail::start_nonblocking<1>(
      comm, "exscan", [](auto& c, auto&... a) { exscan(c, a...); }, std::forward<Args>(args)...);
}

/// `gcl::all_gather`, non-blocking: `(in, out, alg)`.
template <class Transport, class... Args>
[[nodiscard]] collective_request iall_gather(communicator<Transport>& comm, Args&&... args) {
  return detail::start_nonblocking<2>(
      comm, "all_gather", [](auto& c, auto&... a) { all_gather(c, a...); },
      std::forward<Args>(args)...);
}

/// `gcl::gather`, non-blocking: `(in, out, root, alg)`.
template <class Transport, class... Args>
[[nodiscard]] collective_request igather(communicator<Transport>& comm, Args&&... args) {
  return detail::start_nonblocking<2>(
      comm, "gather", [](auto& c, auto&... a) { gather(c, a...); }, std::forward<Args>(args)...);
}

/// `gcl::scatter`, non-blocking: `(in, out, root, alg)`.
template <class Transport, class... Args>
[[nodiscard]] collective_request iscatter(communicator<Transport>& comm, Args&&... args) {
  return detail::start_nonblocking<2>(
      comm, "scatter", [](auto& c, auto&... a) { scatter(c, a...); }, std::forward<Args>(args)...);
}

/// `gcl::all_to_all`, non-blocking: `(in, out, alg)`.
template <class Transport, class... Args>
[[nodiscard]] collective_request iall_to_all(communicator<Transport>& comm, Args&&... args) {
  return detail::start_nonblocking<2>(
      comm, "all_to_all", [](auto& c, auto&... a) { all_to_all(c, a...); },
      std::forward<Args>(args)...);
}

/// `gcl::reduce_scatter`, non-blocking: `(in, out, op, alg)`.
template <class Transport, class... Args>
[[nodiscard]] collective_request ireduce_scatter(communicator<Transport>& comm, Args&&... args) {
  return detail::start_nonblocking<2>(
      comm, "reduce_scatter", [](auto& c, auto&... a) { reduce_scatter(c, a...); },
      std::forward<Args>(args)...);
}

/// `gcl::gatherv`, non-blocking: `(in, out, counts, root, alg)`.
template <class Transport, class... Args>
[[nodiscard]] collective_request igatherv(communicator<Transport>& comm, Args&&... args) {
  return detail::start_nonblocking<2>(
      comm, "gatherv", [](auto& c, auto&... a) { gatherv(c, a...); }, std::forward<Args>(args)...);
}

/// `gcl::scatterv`, non-blocking: `(in, out, counts, root, alg)`.
template <class Transport, class... Args>
[[nodiscard]] collective_request iscatterv(communicator<Transport>& comm, Args&&... args) {
  return detail::start_nonblocking<2>(
      comm, "scatterv", [](auto& c, auto&... a) { scatterv(c, a...); },
      std::forward<Args>(args)...);
}

/// `gcl::all_gatherv`, non-blocking: `(in, out, counts, alg)`.
template <class Transport, class... Args>
[[nodiscard]] collective_request iall_gatherv(communicator<Transport>& comm, Args&&... args) {
  return detail::start_nonblocking<2>(
      comm, "all_gatherv", [](auto& c, auto&... a) { all_gatherv(c, a...); },
      std::forward<Args>(args)...);
}

/// `gcl::all_to_allv`, non-blocking: `(in, send_counts, out, recv_counts, alg)`, as the
/// blocking call orders them.
template <class Transport, class... Args>
[[nodiscard]] collective_request iall_to_allv(communicator<Transport>& comm, Args&&... args) {
  return detail::start_nonblocking<3>(
      comm, "all_to_allv", [](auto& c, auto&... a) { all_to_allv(c, a...); },
      std::forward<Args>(args)...);
}

/// `gcl::reduce_scatterv`, non-blocking: `(in, out, counts, op, alg)`.
template <class Transport, class... Args>
[[nodiscard]] collective_request ireduce_scatterv(communicator<Transport>& comm, Args&&... args) {
  return detail::start_nonblocking<2>(
      comm, "reduce_scatterv", [](auto& c, auto&... a) { reduce_scatterv(c, a...); },
      std::forward<Args>(args)...);
}

/// `gcl::barrier`, non-blocking: `wait()` returns once every rank has started it.
template <class Transport, class... Args>
[[nodiscard]] collective_request ibarrier(communicator<Transport>& comm, Args&&... args) {
  return detail::start_nonblocking<0>(
      comm, "barrier", [](auto& c, auto&... a) { barrier(c, a...); }, std::forward<Args>(args)...);
}

}  // namespace gcl
