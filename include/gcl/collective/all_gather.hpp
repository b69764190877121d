#pragma once
/// \file
/// `gcl::all_gather`: every rank ends with every rank's data, concatenated in rank order.

#include <span>

#include "../algorithm/ring.hpp"
#include "../call_info.hpp"
#include "../communicator.hpp"
#include "../detail/collective_checks.hpp"
#include "../detail/payload.hpp"

namespace gcl {

/// An algorithm with an `all_gather(comm, std::span<T const>, std::span<T>)` member.
template <class Alg, class Comm, class T>
concept all_gather_algorithm = algorithm<Alg> &&
    requires(Alg const& a, Comm& c, std::span<T const> in, std::span<T> out) {
  a.all_gather(c, in, out);
};

/// Block r of `out` (`in.size()` elements at `r * in.size()`) becomes rank r's `in`, on every
/// rank. `in` has the same size on every rank; `out.size() == size * in.size()`. `in` may be
/// block `rank` of `out` itself (in place); otherwise they must not overlap.
///
///     int mine = comm.rank();
///     std::vector<int> all(comm.size());
///     gcl::all_gather(comm, mine, all);  // all == {0, 1, ..., P-1}; gcl::ring{} by default
template <class Transport, class In, class Out, class Alg = ring>
requires detail::readable_payload<In> && detail::writable_payload<Out&&>
void all_gather(communicator<Transport>& comm, In const& in, Out&& out, Alg const& alg = {}) {
  using T = detail::payload_value_t<In>;
  static_assert(std::is_same_v<T, detail::payload_value_t<Out>>,
                "gcl::all_gather: in and out must have the same element type");
  static_assert(all_gather_algorithm<Alg, communicator<Transport>, T>,
                "gcl::all_gather: the algorithm passed last does not implement all_gather; "
                "doc/algorithms.md lists which algorithm implements which collective");
  std::span<T const> i = detail::readable_span(in);
  std::span<T> o = detail::writable_span(std::forward<Out>(out));
  detail::check_size(comm.rank(), "all_gather", "out", o.size(),
                     i.size() * static_cast<std::size_t>(comm.size()), [&] {
                       return "world size " + std::to_string(comm.size()) + " x in.size() " +
                              std::to_string(i.size());
                     });
  auto scope =
      comm.begin_call(make_call_info<T>(call_kind::all_gather, i.size(), -1, "", Alg::name));
  if constexpr (all_gather_algorithm<Alg, communicator<Transport>,
                                     T>)  // no second error after the static_assert
    alg.all_gather(comm, i, o);
}

}  // namespace gcl
