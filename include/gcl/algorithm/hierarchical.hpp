#pragma once
/// \file
/// `gcl::hierarchical`: all_reduce by hosts, for jobs whose ranks share memory within a host
/// and a network between hosts (`hybrid_transport`). Three rings:
///
/// 1. inside each host, a ring reduce-scatter over its L ranks: local rank l ends with chunk l
///    of the vector (one of L) combined over the host;
/// 2. across hosts, a ring all_reduce of that chunk among the H ranks of local rank l (one on
///    each host): chunk l combined over every host;
/// 3. inside each host, a ring all-gather of the L chunks.
///
/// Each host sends the others 2 (H - 1) / H of the vector, the least an all_reduce can (ring's
/// one link out of a host carries 2 (P - 1) / P; with L = 2 and H = 2, N against 1.5 N), spread
/// over its L ranks, for any placement of the ranks on the hosts (in blocks or interleaved) and
/// any L and H. Each rank sends 2 (L - 1) + 2 (H - 1) messages, against ring's 2 (P - 1).
///
/// Where the hosts run different numbers of ranks, the grid is as wide as the smallest host (L
/// its ranks), and each larger host's other ranks fold into it first: rank l + kL of a host
/// hands its vector to rank l of that host (a binomial reduce among them) and gets the result
/// back at the end (a binomial broadcast), inside the host. Between hosts nothing changes: H
/// lanes of the same chunks. So 3 + 1 crosses between the hosts N each way, where ring over the
/// four crosses 1.5 N.
///
/// Needs the transport to say which host each rank is on (a member `host_of_ranks()`: one
/// number per rank, the same on every rank, as `hybrid_transport`'s); otherwise it runs `ring`.
/// Each chunk is combined on one rank and then copied, so every rank ends with bit-identical
/// results; a commutative operator is needed (the rings reorder operands).
///
/// `gcl::tree_by_hosts`, for the same jobs at sizes where messages cost more than bytes: the
/// binomial tree over the ranks laid out so that each host is a subtree of it, one edge into
/// each host and one out.

#include <algorithm>
#include <cstddef>
#include <span>
#include <string_view>
#include <vector>

#include "../communicator.hpp"
#include "../detail/binomial_among.hpp"
#include "../detail/chunk.hpp"
#include "../detail/host_grid.hpp"
#include "ring.hpp"
#include "tree.hpp"

namespace gcl {

namespace detail {

// Ring reduce-scatter of `data` (cut into ranks.size() chunks by `chunks`) among `ranks`, this
// rank at `at`: afterwards chunk `at` holds the combination of every rank's. Same schedule as
// ring's phase I, shifted so that each rank ends with its own chunk.
template <class Comm, class T, class Op>
void ring_reduce_scatter_among(Comm& comm, std::vector<int> const& ranks, int at, std::span<T> data,
                               chunk_layout const& chunks, Op const& op) {
  int const p = static_cast<int>(ranks.size());
  int const left = ranks[static_cast<std::size_t>(mod(at - 1, p))],
            right = ranks[static_cast<std::size_t>(mod(at + 1, p))];
  auto chunk = [&](int c) { return data.subspan(chunks.offset(c), chunks.size(c)); };
  constexpr int first = 1;  // step 1 sends chunk at + 1; after p - 1 steps chunk at is whole
  for (int i = 1; i <= p - 1; ++i)
    comm.sendrecv_reduce(left, std::span<T const>(chunk(ring_send_chunk(at, i, p, first))), right,
                         chunk(ring_recv_chunk(at, i, p, first)), op, received_operand::right,
                         collective_tag);
}

// Ring all-gather among `ranks`, this rank at `at` holding chunk `at` of `data`: afterwards every
// chunk is everyone's.
template <class Comm, class T>
void ring_all_gather_among(Comm& comm, std::vector<int> const& ranks, int at, std::span<T> data,
                           chunk_layout const& chunks) {
  int const p = static_cast<int>(ranks.size());
  int const left = ranks[static_cast<std::size_t>(mod(at - 1, p))],
            right = ranks[static_cast<std::size_t>(mod(at + 1, p))];
  auto chunk = [&](int c) { return data.subspan(chunks.offset(c), chunks.size(c)); };
  for (int i = 1; i <= p - 1; ++i)
    comm.sendrecv(left, std::span<T const>(chunk(ring_send_chunk(at, i, p, 0))), right,
                  chunk(ring_recv_chunk(at, i, p, 0)), collective_tag);
}

// An all_reduce by hosts: `ByHosts::all_reduce_over` on `comm`'s host grid, or `Fallback`'s
// all_reduce where the transport does not say which host each rank is on.
template <class ByHosts, class Fallback, class Comm, class T, class Op>
void all_reduce_by_hosts(Comm& comm, std::span<T> data, Op const& op) {
  if (comm.size() == 1) return;
  auto const& g = host_grid_of(comm);
  if (!g.valid()) return Fallback{}.all_reduce(comm, data, op);
  ByHosts::all_reduce_over(comm, data, op, g);
}

}  // namespace detail

/// Reduce-scatter inside each host, all_reduce across hosts, all-gather inside each host (see
/// the file comment):
///
///     gcl::all_reduce(comm, v, gcl::sum{}, gcl::hierarchical{});
struct hierarchical {
  static constexpr std::string_view name = "hierarchical";
  /// Its rings combine chunks in a different operand order on each rank.
  static constexpr bool needs_commutative = true;

  template <class Comm, class T, class Op>
  void all_reduce(Comm& comm, std::span<T> data, Op const& op) const {
    detail::all_reduce_by_hosts<hierarchical, ring>(comm, data, op);
  }

  /// The same over the grid `g` of this communicator's hosts (valid), which by_size has made.
  template <class Comm, class T, class Op>
  static void all_reduce_over(Comm& comm, std::span<T> data, Op const& op,
                              detail::host_grid const& g) {
    // A larger host's extra ranks first hand their vectors to the lanes' ranks, inside the host.
    bool const folds = g.fold.size() > 1;
    if (folds) detail::binomial_reduce_among(comm, g.fold, g.fold_index, data, op);
    if (g.fold_index == 0) {
      int const l = static_cast<int>(g.in_host.size()), h = static_cast<int>(g.across.size());
      detail::chunk_layout const in_host{data.size(), l};
      detail::ring_reduce_scatter_among(comm, g.in_host, g.local_index, data, in_host, op);
      auto mine = data.subspan(in_host.offset(g.local_index), in_host.size(g.local_index));
      detail::chunk_layout const across{mine.size(), h};
      detail::ring_reduce_scatter_among(comm, g.across, g.host_index, mine, across, op);
      detail::ring_all_gather_among(comm, g.across, g.host_index, mine, across);
      detail::ring_all_gather_among(comm, g.in_host, g.local_index, data, in_host);
    }
    if (folds) detail::binomial_broadcast_among(comm, g.fold, g.fold_index, data);
  }
};

/// The binomial tree by hosts, for the same jobs: a binomial reduce and broadcast over the ranks
/// laid out so that each host is a subtree (`detail::tree_positions_by_hosts`): each host
/// reduces inside itself, its first rank sends the host's sum to a rank of another host, and the
/// broadcast comes back the same way. The tree's 2 (P - 1) messages of the whole vector, of
/// which 2 (H - 1) cross between hosts, whatever the placement: `gcl::tree` over ranks in
/// power-of-two blocks sends the same, but over 3 + 3 in blocks it crosses four times, and
/// over interleaved ranks at every odd rank. Hosts may run different numbers of ranks; a small
/// host's sum goes to a rank of a larger host that has a round free, so the tree is no deeper
/// than the tree inside the largest host and then among the hosts, and mostly as deep as the
/// plain tree over all ranks (3 + 1, 1 + 3, 7 + 1: two or three rounds, not three or four).
/// Where the vector is small enough that messages cost more than bytes.
///
///     gcl::all_reduce(comm, v, gcl::sum{}, gcl::tree_by_hosts{});
///
/// Needs the transport to say which host each rank is on (else it runs `tree`) and a
/// commutative operator (hosts are combined in the order of the layout). The result is combined
/// on the first rank of the largest host and then copied: every rank ends bit-identical.
struct tree_by_hosts {
  static constexpr std::string_view name = "tree_by_hosts";
  static constexpr bool needs_commutative = true;

  template <class Comm, class T, class Op>
  void all_reduce(Comm& comm, std::span<T> data, Op const& op) const {
    detail::all_reduce_by_hosts<tree_by_hosts, tree>(comm, data, op);
  }

  /// The same over the grid `g` of this communicator's hosts (valid), which by_size has made.
  template <class Comm, class T, class Op>
  static void all_reduce_over(Comm& comm, std::span<T> data, Op const& op,
                              detail::host_grid const& g) {
    detail::binomial_reduce_among(comm, g.tree.at, g.tree.index, data, op);
    detail::binomial_broadcast_among(comm, g.tree.at, g.tree.index, data);
  }
};

}  // namespace gcl
