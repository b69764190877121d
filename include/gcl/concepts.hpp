#pragma once
/// \file
/// The three policies as concepts: what a transport must move, what a reduction operator must
/// compute, and what an algorithm must provide. See doc/requirements/transport.md for the
/// semantic requirements a concept cannot check.

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <ranges>
#include <span>
#include <type_traits>
#include <utility>

#include "call_info.hpp"
#include "combiner.hpp"
#include "fork_bootstrap.hpp"

namespace gcl {

/// A rank's endpoint in a fixed group of `size()` ranks: moves bytes, knows nothing of element
/// types, operators or algorithms.
///
///  - `send(peer, tag, bytes)` is eager: it returns once `bytes` may be reused and never waits
///    for the matching `recv`, so "every rank sends, then every rank receives" cannot deadlock.
///  - `recv(peer, tag, bytes)` blocks until exactly `bytes.size()` bytes sent by `peer` with
///    `tag` have arrived; messages are FIFO per (source, destination, tag).
///  - every blocking call is bounded by a timeout; failures throw `gcl::transport_error`.
///
///     static_assert(gcl::transport<gcl::inproc_transport>);
template <class T>
concept transport = std::movable<T> &&
    requires(T& t, T const& ct, int peer, tag tg, std::span<std::byte const> out,
             std::span<std::byte> in) {
  { ct.rank() } -> std::same_as<int>;
  { ct.size() } -> std::same_as<int>;
  t.send(peer, tg, out);
  t.recv(peer, tg, in);
};

/// Optional: the transport is told which call its messages belong to and checks that sender and
/// receiver agree (`errc::mismatch`); and, since it keeps each communicator's history of calls,
/// when a communicator is gone from this rank (`end_context`: its context id may be taken again
/// by a new communicator, numbering its collectives from #1). Detected, not required.
template <class T>
concept call_aware_transport = transport<T> &&
    requires(T& t, call_info const& c, std::uint32_t context) {
  t.set_call(c);
  t.end_context(context);
};

/// Optional: the transport posts the receive before sending, so a message can land straight in
/// its destination (one copy instead of two). Detected, not required.
template <class T>
concept sendrecv_transport = transport<T> &&
    requires(T& t, int peer, tag tg, std::span<std::byte const> out, std::span<std::byte> in) {
  t.sendrecv(peer, tg, out, peer, tg, in);
};

/// Optional: `sendrecv`, but the message received is combined into `acc` as it arrives
/// (`acc[i] = op(acc[i], got[i])`, or with the operands swapped, as `combiner` says), with no
/// scratch buffer between the transport and the reduction. Returns false, having sent and
/// received nothing, where the transport cannot combine (a peer on the other side of a hybrid,
/// an element larger than its staging block): the caller then receives and reduces itself.
/// Counts, orders and checks its messages exactly as `sendrecv` does. Detected, not required.
template <class T>
concept combining_transport = sendrecv_transport<T> &&
    requires(T& t, int peer, tag tg, std::span<std::byte const> out, std::span<std::byte> acc,
             combiner const& c) {
  { t.sendrecv_reduce(peer, tg, out, peer, tg, acc, c) } -> std::same_as<bool>;
};

/// Optional: `t.recv_reduce(src, tg, acc, c)`, the receiving half of `sendrecv_reduce`, and
/// `t.reduce_and_forward(src, tg, acc, c, dst, tg)`: receives from `src`, combines as
/// `recv_reduce` would, and sends the result to `dst` (written straight into the outgoing
/// message as the incoming one arrives, where the transport can: shm), leaving `acc`'s contents
/// unspecified. Each returns false, having sent and received nothing, where the transport cannot;
/// the caller then receives, reduces and sends itself. Counts, orders and checks its messages as
/// a `recv` (and then a `send`). And `t.offers(dst, out)`: whether `send(dst, out)` would offer
/// `out` where it lies and return only once `dst` has read it (shm: a message from its pool),
/// where ranks that each send before they receive would wait on one another. Detected, not
/// required: ring's scatter-reduce takes them where its first send is not an offer.
template <class T>
concept forwarding_transport = transport<T> &&
    requires(T& t, int peer, tag tg, std::span<std::byte> acc, std::span<std::byte const> out,
             combiner const& c) {
  { t.recv_reduce(peer, tg, acc, c) } -> std::same_as<bool>;
  { t.reduce_and_forward(peer, tg, acc, c, peer, tg) } -> std::same_as<bool>;
  { std::as_const(t).offers(peer, out) } -> std::same_as<bool>;
};

/// Optional: `t.share_with_all(peers, tg, out, ins)` sends `out` to each rank of `peers` and
/// receives `ins[i]` from `peers[i]`, all in one round, staging `out` once where every peer
/// reads it (shm's share area) instead of once per peer. Returns false, having sent and received
/// nothing, where it cannot (a message larger than the area): the caller then sends otherwise.
/// Counts, orders and checks its messages as that many sends and receives. Detected, not
/// required.
template <class T>
concept sharing_transport = transport<T> &&
    requires(T& t, std::span<int const> peers, tag tg, std::span<std::byte const> out,
             std::span<std::span<std::byte> const> ins) {
  { t.share_with_all(peers, tg, out, ins) } -> std::same_as<bool>;
};

/// Optional: non-blocking receive returning a request with `wait()` and `test()`.
template <class T>
concept irecv_transport = transport<T> &&
    requires(T& t, int peer, tag tg, std::span<std::byte> in) {
  { t.irecv(peer, tg, in) } -> std::movable;
  t.irecv(peer, tg, in).wait();
  { t.irecv(peer, tg, in).test() } -> std::same_as<bool>;
};

/// Optional: `t.fork(b)` forms a second endpoint of the same kind among the ranks `b` names,
/// with channels of its own, which another thread may use while `t` is in use (and whose
/// messages never meet `t`'s). Non-blocking collectives run on one, from a progress thread
/// (nonblocking/progress_engine.hpp). Collective over the ranks of `b`; the fork shares `t`'s
/// failures (an abort of one stops the other).
template <class T>
concept forkable_transport = transport<T> && requires(T& t, fork_bootstrap& b) {
  { t.fork(b) } -> std::same_as<T>;
};

/// Something that can be a message payload by itself: a trivially copyable value.
///
///     comm.send(1, 42);  // an int is `sendable_value`
template <class T>
concept sendable_value = std::is_trivially_copyable_v<std::remove_cvref_t<T>> &&
    !std::ranges::range<std::remove_cvref_t<T>>;

/// A contiguous, sized range of trivially copyable elements: `std::vector<float>`,
/// `std::span<int>`, `std::array<double, 4>`, an `xt::xtensor`'s storage.
template <class R>
concept sendable_range = std::ranges::contiguous_range<R> && std::ranges::sized_range<R> &&
    std::is_trivially_copyable_v<std::ranges::range_value_t<R>>;

/// Anything `communicator::send` accepts.
template <class T>
concept sendable = sendable_value<T> || sendable_range<T>;

/// A reduction operator on `T`: `op(a, b)` returns the combination of `a` (the lower ranks'
/// partial result) and `b` (the higher ranks'). Associativity is the caller's contract; the
/// library never assumes commutativity unless the operator opts in (see `commutative_op`).
template <class Op, class T>
concept reduction_op = std::regular_invocable<Op const&, T const&, T const&> &&
    std::convertible_to<std::invoke_result_t<Op const&, T const&, T const&>, T>;

/// Whether `Op` declared itself commutative. Specialise to opt in a type you cannot edit:
///
///     template <> inline constexpr bool gcl::enable_commutative<my_add> = true;
template <class Op>
inline constexpr bool enable_commutative = requires {
  requires static_cast<bool>(std::remove_cvref_t<Op>::commutative);
};

/// A reduction operator that may be applied in any operand order (ring, halving-doubling, ...).
template <class Op, class T>
concept commutative_op = reduction_op<Op, T> && enable_commutative<std::remove_cvref_t<Op>>;

/// An algorithm policy: a value type naming itself and saying whether it reorders operands.
///
///     struct my_alg { static constexpr std::string_view name = "mine";
///                     static constexpr bool needs_commutative = false; ... };
template <class A>
concept algorithm = std::copyable<A> && requires {
  { A::name } -> std::convertible_to<std::string_view>;
  { A::needs_commutative } -> std::convertible_to<bool>;
};

}  // namespace gcl
