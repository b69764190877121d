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

#include <algorithm>
#include <span>
#include <type_traits>

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
requires detail::writable_payload<R&&> &&
    (!sendable_range<std::remove_cvref_t<Op>>)  // a range there is the out-of-place form's `out`
    void all_reduce(communicator<Transport>& comm, R&& data, Op const& op = {},
                    Alg const& alg = {}) {
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

/// Out of place (MPI_Allreduce with a send and a receive buffer): `out` on every rank becomes
/// `op` over all ranks' `in`, and `in` is left unchanged. `out` is a range of `in.size()`
/// elements; `in` and `out` must not overlap unless they are the same range (then this is the
/// in-place form). `in` is copied into `out`, which is then reduced in place: the same call and
/// messages as the in-place form, so ranks may mix the two.
///
///     std::vector<float> const local = gradient();
///     std::vector<float> total(local.size());
///     gcl::all_reduce(comm, local, total);  // local unchanged
template <class Transport, class In, class Out, class Op = sum, class Alg = by_size>
requires detail::readable_payload<In> && sendable_range<std::remove_cvref_t<Out>> &&
    detail::writable_payload<Out&&>
void all_reduce(communicator<Transport>& comm, In const& in, Out&& out, Op const& op = {},
                Alg const& alg = {}) {
  using T = detail::payload_value_t<In>;
  static_assert(std::is_same_v<T, detail::payload_value_t<Out>>,
                "gcl::all_reduce: in and out must have the same element type");
  std::span<T const> i = detail::readable_span(in);
  std::span<T> o = detail::writable_span(std::forward<Out>(out));
  detail::check_size(comm.rank(), "all_reduce", "out", o.size(), i.size(),
                     [] { return "out.size() == in.size()"; });
  if (i.data() != o.data()) std::copy(i.begin(), i.end(), o.begin());
  all_reduce(comm, o, op, alg);
}

}  // namespace gcl
