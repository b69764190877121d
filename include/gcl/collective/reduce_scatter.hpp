#pragma once
/// \file
/// `gcl::reduce_scatter`: reduce every rank's data, and leave chunk r of the result on rank r.

#include <span>

#include "../algorithm/ring.hpp"
#include "../call_info.hpp"
#include "../communicator.hpp"
#include "../detail/chunk.hpp"
#include "../detail/collective_checks.hpp"
#include "../detail/payload.hpp"
#include "../op.hpp"

namespace gcl {

/// An algorithm with a `reduce_scatter(comm, std::span<T const>, std::span<T>, op)` member.
template <class Alg, class Comm, class T, class Op>
concept reduce_scatter_algorithm = algorithm<Alg> &&
    requires(Alg const& a, Comm& c, std::span<T const> in, std::span<T> out, Op const& op) {
  a.reduce_scatter(c, in, out, op);
};

/// The number of elements rank `rank` receives from `reduce_scatter` of `count` elements over
/// `size` ranks: `count / size`, plus one for the first `count % size` ranks.
///
///     std::vector<float> mine(gcl::reduce_scatter_size(in.size(), comm.rank(), comm.size()));
constexpr std::size_t reduce_scatter_size(std::size_t count, int rank, int size) noexcept {
  return detail::chunk_layout{count, size}.size(rank);
}

/// `out` on rank r becomes chunk r of `op` over all ranks' `in` (element-wise). `in` has the
/// same `count` elements on every rank and is left unchanged; the chunks are those of
/// `detail::chunk_layout`: `count / P` elements each, the first `count % P` one larger, so
/// `out.size()` must be `reduce_scatter_size(count, rank, P)` (possibly 0). `in` and `out`
/// must not overlap.
///
///     std::vector<int> in(12, 1), out(12 / comm.size());  // with 4 ranks: 3 each
///     gcl::reduce_scatter(comm, in, out, gcl::sum{}, gcl::ring{});  // out == {4, 4, 4}
template <class Transport, class In, class Out, class Op = sum, class Alg = ring>
requires detail::readable_payload<In> && detail::writable_payload<Out&&>
void reduce_scatter(communicator<Transport>& comm, In const& in, Out&& out, Op const& op = {},
                    Alg const& alg = {}) {
  using T = detail::payload_value_t<In>;
  static_assert(std::is_same_v<T, detail::payload_value_t<Out>>,
                "gcl::reduce_scatter: in and out must have the same element type");
  static_assert(detail::check_op<Alg, Op, T>());
  static_assert(reduce_scatter_algorithm<Alg, communicator<Transport>, T, Op>,
                "gcl::reduce_scatter: the algorithm passed last does not implement "
                "reduce_scatter; doc/algorithms.md lists which algorithm implements which "
                "collective");
  std::span<T const> i = detail::readable_span(in);
  std::span<T> o = detail::writable_span(std::forward<Out>(out));
  detail::check_size(comm.rank(), "reduce_scatter", "out", o.size(),
                     reduce_scatter_size(i.size(), comm.rank(), comm.size()), [&] {
                       return "this rank's chunk of in.size() = " + std::to_string(i.size()) +
                              " over " + std::to_string(comm.size()) + " ranks";
                     });
  auto scope = comm.begin_call(
      make_call_info<T>(call_kind::reduce_scatter, i.size(), -1, op_name<Op>(), Alg::name));
  if constexpr (reduce_scatter_algorithm<Alg, communicator<Transport>, T,
                                         Op>) {  // no second error after the static_assert
    alg.reduce_scatter(comm, i, o, op);
    detail::finish(op, o, comm.size());
  }
}

}  // namespace gcl
