#pragma once
/// \file
/// `gcl::reduce`: the combination of every rank's data lands on one rank, the root.

#include <algorithm>
#include <span>
#include <type_traits>

#include "../algorithm/tree.hpp"
#include "../call_info.hpp"
#include "../communicator.hpp"
#include "../detail/collective_checks.hpp"
#include "../detail/payload.hpp"
#include "../op.hpp"

namespace gcl {

/// An algorithm with a `reduce(comm, std::span<T>, root, op)` member.
template <class Alg, class Comm, class T, class Op>
concept reduce_algorithm = algorithm<Alg> &&
    requires(Alg const& a, Comm& c, std::span<T> d, int root, Op const& op) {
  a.reduce(c, d, root, op);
};

/// Replaces `data` on `root` by `op` over all ranks' `data`, combined in rank order
/// (`op(x0, op(x1, ...))` up to associativity). Other ranks' `data` is left unchanged.
/// Every rank passes the same number of elements; `root` must be in [0, size).
///
///     std::vector<long> v = partial_counts();
///     gcl::reduce(comm, v, /*root=*/0, gcl::sum{}, gcl::tree{});  // totals on rank 0
template <class Transport, class R, class Op = sum, class Alg = tree>
requires detail::writable_payload<R&&>
void reduce(communicator<Transport>& comm, R&& data, int root, Op const& op = {},
            Alg const& alg = {}) {
  using T = detail::payload_value_t<R>;
  static_assert(detail::check_op<Alg, Op, T>());
  static_assert(reduce_algorithm<Alg, communicator<Transport>, T, Op>,
                "gcl::reduce: the algorithm passed last does not implement reduce; "
                "doc/algorithms.md lists which algorithm implements which collective");
  detail::check_root(comm.rank(), comm.size(), root, "reduce");
  std::span<T> d = detail::writable_span(std::forward<R>(data));
  auto scope = comm.begin_call(
      make_call_info<T>(call_kind::reduce, d.size(), root, op_name<Op>(), Alg::name));
  if constexpr (reduce_algorithm<Alg, communicator<Transport>, T,
                                 Op>) {  // no second error after the static_assert
    alg.reduce(comm, d, root, op);
    if (comm.rank() == root) detail::finish(op, d, comm.size());
  }
}

/// Out of place (MPI_Reduce with a send and a receive buffer): `out` on `root` becomes `op`
/// over all ranks' `in`, in rank order, and `in` is left unchanged on every rank. `out` is
/// significant on the root only, where it is a range of `in.size()` elements (not overlapping
/// `in` unless it is the same range); other ranks may pass an empty range (it is not touched).
/// The root copies `in` into `out` and reduces that in place; the other ranks hand their `in`
/// to the algorithm, whose `reduce` leaves a non-root's data unchanged (as every `reduce`
/// member must). The same call and messages as the in-place form, so ranks may mix the two.
///
///     std::vector<long> const counts = partial_counts();
///     std::vector<long> totals(comm.rank() == 0 ? counts.size() : 0);
///     gcl::reduce(comm, counts, totals, /*root=*/0);
template <class Transport, class In, class Out, class Op = sum, class Alg = tree>
requires detail::readable_payload<In> && sendable_range<std::remove_cvref_t<Out>> &&
    detail::writable_payload<Out&&>
void reduce(communicator<Transport>& comm, In const& in, Out&& out, int root, Op const& op = {},
            Alg const& alg = {}) {
  using T = detail::payload_value_t<In>;
  static_assert(std::is_same_v<T, detail::payload_value_t<Out>>,
                "gcl::reduce: in and out must have the same element type");
  detail::check_root(comm.rank(), comm.size(), root, "reduce");
  std::span<T const> i = detail::readable_span(in);
  std::span<T> o = detail::writable_span(std::forward<Out>(out));
  if (comm.rank() == root) {
    detail::check_size(comm.rank(), "reduce", "out on the root", o.size(), i.size(),
                       [] { return "out.size() == in.size()"; });
    if (i.data() != o.data()) std::copy(i.begin(), i.end(), o.begin());
    return reduce(comm, o, root, op, alg);
  }
  reduce(comm, std::span<T>(const_cast<T*>(i.data()), i.size()), root, op, alg);  // only read
}

}  // namespace gcl
