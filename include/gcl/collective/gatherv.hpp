#pragma once
/// \file
/// `gcl::gatherv`: every rank's data, of a size of its own, concatenated in rank order on the
/// root.

#include <span>

#include "../algorithm/direct.hpp"
#include "../call_info.hpp"
#include "../communicator.hpp"
#include "../detail/collective_checks.hpp"
#include "../detail/payload.hpp"

namespace gcl {

/// An algorithm with a `gatherv(comm, std::span<T const>, std::span<T>,
/// std::span<std::size_t const> counts, root)` member.
template <class Alg, class Comm, class T>
concept gatherv_algorithm = algorithm<Alg> &&
    requires(Alg const& a, Comm& c, std::span<T const> in, std::span<T> out,
             std::span<std::size_t const> counts, int root) {
  a.gatherv(c, in, out, counts, root);
};

/// Like `gather`, with `counts[r]` elements from rank r (0 allowed): on `root`, rank r's `in`
/// lands at offset `counts[0] + ... + counts[r - 1]` of `out`. Every rank passes the same
/// `counts` (one entry per rank; ranks that pass different ones fail with `errc::mismatch`
/// naming both), `in.size() == counts[rank]`, and on the root `out.size()` is the sum of the
/// counts; other ranks may pass an empty `out` (it is not touched).
///
///     std::vector<std::size_t> counts{1, 0, 2};  // 3 ranks
///     std::vector<int> mine(counts[comm.rank()], comm.rank());
///     std::vector<int> all(comm.rank() == 0 ? 3 : 0);
///     gcl::gatherv(comm, mine, all, counts, /*root=*/0);  // all == {0, 2, 2}; gcl::direct{}
template <class Transport, class In, class Out, class Alg = direct>
requires detail::readable_payload<In> && detail::writable_payload<Out&&>
void gatherv(communicator<Transport>& comm, In const& in, Out&& out,
             std::span<std::size_t const> counts, int root, Alg const& alg = {}) {
  using T = detail::payload_value_t<In>;
  static_assert(std::is_same_v<T, detail::payload_value_t<Out>>,
                "gcl::gatherv: in and out must have the same element type");
  static_assert(gatherv_algorithm<Alg, communicator<Transport>, T>,
                "gcl::gatherv: the algorithm passed last does not implement gatherv; "
                "doc/algorithms.md lists which algorithm implements which collective");
  int const me = comm.rank();
  detail::check_root(me, comm.size(), root, "gatherv");
  detail::check_counts(me, comm.size(), "gatherv", "counts", counts);
  std::span<T const> i = detail::readable_span(in);
  std::span<T> o = detail::writable_span(std::forward<Out>(out));
  detail::check_size(me, "gatherv", "in", i.size(), counts[static_cast<std::size_t>(me)],
                     [&] { return "counts[" + std::to_string(me) + "]"; });
  if (me == root)
    detail::check_size(me, "gatherv", "out on the root", o.size(), detail::sum_of(counts),
                       [&] { return "the sum of counts"; });
  auto scope = comm.begin_call(
      make_call_info<T>(call_kind::gatherv, counts_digest(counts), root, "", Alg::name));
  if constexpr (gatherv_algorithm<Alg, communicator<Transport>,
                                  T>)  // no second error after the static_assert
    alg.gatherv(comm, i, o, counts, root);
}

}  // namespace gcl
