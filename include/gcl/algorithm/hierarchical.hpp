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
#include <bit>
#include <cstddef>
#include <map>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "../communicator.hpp"
#include "../detail/binomial.hpp"
#include "../detail/chunk.hpp"
#include "ring.hpp"
#include "tree.hpp"

namespace gcl {

namespace detail {

// The host number of each rank of `comm` (its transport's `host_of_ranks()`, looked for through
// decorators such as `counting`, mapped through the communicator's ranks), or empty where the
// transport does not say.
template <class Transport>
std::vector<int> const* host_numbers_of(Transport const& t) {
  if constexpr (requires {
                  { t.host_of_ranks() } -> std::convertible_to<std::vector<int> const&>;
                })
    return &t.host_of_ranks();
  else if constexpr (requires { t.inner(); })
    return host_numbers_of(t.inner());
  else
    return nullptr;
}

template <class Comm>
std::vector<int> hosts_of_comm(Comm& comm) {
  std::vector<int> out;
  if constexpr (requires { comm.transport(); }) {
    auto const* all = host_numbers_of(comm.transport());
    if (all == nullptr) return out;
    for (int r = 0; r < comm.size(); ++r)
      out.push_back((*all)[static_cast<std::size_t>(comm.transport_rank(r))]);
  }
  return out;
}

// The positions of a binomial tree over the ranks of several hosts (`members`: each host's ranks)
// that crosses between hosts once into each and once out: the rank at each position, -1 at a
// position left empty. Each host, the largest first (of equal ones, the first listed), takes the
// lowest free block of positions of its size rounded up to a power of two and aligned to it,
// and its ranks fill the start of it. A block aligned so is a subtree: the host reduces inside
// itself before its first position sends out, to a position of another host. The end of a
// block that its host leaves empty is free for smaller hosts, whose blocks are subtrees of it:
// over 3 + 1 the host of one rank takes position 3, the child that rank 2 of the host of three
// has no rank for, and the tree is two rounds deep (the plain tree), where a tree inside each
// host and then among their first ranks takes three. Never deeper than that, and a position's
// parent (it with its lowest set bit cleared) is never empty, so the tree need only skip empty
// children: checked for every split of up to 24 ranks into hosts
// (test/algorithm/hierarchical.cpp).
inline std::vector<int> tree_positions_by_hosts(std::vector<std::vector<int>> const& members) {
  std::vector<std::size_t> order(members.size());
  for (std::size_t h = 0; h < order.size(); ++h) order[h] = h;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return members[a].size() > members[b].size();
  });
  std::vector<int> at;
  for (std::size_t const h : order) {
    auto const n = members[h].size(), block = std::bit_ceil(n);
    auto const free = [&](std::size_t start) {
      for (std::size_t i = start; i < std::min(start + block, at.size()); ++i)
        if (at[i] >= 0) return false;
      return true;
    };
    std::size_t start = 0;
    while (!free(start)) start += block;
    if (at.size() < start + n) at.resize(start + n, -1);
    std::copy(members[h].begin(), members[h].end(),
              at.begin() + static_cast<std::ptrdiff_t>(start));
  }
  return at;
}

// This rank's place among the hosts. `local`: the ranks of its host in rank order, this rank at
// `local_index`. `leaders`: each host's first rank, the hosts in the order of their first ranks,
// this rank's host at `host_index`. And the grid hierarchical runs on, of L lanes, L the ranks
// of the smallest host. A rank whose local index is below L is in the lane of that number:
// `in_host`, the first L ranks of its host, and `across`, its lane's rank on every host. A rank
// of a larger host beyond them folds into the lane of its local index mod L; `fold` lists that
// lane's rank on this host first, then the ranks folded into it, this rank at `fold_index` (one
// rank, this one, where nothing folds). `tree`: the tree by hosts' positions
// (`tree_positions_by_hosts`), this rank at `tree_index`. Empty (`valid()` false) where the
// transport does not say which host each rank is on.
struct host_grid {
  std::vector<int> local, leaders, in_host, across, fold, tree;
  int local_index = 0, host_index = 0, fold_index = 0, tree_index = 0;
  std::size_t ranks = 0;

  host_grid(std::vector<int> const& host, int rank) {
    if (rank < 0 || static_cast<std::size_t>(rank) >= host.size()) return;
    // Each host's ranks in rank order, the hosts in the order of their first ranks.
    std::vector<std::vector<int>> members;
    std::map<int, std::size_t> index_of_host;
    for (std::size_t r = 0; r < host.size(); ++r) {
      auto [at, added] = index_of_host.try_emplace(host[r], members.size());
      if (added) members.emplace_back();
      members[at->second].push_back(static_cast<int>(r));
    }
    ranks = host.size();
    std::size_t const h = index_of_host.at(host[static_cast<std::size_t>(rank)]);
    local = members[h];
    local_index = static_cast<int>(std::find(local.begin(), local.end(), rank) - local.begin());
    host_index = static_cast<int>(h);
    std::size_t lanes = local.size();
    for (auto const& m : members) {
      leaders.push_back(m.front());
      lanes = std::min(lanes, m.size());
    }
    auto const at = static_cast<std::size_t>(local_index), lane = at % lanes;
    for (std::size_t i = lane; i < local.size(); i += lanes) fold.push_back(local[i]);
    fold_index = static_cast<int>(at / lanes);
    if (at < lanes) {
      in_host.assign(local.begin(), local.begin() + static_cast<std::ptrdiff_t>(lanes));
      for (auto const& m : members) across.push_back(m[lane]);
    }
    tree = tree_positions_by_hosts(members);
    tree_index = static_cast<int>(std::find(tree.begin(), tree.end(), rank) - tree.begin());
  }
  bool valid() const noexcept { return !local.empty(); }
  // Two hosts or more, and one of them runs two ranks or more: where going by hosts differs
  // from going by ranks.
  bool spans_hosts() const noexcept { return leaders.size() >= 2 && ranks > leaders.size(); }
};

// `comm`'s host grid, built on first use and kept with the communicator (the hosts its ranks
// run on do not change): by_size asks for it on every call where the tree runs, from 4 B, and
// building it (a dozen allocations) cost 1-3 us of a 17-20 us call at 2 + 2.
struct kept_host_grid {
  std::optional<host_grid> grid;
};
template <class Comm>
host_grid const& host_grid_of(Comm& comm) {
  auto& kept = comm.template cached<kept_host_grid>();
  if (!kept.grid) kept.grid.emplace(hosts_of_comm(comm), comm.rank());
  return *kept.grid;
}

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

// Binomial reduce among `ranks` to ranks[0], this rank at `at` (the tree's, over that list):
// ranks[0]'s `data` ends with the combination; the others' holds partial results. A rank of -1
// is an empty position, skipped (its parent must not be one: tree_positions_by_hosts).
template <class Comm, class T, class Op>
void binomial_reduce_among(Comm& comm, std::vector<int> const& ranks, int at, std::span<T> data,
                           Op const& op) {
  int const n = static_cast<int>(ranks.size());
  int const last = binomial_last_child_step(at, n);
  for (int i = 1; i <= last; ++i)
    if (int const child = binomial_child(at, i, n);
        child >= 0 && ranks[static_cast<std::size_t>(child)] >= 0)
      comm.recv_reduce(ranks[static_cast<std::size_t>(child)], data, op, received_operand::right,
                       collective_tag);
  if (at != 0)
    comm.send(ranks[static_cast<std::size_t>(binomial_parent(at))], std::span<T const>(data),
              collective_tag);
}

// Binomial broadcast of ranks[0]'s `data` among `ranks`, this rank at `at`; -1 as above.
template <class Comm, class T>
void binomial_broadcast_among(Comm& comm, std::vector<int> const& ranks, int at,
                              std::span<T> data) {
  int const n = static_cast<int>(ranks.size());
  if (at != 0)
    comm.recv(ranks[static_cast<std::size_t>(binomial_parent(at))], data, collective_tag);
  int const last = binomial_last_child_step(at, n);
  for (int i = last; i >= 1; --i)
    if (int const child = binomial_child(at, i, n);
        child >= 0 && ranks[static_cast<std::size_t>(child)] >= 0)
      comm.send(ranks[static_cast<std::size_t>(child)], std::span<T const>(data), collective_tag);
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
    detail::binomial_reduce_among(comm, g.tree, g.tree_index, data, op);
    detail::binomial_broadcast_among(comm, g.tree, g.tree_index, data);
  }
};

}  // namespace gcl
