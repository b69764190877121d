#pragma once
/// \file
/// `gcl::reduce`: the combination of every rank's data lands on one rank, the root.

#include <span>

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

}  // namespace gcl
