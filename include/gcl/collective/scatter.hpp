#pragma once
/// \file
/// `gcl::scatter`: block r of the root's data lands on rank r.

#include <span>

#include "../algorithm/tree.hpp"
#include "../call_info.hpp"
#include "../communicator.hpp"
#include "../detail/collective_checks.hpp"
#include "../detail/payload.hpp"

namespace gcl {

/// An algorithm with a `scatter(comm, std::span<T const>, std::span<T>, root)` member.
template <class Alg, class Comm, class T>
concept scatter_algorithm = algorithm<Alg> &&
    requires(Alg const& a, Comm& c, std::span<T const> in, std::span<T> out, int root) {
  a.scatter(c, in, out, root);
};

/// `out` on rank r becomes block r of the root's `in` (`out.size()` elements at
/// `r * out.size()`). `out` has the same size on every rank. `in` is significant on the root
/// only, where `in.size() == size * out.size()`; other ranks may pass an empty range.
///
///     std::vector<int> all(comm.rank() == 0 ? 2 * comm.size() : 0), mine(2);
///     gcl::scatter(comm, all, mine, /*root=*/0);  // gcl::tree{} by default
template <class Transport, class In, class Out, class Alg = tree>
requires detail::readable_payload<In> && detail::writable_payload<Out&&>
void scatter(communicator<Transport>& comm, In const& in, Out&& out, int root,
             Alg const& alg = {}) {
  using T = detail::payload_value_t<Out>;
  static_assert(std::is_same_v<T, detail::payload_value_t<In>>,
                "gcl::scatter: in and out must have the same element type");
  static_assert(scatter_algorithm<Alg, communicator<Transport>, T>,
                "gcl::scatter: the algorithm passed last does not implement scatter; "
                "doc/algorithms.md lists which algorithm implements which collective");
  detail::check_root(comm.rank(), comm.size(), root, "scatter");
  std::span<T const> i = detail::readable_span(in);
  std::span<T> o = detail::writable_span(std::forward<Out>(out));
  if (comm.rank() == root)
    detail::check_size(comm.rank(), "scatter", "in on the root", i.size(),
                       o.size() * static_cast<std::size_t>(comm.size()), [&] {
                         return "world size " + std::to_string(comm.size()) + " x out.size() " +
                                std::to_string(o.size());
                       });
  auto scope =
      comm.begin_call(make_call_info<T>(call_kind::scatter, o.size(), root, "", Alg::name));
  if constexpr (scatter_algorithm<Alg, communicator<Transport>,
                                  T>)  // no second error after the static_assert
    alg.scatter(comm, i, o, root);
}

}  // namespace gcl
