#pragma once
/// \file
/// `gcl::gather`: every rank's data, concatenated in rank order, lands on the root.

#include <span>

#include "../algorithm/tree.hpp"
#include "../call_info.hpp"
#include "../communicator.hpp"
#include "../detail/collective_checks.hpp"
#include "../detail/payload.hpp"

namespace gcl {

/// An algorithm with a `gather(comm, std::span<T const>, std::span<T>, root)` member.
template <class Alg, class Comm, class T>
concept gather_algorithm = algorithm<Alg> &&
    requires(Alg const& a, Comm& c, std::span<T const> in, std::span<T> out, int root) {
  a.gather(c, in, out, root);
};

/// On `root`, block r of `out` (`in.size()` elements at `r * in.size()`) becomes rank r's
/// `in`. `in` has the same size on every rank. `out` is significant on the root only, where
/// `out.size() == size * in.size()`; other ranks may pass an empty range (it is not touched).
///
///     std::vector<int> all(comm.rank() == 0 ? comm.size() : 0);
///     gcl::gather(comm, comm.rank(), all, /*root=*/0);  // gcl::tree{} by default
template <class Transport, class In, class Out, class Alg = tree>
requires detail::readable_payload<In> && detail::writable_payload<Out&&>
void gather(communicator<Transport>& comm, In const& in, Out&& out, int root, Alg const& alg = {}) {
  using T = detail::payload_value_t<In>;
  static_assert(std::is_same_v<T, detail::payload_value_t<Out>>,
                "gcl::gather: in and out must have the same element type");
  static_assert(gather_algorithm<Alg, communicator<Transport>, T>,
                "gcl::gather: the algorithm passed last does not implement gather; "
                "doc/algorithms.md lists which algorithm implements which collective");
  detail::check_root(comm.rank(), comm.size(), root, "gather");
  std::span<T const> i = detail::readable_span(in);
  std::span<T> o = detail::writable_span(std::forward<Out>(out));
  if (comm.rank() == root)
    detail::check_size(comm.rank(), "gather", "out on the root", o.size(),
                       i.size() * static_cast<std::size_t>(comm.size()), [&] {
                         return "world size " + std::to_string(comm.size()) + " x in.size() " +
                                std::to_string(i.size());
                       });
  auto scope = comm.begin_call(make_call_info<T>(call_kind::gather, i.size(), root, "", Alg::name));
  if constexpr (gather_algorithm<Alg, communicator<Transport>,
                                 T>)  // no second error after the static_assert
    alg.gather(comm, i, o, root);
}

}  // namespace gcl
