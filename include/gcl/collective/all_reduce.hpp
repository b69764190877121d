#pragma once
/// \file
/// `gcl::all_reduce`: every rank ends with the combination of every rank's data, in place.
///
/// The pattern every collective in this directory follows: a free function taking the
/// communicator first and the algorithm last (with a default), which (1) checks at compile
/// time that the algorithm implements the collective and accepts the operator, (2) validates
/// the arguments and throws `usage_error` before sending anything, (3) opens a call scope with
/// the `call_info` all ranks must agree on (its `count` is the per-rank quantity that must be
/// equal everywhere, so ranks passing different counts fail with `errc::mismatch` on the first
/// message), and (4) calls the algorithm's member of the same name on `std::span`s.

#include <span>

#include "../algorithm/by_size.hpp"
#include "../call_info.hpp"
#include "../communicator.hpp"
#include "../detail/collective_checks.hpp"
#include "../detail/payload.hpp"
#include "../op.hpp"

namespace gcl {

/// An algorithm with an `all_reduce(comm, std::span<T>, op)` member.
template <class Alg, class Comm, class T, class Op>
concept all_reduce_algorithm = algorithm<Alg> &&
    requires(Alg const& a, Comm& c, std::span<T> d, Op const& op) {
  a.all_reduce(c, d, op);
};

/// Replaces `data` on every rank by `op` over all ranks' `data` (element-wise). `data` is a
/// contiguous range (vector, array, span) or a single value, of the same size on every rank.
///
///     std::vector<float> g = local_gradient();
///     gcl::all_reduce(comm, g, gcl::sum{}, gcl::ring{});   // bandwidth-optimal, large data
///     gcl::all_reduce(comm, g, gcl::sum{}, gcl::tree{});   // latency-optimal, small data
///     int n = 1; gcl::all_reduce(comm, n);                 // n == comm.size()
///
/// Without an algorithm, `gcl::by_size` picks one per call from the size (algorithm/by_size.hpp).
template <class Transport, class R, class Op = sum, class Alg = by_size>
requires detail::writable_payload<R&&>
void all_reduce(communicator<Transport>& comm, R&& data, Op const& op = {}, Alg const& alg = {}) {
  using T = detail::payload_value_t<R>;
  static_assert(detail::check_op<Alg, Op, T>());
  static_assert(all_reduce_algorithm<Alg, communicator<Transport>, T, Op>,
                "gcl::all_reduce: the algorithm passed last does not implement all_reduce; "
                "doc/algorithms.md lists which algorithm implements which collective");
  std::span<T> d = detail::writable_span(std::forward<R>(data));
  auto scope = comm.begin_call(
      make_call_info<T>(call_kind::all_reduce, d.size(), -1, op_name<Op>(), Alg::name));
  if constexpr (all_reduce_algorithm<Alg, communicator<Transport>, T,
                                     Op>) {  // no second error after the static_assert
    alg.all_reduce(comm, d, op);
    detail::finish(op, d, comm.size());
  }
}

}  // namespace gcl
