#pragma once
/// \file
/// `gcl::all_to_all`: block r of every rank's data goes to rank r (a transpose of blocks).

#include <span>

#include "../algorithm/direct.hpp"
#include "../call_info.hpp"
#include "../communicator.hpp"
#include "../detail/collective_checks.hpp"
#include "../detail/payload.hpp"

namespace gcl {

/// An algorithm with an `all_to_all(comm, std::span<T const>, std::span<T>)` member.
template <class Alg, class Comm, class T>
concept all_to_all_algorithm = algorithm<Alg> &&
    requires(Alg const& a, Comm& c, std::span<T const> in, std::span<T> out) {
  a.all_to_all(c, in, out);
};

/// `in` and `out` hold P blocks of `in.size() / P` elements; block s of `out` on rank r
/// becomes block r of `in` on rank s. `in.size()` is the same on every rank and a multiple of
/// P, and `out.size() == in.size()`. `in` and `out` must not overlap.
///
///     std::vector<int> in(comm.size(), comm.rank()), out(comm.size());
///     gcl::all_to_all(comm, in, out);  // out == {0, 1, ..., P-1}; gcl::direct{} by default
template <class Transport, class In, class Out, class Alg = direct>
requires detail::readable_payload<In> && detail::writable_payload<Out&&>
void all_to_all(communicator<Transport>& comm, In const& in, Out&& out, Alg const& alg = {}) {
  using T = detail::payload_value_t<In>;
  static_assert(std::is_same_v<T, detail::payload_value_t<Out>>,
                "gcl::all_to_all: in and out must have the same element type");
  static_assert(all_to_all_algorithm<Alg, communicator<Transport>, T>,
                "gcl::all_to_all: the algorithm passed last does not implement all_to_all; "
                "doc/algorithms.md lists which algorithm implements which collective");
  std::span<T const> i = detail::readable_span(in);
  std::span<T> o = detail::writable_span(std::forward<Out>(out));
  detail::check_divisible(comm.rank(), comm.size(), "all_to_all", "in", i.size());
  detail::check_size(comm.rank(), "all_to_all", "out", o.size(), i.size(),
                     [&] { return "out.size() == in.size()"; });
  auto scope =
      comm.begin_call(make_call_info<T>(call_kind::all_to_all, i.size(), -1, "", Alg::name));
  if constexpr (all_to_all_algorithm<Alg, communicator<Transport>,
                                     T>)  // no second error after the static_assert
    alg.all_to_all(comm, i, o);
}

}  // namespace gcl
