#pragma once
/// \file
/// `gcl::broadcast`: the root's data is copied to every rank.

#include <span>

#include "../algorithm/tree.hpp"
#include "../call_info.hpp"
#include "../communicator.hpp"
#include "../detail/collective_checks.hpp"
#include "../detail/payload.hpp"

namespace gcl {

/// An algorithm with a `broadcast(comm, std::span<T>, root)` member.
template <class Alg, class Comm, class T>
concept broadcast_algorithm = algorithm<Alg> &&
    requires(Alg const& a, Comm& c, std::span<T> d, int root) {
  a.broadcast(c, d, root);
};

/// Copies `data` of `root` into `data` of every other rank. Every rank passes the same number
/// of elements; `root` must be in [0, size).
///
///     std::vector<float> params(n);
///     if (comm.rank() == 0) init(params);
///     gcl::broadcast(comm, params, /*root=*/0);  // gcl::tree{} by default
template <class Transport, class R, class Alg = tree>
requires detail::writable_payload<R&&>
void broadcast(communicator<Transport>& comm, R&& data, int root, Alg const& alg = {}) {
  using T = detail::payload_value_t<R>;
  static_assert(broadcast_algorithm<Alg, communicator<Transport>, T>,
                "gcl::broadcast: the algorithm passed last does not implement broadcast; "
                "doc/algorithms.md lists which algorithm implements which collective");
  detail::check_root(comm.rank(), comm.size(), root, "broadcast");
  std::span<T> d = detail::writable_span(std::forward<R>(data));
  auto scope =
      comm.begin_call(make_call_info<T>(call_kind::broadcast, d.size(), root, "", Alg::name));
  if constexpr (broadcast_algorithm<Alg, communicator<Transport>,
                                    T>)  // no second error after the static_assert
    alg.broadcast(comm, d, root);
}

}  // namespace gcl
