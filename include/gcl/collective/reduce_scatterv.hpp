#pragma once
/// \file
/// `gcl::reduce_scatterv`: reduce every rank's data, and leave block r of the result, of a size
/// of its own, on rank r.

#include <span>

#include "../algorithm/direct.hpp"
#include "../call_info.hpp"
#include "../communicator.hpp"
#include "../detail/collective_checks.hpp"
#include "../detail/payload.hpp"
#include "../op.hpp"

namespace gcl {

/// An algorithm with a `reduce_scatterv(comm, std::span<T const>, std::span<T>,
/// std::span<std::size_t const> counts, op)` member.
template <class Alg, class Comm, class T, class Op>
concept reduce_scatterv_algorithm = algorithm<Alg> &&
    requires(Alg const& a, Comm& c, std::span<T const> in, std::span<T> out,
             std::span<std::size_t const> counts, Op const& op) {
  a.reduce_scatterv(c, in, out, counts, op);
};

/// Like `reduce_scatter`, with `counts[r]` elements for rank r (0 allowed; MPI_Reduce_scatter):
/// `out` on rank r becomes `op` over all ranks' `in` (element-wise, in rank order) of the
/// `counts[r]` elements at offset `counts[0] + ... + counts[r - 1]`. Every rank passes the same
/// `counts` (one entry per rank; ranks that pass different ones fail with `errc::mismatch`
/// naming both), `in.size()` is the sum of the counts and `out.size() == counts[rank]`. `in`
/// is left unchanged; `in` and `out` must not overlap.
///
///     std::vector<std::size_t> counts{3, 0, 1};  // 3 ranks
///     std::vector<int> in(4, 1), out(counts[comm.rank()]);
///     gcl::reduce_scatterv(comm, in, out, counts);  // {3, 3, 3}, {}, {3}; gcl::direct{}
template <class Transport, class In, class Out, class Op = sum, class Alg = direct>
requires detail::readable_payload<In> && detail::writable_payload<Out&&>
void reduce_scatterv(communicator<Transport>& comm, In const& in, Out&& out,
                     std::span<std::size_t const> counts, Op const& op = {}, Alg const& alg = {}) {
  using T = detail::payload_value_t<In>;
  static_assert(std::is_same_v<T, detail::payload_value_t<Out>>,
                "gcl::reduce_scatterv: in and out must have the same element type");
  static_assert(detail::check_op<Alg, Op, T>());
  static_assert(reduce_scatterv_algorithm<Alg, communicator<Transport>, T, Op>,
                "gcl::reduce_scatterv: the algorithm passed last does not implement "
                "reduce_scatterv; doc/algorithms.md lists which algorithm implements which "
                "collective");
  int const me = comm.rank();
  detail::check_counts(me, comm.size(), "reduce_scatterv", "counts", counts);
  std::span<T const> i = detail::readable_span(in);
  std::span<T> o = detail::writable_span(std::forward<Out>(out));
  detail::check_size(me, "reduce_scatterv", "in", i.size(), detail::sum_of(counts),
                     [&] { return "the sum of counts"; });
  detail::check_size(me, "reduce_scatterv", "out", o.size(), counts[static_cast<std::size_t>(me)],
                     [&] { return "counts[" + std::to_string(me) + "]"; });
  auto scope = comm.begin_call(make_call_info<T>(call_kind::reduce_scatterv, counts_digest(counts),
                                                 -1, op_name<Op>(), Alg::name));
  if constexpr (reduce_scatterv_algorithm<Alg, communicator<Transport>, T,
                                          Op>) {  // no second error after the static_assert
    alg.reduce_scatterv(comm, i, o, counts, op);
    detail::finish(op, o, comm.size());
  }
}

}  // namespace gcl
