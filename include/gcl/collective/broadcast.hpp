#pragma once
/// \file
/// `gcl::broadcast`: the root's data is copied to every rank.

#include <algorithm>
#include <span>
#include <type_traits>

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

/// Out of place: `out` on every rank becomes the root's `in`. `in` is significant on the root
/// only, where it has `out.size()` elements (and does not overlap `out` unless it is the same
/// range); other ranks may pass an empty range. `out` has the same size on every rank. The
/// root copies `in` into `out` and broadcasts that: the same call and messages as the in-place
/// form, so ranks may mix the two.
///
///     std::vector<float> const& master = model();  // significant on rank 0
///     std::vector<float> params(n);
///     gcl::broadcast(comm, master, params, /*root=*/0);
template <class Transport, class In, class Out, class Alg = tree>
requires detail::readable_payload<In> && sendable_range<std::remove_cvref_t<Out>> &&
    detail::writable_payload<Out&&>
void broadcast(communicator<Transport>& comm, In const& in, Out&& out, int root,
               Alg const& alg = {}) {
  using T = detail::payload_value_t<In>;
  static_assert(std::is_same_v<T, detail::payload_value_t<Out>>,
                "gcl::broadcast: in and out must have the same element type");
  detail::check_root(comm.rank(), comm.size(), root, "broadcast");
  std::span<T const> i = detail::readable_span(in);
  std::span<T> o = detail::writable_span(std::forward<Out>(out));
  if (comm.rank() == root) {
    detail::check_size(comm.rank(), "broadcast", "in on the root", i.size(), o.size(),
                       [] { return "in.size() == out.size()"; });
    if (i.data() != o.data()) std::copy(i.begin(), i.end(), o.begin());
  }
  broadcast(comm, o, root, alg);
}

}  // namespace gcl
