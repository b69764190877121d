#pragma once
/// \file
/// `gcl::all_gatherv`: every rank ends with every rank's data, each of a size of its own,
/// concatenated in rank order.

#include <span>

#include "../algorithm/direct.hpp"
#include "../call_info.hpp"
#include "../communicator.hpp"
#include "../detail/collective_checks.hpp"
#include "../detail/payload.hpp"

namespace gcl {

/// An algorithm with an `all_gatherv(comm, std::span<T const>, std::span<T>,
/// std::span<std::size_t const> counts)` member.
template <class Alg, class Comm, class T>
concept all_gatherv_algorithm = algorithm<Alg> &&
    requires(Alg const& a, Comm& c, std::span<T const> in, std::span<T> out,
             std::span<std::size_t const> counts) {
  a.all_gatherv(c, in, out, counts);
};

/// Like `all_gather`, with `counts[r]` elements from rank r (0 allowed): on every rank, rank
/// r's `in` lands at offset `counts[0] + ... + counts[r - 1]` of `out`. Every rank passes the
/// same `counts` (one entry per rank; ranks that pass different ones fail with
/// `errc::mismatch` naming both), `in.size() == counts[rank]` and `out.size()` is the sum of
/// the counts. `in` and `out` must not overlap.
///
///     std::vector<std::size_t> counts{1, 0, 2};  // 3 ranks
///     std::vector<int> mine(counts[comm.rank()], comm.rank()), all(3);
///     gcl::all_gatherv(comm, mine, all, counts);  // all == {0, 2, 2}; gcl::direct{}
template <class Transport, class In, class Out, class Alg = direct>
requires detail::readable_payload<In> && detail::writable_payload<Out&&>
void all_gatherv(communicator<Transport>& comm, In const& in, Out&& out,
                 std::span<std::size_t const> counts, Alg const& alg = {}) {
  using T = detail::payload_value_t<In>;
  static_assert(std::is_same_v<T, detail::payload_value_t<Out>>,
                "gcl::all_gatherv: in and out must have the same element type");
  static_assert(all_gatherv_algorithm<Alg, communicator<Transport>, T>,
                "gcl::all_gatherv: the algorithm passed last does not implement all_gatherv; "
                "doc/algorithms.md lists which algorithm implements which collective");
  int const me = comm.rank();
  detail::check_counts(me, comm.size(), "all_gatherv", "counts", counts);
  std::span<T const> i = detail::readable_span(in);
  std::span<T> o = detail::writable_span(std::forward<Out>(out));
  detail::check_size(me, "all_gatherv", "in", i.size(), counts[static_cast<std::size_t>(me)],
                     [&] { return "counts[" + std::to_string(me) + "]"; });
  detail::check_size(me, "all_gatherv", "out", o.size(), detail::sum_of(counts),
                     [&] { return "the sum of counts"; });
  auto scope = comm.begin_call(
      make_call_info<T>(call_kind::all_gatherv, counts_digest(counts), -1, "", Alg::name));
  if constexpr (all_gatherv_algorithm<Alg, communicator<Transport>,
                                      T>)  // no second error after the static_assert
    alg.all_gatherv(comm, i, o, counts);
}

}  // namespace gcl
