#pragma once
/// \file
/// `gcl::tree`: binomial tree algorithms. all_reduce runs two phases, reduce-to-root then
/// broadcast-from-root, each `ceil(log2 P)` steps. The tree combines in rank order, so it
/// accepts non-commutative (associative) operators.

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <span>
#include <string_view>

#include "../communicator.hpp"
#include "../cost_model.hpp"
#include "../detail/binomial.hpp"
#include "../detail/binomial_among.hpp"
#include "../detail/binomial_barrier.hpp"
#include "../detail/host_grid.hpp"
#include "../detail/reduce_kernel.hpp"

namespace gcl {

/// Binomial tree: reduce, broadcast, all_reduce (reduce to rank 0, then broadcast), gather,
/// scatter, barrier. `2 (P - 1)` messages of the full payload for all_reduce, in
/// `2 ceil(log2 P)` steps; the right choice for small messages (latency bound).
///
///     gcl::all_reduce(comm, v, gcl::sum{}, gcl::tree{});
///     gcl::reduce(comm, v, /*root=*/0, my_matrix_product, gcl::tree{});  // rank order kept
struct tree {
  static constexpr std::string_view name = "tree";
  /// The tree combines `op(lower ranks, higher ranks)`, so any associative op works.
  static constexpr bool needs_commutative = false;

  /// Reduce-to-rank-0 then broadcast-from-rank-0, in place on every rank.
  template <class Comm, class T, class Op>
  void all_reduce(Comm& comm, std::span<T> data, Op const& op) const {
    auto tmp = comm.template scratch<T>(data.size(), 0);
    reduce_phase(comm, data, data, tmp, 0, op);
    broadcast_phase(comm, data, 0);
  }

  /// The all_reduce critical path, one `cost_step` per round (see cost_model.hpp):
  /// ceil(log2 P) rounds of one full message up, each with its reduction, then the same down
  /// without; the root handles one message per level, one after the other. `concurrent` is the
  /// number of ranks that send at that level.
  template <class F>
  static void schedule(int p, std::size_t count, std::size_t element_size, F&& step) {
    std::size_t const bytes = count * element_size;
    int const levels = detail::binomial_steps(p);
    // Level i moves one message from every rel whose lowest set bit is 2^i.
    auto senders = [p](int i) {
      std::size_t n = 0;
      for (int rel = 1; rel < p; ++rel) n += detail::binomial_send_step(rel) == i + 1;
      return n;
    };
    for (int i = 0; i < levels; ++i) step(cost_step{1, bytes, bytes, senders(i)});
    for (int i = levels - 1; i >= 0; --i) step(cost_step{1, bytes, 0, senders(i)});
  }

  /// The combination of every rank's `data` lands in `data` on `root`; other ranks' `data` is
  /// left unchanged. A non-commutative op with `root != 0` is reduced to rank 0 in rank order
  /// and then sent to `root` (one extra message), so the result is always in rank order.
  template <class Comm, class T, class Op>
  void reduce(Comm& comm, std::span<T> data, int root, Op const& op) const {
    int const me = comm.rank();
    int const tree_root = enable_commutative<Op> ? root : 0;
    int const rel = detail::relative_rank(me, tree_root, comm.size());
    // Only the root may accumulate in the caller's buffer; inner nodes accumulate in scratch.
    std::span<T> acc = data;
    if (!(me == tree_root && me == root) &&
        (me == tree_root || detail::binomial_child_count(rel, comm.size()) > 0))
      acc = comm.template scratch<T>(data.size(), 1);
    auto tmp = comm.template scratch<T>(data.size(), 0);
    reduce_phase(comm, data, acc, tmp, tree_root, op);
    if (tree_root != root) {
      if (me == tree_root) comm.send(root, std::span<T const>(acc), detail::collective_tag);
      if (me == root) comm.recv(tree_root, data, detail::collective_tag);
    }
  }

  /// `data` of `root` is copied to every rank's `data`. Where the transport says which host
  /// each rank is on and the ranks run on several hosts (`hybrid_transport`), the same tree
  /// over the ranks laid out so that each host is a subtree (`tree_by_hosts`'s layout, rooted
  /// at `root`): the vector enters each host once, where the tree over the ranks in order
  /// crosses at every edge between ranks of different hosts (over two hosts of two,
  /// interleaved, twice into the other host). As many messages, in as many rounds or one more.
  template <class Comm, class T>
  void broadcast(Comm& comm, std::span<T> data, int root) const {
    if (auto const* g = detail::grid_if_over_hosts(comm)) {
      auto const& t = g->tree_from(root);
      return detail::binomial_broadcast_among(comm, t.at, t.index, data);
    }
    broadcast_phase(comm, data, root);
  }

  /// Every rank's `in` (n elements) lands in block `rank` of `out` (P n elements) on `root`.
  /// Each rank forwards its whole subtree's blocks, so a message carries 1 to P/2 blocks.
  template <class Comm, class T>
  void gather(Comm& comm, std::span<T const> in, std::span<T> out, int root) const {
    int const p = comm.size(), me = comm.rank();
    int const rel = detail::relative_rank(me, root, p);
    int const sub = detail::binomial_subtree_size(rel, p);
    std::size_t const block = in.size();
    auto blocks = [block](int k) { return static_cast<std::size_t>(k) * block; };  // k >= 0
    // The subtree's blocks in relative order; at root 0 that is `out` itself.
    std::span<T> buf = (me == root && root == 0) ? out : comm.template scratch<T>(blocks(sub), 0);
    std::copy(in.begin(), in.end(), buf.begin());
    int const last = detail::binomial_last_child_step(rel, p);
    for (int i = 1; i <= last; ++i) {
      int child = detail::binomial_child(rel, i, p);
      if (child < 0) continue;
      int csub = detail::binomial_subtree_size(child, p);
      comm.recv(detail::absolute_rank(child, root, p),
                buf.subspan(blocks(child - rel), blocks(csub)), detail::collective_tag);
    }
    if (rel != 0) {
      comm.send(detail::absolute_rank(detail::binomial_parent(rel), root, p),
                std::span<T const>(buf), detail::collective_tag);
    } else if (root != 0) {  // un-rotate: relative rank r is absolute rank (r + root) mod P
      std::size_t head = blocks(p - root);
      std::ranges::copy(buf.first(head), out.subspan(blocks(root)).begin());
      std::ranges::copy(buf.subspan(head), out.begin());
    }
  }

  /// Block `r` of `root`'s `in` (P n elements) lands in rank r's `out` (n elements).
  template <class Comm, class T>
  void scatter(Comm& comm, std::span<T const> in, std::span<T> out, int root) const {
    int const p = comm.size(), me = comm.rank();
    int const rel = detail::relative_rank(me, root, p);
    int const sub = detail::binomial_subtree_size(rel, p);
    std::size_t const block = out.size();
    auto blocks = [block](int k) { return static_cast<std::size_t>(k) * block; };  // k >= 0
    std::span<T const> buf;
    if (rel == 0) {
      if (root == 0) {
        buf = in;
      } else {  // rotate into relative order
        auto s = comm.template scratch<T>(blocks(p), 0);
        std::size_t head = blocks(p - root);
        std::ranges::copy(in.subspan(blocks(root)), s.begin());
        std::ranges::copy(in.first(blocks(root)), s.subspan(head).begin());
        buf = s;
      }
    } else {
      auto s = comm.template scratch<T>(blocks(sub), 0);
      comm.recv(detail::absolute_rank(detail::binomial_parent(rel), root, p), s,
                detail::collective_tag);
      buf = s;
    }
    int const last = detail::binomial_last_child_step(rel, p);
    for (int i = last; i >= 1; --i) {  // largest subtree first, as in broadcast
      int child = detail::binomial_child(rel, i, p);
      if (child < 0) continue;
      int csub = detail::binomial_subtree_size(child, p);
      comm.send(detail::absolute_rank(child, root, p),
                buf.subspan(blocks(child - rel), blocks(csub)), detail::collective_tag);
    }
    std::ranges::copy(buf.first(block), out.begin());
  }

  /// No rank leaves before every rank has entered: an empty reduce to rank 0, then an empty
  /// broadcast. `2 (P - 1)` messages of 0 bytes.
  template <class Comm>
  void barrier(Comm& comm) const {
    detail::binomial_barrier(comm);  // the same edges as reduce_phase and broadcast_phase
  }

 private:
  // Phase I. `acc` is `data` itself or a scratch buffer (so that `data` stays unchanged) and
  // accumulates `op(acc, child)`: the child's subtree is the contiguous range of relative ranks
  // just to the right of ours, so operands combine in relative-rank order. A leaf sends `data`
  // as it is. `tmp` receives one child's message.
  template <class Comm, class T, class Op>
  static void reduce_phase(Comm& comm, std::span<T> data, std::span<T> acc, std::span<T> tmp,
                           int root, Op const& op) {
    int const p = comm.size(), rel = detail::relative_rank(comm.rank(), root, p);
    int const last = detail::binomial_last_child_step(rel, p);
    bool received = false;
    for (int i = 1; i <= last; ++i) {
      int child = detail::binomial_child(rel, i, p);
      if (child < 0) continue;
      comm.recv(detail::absolute_rank(child, root, p), tmp, detail::collective_tag);
      if (!received && acc.data() != data.data())
        detail::reduce_to(acc.data(), data.data(), tmp.data(), acc.size(), op);
      else
        detail::reduce_into(acc.data(), tmp.data(), acc.size(), op);
      received = true;
    }
    if (!received && acc.data() != data.data())  // a root without children (P == 1)
      std::copy(data.begin(), data.end(), acc.begin());
    if (rel != 0) {
      std::span<T const> out = received ? acc : data;
      comm.send(detail::absolute_rank(detail::binomial_parent(rel), root, p), out,
                detail::collective_tag);
    }
  }

  // Phase II: receive from the parent, then send to the children, largest subtree first (the
  // reverse of phase I), so that the deepest path starts first.
  template <class Comm, class T>
  static void broadcast_phase(Comm& comm, std::span<T> data, int root) {
    int const p = comm.size(), rel = detail::relative_rank(comm.rank(), root, p);
    if (rel != 0)
      comm.recv(detail::absolute_rank(detail::binomial_parent(rel), root, p), data,
                detail::collective_tag);
    int const last = detail::binomial_last_child_step(rel, p);
    for (int i = last; i >= 1; --i) {
      int child = detail::binomial_child(rel, i, p);
      if (child >= 0)
        comm.send(detail::absolute_rank(child, root, p), std::span<T const>(data),
                  detail::collective_tag);
    }
  }
};

}  // namespace gcl
