#pragma once
/// \file
/// `gcl::direct`: every rank talks to every other rank directly. all_to_all (pairwise
/// exchange) and all_reduce (all-to-all data parallelism: every rank sends its whole vector to
/// every other rank and reduces locally, in rank order).

#include <algorithm>
#include <cstddef>
#include <span>
#include <string_view>

#include "../communicator.hpp"
#include "../cost_model.hpp"
#include "../detail/chunk.hpp"
#include "../detail/reduce_kernel.hpp"

namespace gcl {

/// Direct exchange. all_reduce: every rank sends its vector to the `P - 1` others, then
/// combines all P vectors itself in rank order, `((x_0 op x_1) op x_2) ...`: `P (P - 1)`
/// messages of p elements in one round, exact for non-commutative operators and bit-identical
/// on every rank. all_to_all: `P - 1` steps; at step k rank n sends block `(n + k) mod P` to
/// rank `(n + k) mod P` and receives block `(n - k) mod P` from that rank. `P (P - 1)` messages
/// of `in.size() / P` elements.
///
///     gcl::all_to_all(comm, in, out, gcl::direct{});
struct direct {
  static constexpr std::string_view name = "direct";
  static constexpr bool needs_commutative = false;

  /// All-reduce in place (see the struct comment). Messages are sent even when empty, so the
  /// count is `P (P - 1)` whatever the count of elements.
  template <class Comm, class T, class Op>
  void all_reduce(Comm& comm, std::span<T> data, Op const& op) const {
    int const p = comm.size(), n = comm.rank();
    if (p == 1) return;
    // Sends are eager: post all of them first, then receive in rank order. Starting at n + 1
    // spreads the load, so rank 0 is not everyone's first destination.
    for (int k = 1; k < p; ++k)
      comm.send(detail::mod(n + k, p), std::span<T const>(data), detail::collective_tag);
    auto acc = comm.template scratch<T>(data.size(), 0);
    auto tmp = comm.template scratch<T>(data.size(), 1);
    if (n == 0)
      std::ranges::copy(data, acc.begin());
    else
      comm.recv(0, acc, detail::collective_tag);
    for (int r = 1; r < p; ++r) {
      if (r == n) {
        detail::reduce_into(acc.data(), data.data(), data.size(), op);
      } else {
        comm.recv(r, tmp, detail::collective_tag);
        detail::reduce_into(acc.data(), tmp.data(), data.size(), op);
      }
    }
    std::ranges::copy(acc, data.begin());
  }

  /// The all_reduce critical path: one round in which a rank sends and receives `P - 1`
  /// messages of p elements one after another and reduces `P - 1` vectors.
  template <class F>
  static void schedule(int p, std::size_t count, std::size_t element_size, F&& step) {
    if (p <= 1) return;
    std::size_t const bytes = count * element_size, others = static_cast<std::size_t>(p - 1);
    step(cost_step{others, bytes, others * bytes, static_cast<std::size_t>(p)});
  }

  /// Block r of every rank's `out` becomes rank r's `in`: every rank sends `in` to the P - 1
  /// others and receives theirs. `P (P - 1)` messages of `in.size()` elements in one round
  /// (the ring needs P - 1 rounds): right for small blocks.
  template <class Comm, class T>
  void all_gather(Comm& comm, std::span<T const> in, std::span<T> out) const {
    int const p = comm.size(), n = comm.rank();
    std::size_t const b = in.size();
    auto block = [&](int r) { return out.subspan(static_cast<std::size_t>(r) * b, b); };
    for (int k = 1; k < p; ++k) comm.send(detail::mod(n + k, p), in, detail::collective_tag);
    if (in.data() != block(n).data()) std::ranges::copy(in, block(n).begin());
    for (int k = 1; k < p; ++k) {
      int const from = detail::mod(n - k, p);
      comm.recv(from, block(from), detail::collective_tag);
    }
  }

  /// `root` sends `data` to each other rank: `P - 1` messages of the payload in one round (the
  /// tree needs ceil(log2 P) rounds but sends from more ranks at once).
  template <class Comm, class T>
  void broadcast(Comm& comm, std::span<T> data, int root) const {
    int const p = comm.size(), n = comm.rank();
    if (n != root) return comm.recv(root, data, detail::collective_tag);
    for (int k = 1; k < p; ++k)
      comm.send(detail::mod(n + k, p), std::span<T const>(data), detail::collective_tag);
  }

  /// Every other rank sends `data` to `root`, which folds all P in rank order (exact for
  /// non-commutative operators). `P - 1` messages in one round; other ranks' `data` is left
  /// unchanged.
  template <class Comm, class T, class Op>
  void reduce(Comm& comm, std::span<T> data, int root, Op const& op) const {
    int const p = comm.size(), n = comm.rank();
    if (n != root) return comm.send(root, std::span<T const>(data), detail::collective_tag);
    if (p == 1) return;
    auto acc = comm.template scratch<T>(data.size(), 0);
    auto tmp = comm.template scratch<T>(data.size(), 1);
    if (root == 0)
      std::ranges::copy(data, acc.begin());
    else
      comm.recv(0, acc, detail::collective_tag);
    for (int r = 1; r < p; ++r) {
      if (r == root) {
        detail::reduce_into(acc.data(), data.data(), data.size(), op);
      } else {
        comm.recv(r, tmp, detail::collective_tag);
        detail::reduce_into(acc.data(), tmp.data(), data.size(), op);
      }
    }
    std::ranges::copy(acc, data.begin());
  }

  /// Block r of `in` goes to rank r, and block r of `out` comes from rank r.
  template <class Comm, class T>
  void all_to_all(Comm& comm, std::span<T const> in, std::span<T> out) const {
    int const p = comm.size(), n = comm.rank();
    std::size_t const b = in.size() / static_cast<std::size_t>(p);
    auto at = [b](auto s, int r) { return s.subspan(static_cast<std::size_t>(r) * b, b); };
    std::ranges::copy(at(in, n), at(out, n).begin());
    // Pairing `n + k` with `n - k` at step k keeps every rank sending and receiving once per
    // step, and sends are eager, so no ordering can deadlock.
    for (int k = 1; k < p; ++k) {
      int const to = detail::mod(n + k, p), from = detail::mod(n - k, p);
      comm.sendrecv(to, at(in, to), from, at(out, from), detail::collective_tag);
    }
  }
};

}  // namespace gcl
