#pragma once
/// \file
/// `gcl::scan`: rank r ends with the combination of ranks 0..r's data (an inclusive prefix).

#include <span>

#include "../algorithm/recursive_doubling.hpp"
#include "../call_info.hpp"
#include "../communicator.hpp"
#include "../detail/collective_checks.hpp"
#include "../detail/payload.hpp"
#include "../op.hpp"

namespace gcl {

/// An algorithm with a `scan(comm, std::span<T>, op)` member.
template <class Alg, class Comm, class T, class Op>
concept scan_algorithm = algorithm<Alg> &&
    requires(Alg const& a, Comm& c, std::span<T> d, Op const& op) {
  a.scan(c, d, op);
};

/// Replaces `data` on rank r by `op` over ranks 0..r's `data` (element-wise), combined in rank
/// order, `op(op(x0, x1), ... xr)`: any associative operator, commutative or not (MPI_Scan).
/// `data` is a contiguous range or a single value, of the same size on every rank.
///
///     int n = items_here();
///     gcl::scan(comm, n);  // n == items on ranks 0..rank; gcl::recursive_doubling{} by default
template <class Transport, class R, class Op = sum, class Alg = recursive_doubling>
requires detail::writable_payload<R&&>
void scan(communicator<Transport>& comm, R&& data, Op const& op = {}, Alg const& alg = {}) {
  using T = detail::payload_value_t<R>;
  static_assert(detail::check_op<Alg, Op, T>());
  static_assert(scan_algorithm<Alg, communicator<Transport>, T, Op>,
                "gcl::scan: the algorithm passed last does not implement scan; "
                "doc/algorithms.md lists which algorithm implements which collective");
  std::span<T> d = detail::writable_span(std::forward<R>(data));
  auto scope =
      comm.begin_call(make_call_info<T>(call_kind::scan, d.size(), -1, op_name<Op>(), Alg::name));
  if constexpr (scan_algorithm<Alg, communicator<Transport>, T,
                               Op>) {  // no second error after the static_assert
    alg.scan(comm, d, op);
    detail::finish(op, d, comm.rank() + 1);
  }
}

}  // namespace gcl
