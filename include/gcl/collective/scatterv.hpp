#pragma once
/// \file
/// `gcl::scatterv`: block r of the root's data, of a size of its own, lands on rank r.

#include <span>

#include "../algorithm/direct.hpp"
#include "../call_info.hpp"
#include "../communicator.hpp"
#include "../detail/collective_checks.hpp"
#include "../detail/payload.hpp"

namespace gcl {

/// An algorithm with a `scatterv(comm, std::span<T const>, std::span<T>,
/// std::span<std::size_t const> counts, root)` member.
template <class Alg, class Comm, class T>
concept scatterv_algorithm = algorithm<Alg> &&
    requires(Alg const& a, Comm& c, std::span<T const> in, std::span<T> out,
             std::span<std::size_t const> counts, int root) {
  a.scatterv(c, in, out, counts, root);
};

/// Like `scatter`, with `counts[r]` elements for rank r (0 allowed): `out` on rank r becomes
/// the `counts[r]` elements of the root's `in` at offset `counts[0] + ... + counts[r - 1]`.
/// Every rank passes the same `counts` (one entry per rank; ranks that pass different ones fail
/// with `errc::mismatch` naming both), `out.size() == counts[rank]`, and on the root
/// `in.size()` is the sum of the counts; other ranks may pass an empty `in`.
///
///     std::vector<std::size_t> counts{2, 0, 1};  // 3 ranks
///     std::vector<int> all{7, 8, 9}, mine(counts[comm.rank()]);
///     gcl::scatterv(comm, all, mine, counts, /*root=*/0);  // {7, 8}, {}, {9}; gcl::direct{}
template <class Transport, class In, class Out, class Alg = direct>
requires detail::readable_payload<In> && detail::writable_payload<Out&&>
void scatterv(communicator<Transport>& comm, In const& in, Out&& out,
              std::span<std::size_t const> counts, int root, Alg const& alg = {}) {
  using T = detail::payload_value_t<Out>;
  static_assert(std::is_same_v<T, detail::payload_value_t<In>>,
                "gcl::scatterv: in and out must have the same element type");
  static_assert(scatterv_algorithm<Alg, communicator<Transport>, T>,
                "gcl::scatterv: the algorithm passed last does not implement scatterv; "
                "doc/algorithms.md lists which algorithm implements which collective");
  int const me = comm.rank();
  detail::check_root(me, comm.size(), root, "scatterv");
  detail::check_counts(me, comm.size(), "scatterv", "counts", counts);
  std::span<T const> i = detail::readable_span(in);
  std::span<T> o = detail::writable_span(std::forward<Out>(out));
  detail::check_size(me, "scatterv", "out", o.size(), counts[static_cast<std::size_t>(me)],
                     [&] { return "counts[" + std::to_string(me) + "]"; });
  if (me == root)
    detail::check_size(me, "scatterv", "in on the root", i.size(), detail::sum_of(counts),
                       [&] { return "the sum of counts"; });
  auto scope = comm.begin_call(
      make_call_info<T>(call_kind::scatterv, counts_digest(counts), root, "", Alg::name));
  if constexpr (scatterv_algorithm<Alg, communicator<Transport>,
                                   T>)  // no second error after the static_assert
    alg.scatterv(comm, i, o, counts, root);
}

}  // namespace gcl
