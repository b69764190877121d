#pragma once
/// \file
/// `gcl::exscan`: rank r ends with the combination of ranks 0..r-1's data (an exclusive
/// prefix).

#include <span>

#include "../algorithm/recursive_doubling.hpp"
#include "../call_info.hpp"
#include "../communicator.hpp"
#include "../detail/collective_checks.hpp"
#include "../detail/payload.hpp"
#include "../op.hpp"

namespace gcl {

/// An algorithm with an `exscan(comm, std::span<T>, op)` member.
template <class Alg, class Comm, class T, class Op>
concept exscan_algorithm = algorithm<Alg> &&
    requires(Alg const& a, Comm& c, std::span<T> d, Op const& op) {
  a.exscan(c, d, op);
};

/// Replaces `data` on rank r > 0 by `op` over ranks 0..r-1's `data` (element-wise), combined
/// in rank order: any associative operator, commutative or not (MPI_Exscan). Rank 0 has no
/// rank before it, and its `data` is left unchanged (MPI leaves it undefined; gcl needs no
/// identity element of `op`): set it yourself, to 0 for a sum. `data` is a contiguous range or
/// a single value, of the same size on every rank.
///
///     std::size_t mine = items_here(), first = mine;
///     gcl::exscan(comm, first);            // items on ranks 0..rank-1
///     if (comm.rank() == 0) first = 0;     // where this rank's items start
template <class Transport, class R, class Op = sum, class Alg = recursive_doubling>
requires detail::writable_payload<R&&>
void exscan(communicator<Transport>& comm, R&& data, Op const& op = {}, Alg const& alg = {}) {
  using T = detail::payload_value_t<R>;
  static_assert(detail::check_op<Alg, Op, T>());
  static_assert(exscan_algorithm<Alg, communicator<Transport>, T, Op>,
                "gcl::exscan: the algorithm passed last does not implement exscan; "
                "doc/algorithms.md lists which algorithm implements which collective");
  std::span<T> d = detail::writable_span(std::forward<R>(data));
  auto scope =
      comm.begin_call(make_call_info<T>(call_kind::exscan, d.size(), -1, op_name<Op>(), Alg::name));
  if constexpr (exscan_algorithm<Alg, communicator<Transport>, T,
                                 Op>) {  // no second error after the static_assert
    alg.exscan(comm, d, op);
    if (comm.rank() > 0) detail::finish(op, d, comm.rank());
  }
}

}  // namespace gcl
