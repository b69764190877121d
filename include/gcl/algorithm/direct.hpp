#pragma once
/// \file
/// `gcl::direct`: every rank talks to every other rank directly. all_to_all (pairwise
/// exchange) and all_reduce (all-to-all data parallelism: every rank sends its whole vector to
/// every other rank and reduces locally, in rank order), and the variable-count collectives
/// (gatherv, scatterv, all_gatherv, all_to_allv, reduce_scatterv) and reduce_scatter, which
/// fold in rank order, so non-commutative operators work.

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
/// of `in.size() / P` elements. The variable-count collectives and reduce_scatter: each block
/// goes straight to its rank, in one round (all_to_allv: P - 1 steps), empty blocks included.
///
///     gcl::all_to_all(comm, in, out, gcl::direct{});
///     gcl::reduce_scatter(comm, in, out, matmul, gcl::direct{});  // rank order kept
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

  /// Chunk r (of `detail::chunk_layout`) of every rank's `in` goes to rank r, which folds the P
  /// chunks in rank order: `P (P - 1)` messages of one chunk in one round, exact for
  /// non-commutative operators (the ring reorders them).
  template <class Comm, class T, class Op>
  void reduce_scatter(Comm& comm, std::span<T const> in, std::span<T> out, Op const& op) const {
    int const p = comm.size();
    detail::chunk_layout const chunks{in.size(), p};
    auto counts = comm.template scratch<std::size_t>(static_cast<std::size_t>(p), 2);
    for (int r = 0; r < p; ++r) counts[static_cast<std::size_t>(r)] = chunks.size(r);
    reduce_scatterv(comm, in, out, std::span<std::size_t const>(counts), op);
  }

  /// Block r of every rank's `in` (`counts[r]` elements, blocks in rank order) goes to rank r,
  /// which folds the P blocks in rank order into `out`. Every rank sends its P - 1 other blocks
  /// (empty ones too): `P (P - 1)` messages in one round.
  template <class Comm, class T, class Op>
  void reduce_scatterv(Comm& comm, std::span<T const> in, std::span<T> out,
                       std::span<std::size_t const> counts, Op const& op) const {
    int const p = comm.size(), n = comm.rank();
    auto off = offsets(comm, counts);
    auto block = [&](int r) { return block_of(in, off, counts, r); };
    for (int k = 1; k < p; ++k) {
      int const to = detail::mod(n + k, p);
      comm.send(to, block(to), detail::collective_tag);
    }
    auto mine = block(n);
    auto tmp = comm.template scratch<T>(out.size(), 0);
    if (n == 0)
      std::ranges::copy(mine, out.begin());
    else
      comm.recv(0, out, detail::collective_tag);
    for (int r = 1; r < p; ++r) {
      if (r == n) {
        detail::reduce_into(out.data(), mine.data(), out.size(), op);
      } else {
        comm.recv(r, tmp, detail::collective_tag);
        detail::reduce_into(out.data(), tmp.data(), out.size(), op);
      }
    }
  }

  /// Every other rank sends its `in` (`counts[rank]` elements, possibly none) to `root`, which
  /// places rank r's at offset `counts[0] + ... + counts[r - 1]` of `out`: `P - 1` messages.
  template <class Comm, class T>
  void gatherv(Comm& comm, std::span<T const> in, std::span<T> out,
               std::span<std::size_t const> counts, int root) const {
    int const p = comm.size(), n = comm.rank();
    if (n != root) return comm.send(root, in, detail::collective_tag);
    auto off = offsets(comm, counts);
    for (int r = 0; r < p; ++r) {
      auto dst = block_of(out, off, counts, r);
      if (r == root)
        std::ranges::copy(in, dst.begin());
      else
        comm.recv(r, dst, detail::collective_tag);
    }
  }

  /// `root` sends block r of `in` (`counts[r]` elements at offset `counts[0] + ... +
  /// counts[r - 1]`, possibly none) to each other rank r: `P - 1` messages.
  template <class Comm, class T>
  void scatterv(Comm& comm, std::span<T const> in, std::span<T> out,
                std::span<std::size_t const> counts, int root) const {
    int const p = comm.size(), n = comm.rank();
    if (n != root) return comm.recv(root, out, detail::collective_tag);
    auto off = offsets(comm, counts);
    for (int k = 1; k < p; ++k) {
      int const to = detail::mod(n + k, p);
      comm.send(to, block_of(in, off, counts, to), detail::collective_tag);
    }
    std::ranges::copy(block_of(in, off, counts, n), out.begin());
  }

  /// Every rank sends its `in` (`counts[rank]` elements) to the P - 1 others, and places rank
  /// r's at offset `counts[0] + ... + counts[r - 1]` of `out`: `P (P - 1)` messages.
  template <class Comm, class T>
  void all_gatherv(Comm& comm, std::span<T const> in, std::span<T> out,
                   std::span<std::size_t const> counts) const {
    int const p = comm.size(), n = comm.rank();
    auto off = offsets(comm, counts);
    for (int k = 1; k < p; ++k) comm.send(detail::mod(n + k, p), in, detail::collective_tag);
    std::ranges::copy(in, block_of(out, off, counts, n).begin());
    for (int k = 1; k < p; ++k) {
      int const from = detail::mod(n - k, p);
      comm.recv(from, block_of(out, off, counts, from), detail::collective_tag);
    }
  }

  /// `send_counts[r]` elements of `in` (blocks in rank order) go to rank r, and
  /// `recv_counts[r]` elements of `out` come from rank r; the pairing of all_to_all, with
  /// every block sent even when empty: `P (P - 1)` messages. The ranks' counts agree when each
  /// message has the size its receiver expects, which the transport checks.
  template <class Comm, class T>
  void all_to_allv(Comm& comm, std::span<T const> in, std::span<std::size_t const> send_counts,
                   std::span<T> out, std::span<std::size_t const> recv_counts) const {
    int const p = comm.size(), n = comm.rank();
    auto in_off = offsets(comm, send_counts, 2);
    auto out_off = offsets(comm, recv_counts, 3);
    auto at_in = [&](int r) { return block_of(in, in_off, send_counts, r); };
    auto at_out = [&](int r) { return block_of(out, out_off, recv_counts, r); };
    std::ranges::copy(at_in(n), at_out(n).begin());
    for (int k = 1; k < p; ++k) {
      int const to = detail::mod(n + k, p), from = detail::mod(n - k, p);
      comm.sendrecv(to, at_in(to), from, at_out(from), detail::collective_tag);
    }
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

 private:
  // The offset of each block of `counts` (and the total at index P), in scratch slot `slot`.
  template <class Comm>
  static std::span<std::size_t> offsets(Comm& comm, std::span<std::size_t const> counts,
                                        int slot = 3) {
    auto off = comm.template scratch<std::size_t>(counts.size() + 1, slot);
    std::size_t at = 0;
    for (std::size_t r = 0; r < counts.size(); ++r) {
      off[r] = at;
      at += counts[r];
    }
    off[counts.size()] = at;
    return off;
  }

  // Block r of `s`: `counts[r]` elements at `off[r]` (of `offsets`).
  template <class S>
  static S block_of(S s, std::span<std::size_t const> off, std::span<std::size_t const> counts,
                    int r) {
    auto const i = static_cast<std::size_t>(r);
    return s.subspan(off[i], counts[i]);
  }
};

}  // namespace gcl
