#pragma once
/// \file
/// Where a job's ranks run, host by host, as the transport says (`host_of_ranks()`, as
/// `hybrid_transport`'s), and the layouts the algorithms by hosts run on: `hierarchical`'s grid
/// of lanes and the binomial tree with each host a subtree (`tree_by_hosts`, `tree`'s
/// broadcast).

#include <algorithm>
#include <bit>
#include <concepts>
#include <cstddef>
#include <map>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

namespace gcl::detail {

// The host number of each rank of the job: the transport's `host_of_ranks()`, looked for through
// decorators such as `counting`; `nullptr` (of type std::nullptr_t, so that `says_hosts` knows
// at compile time) where the transport does not say.
template <class Transport>
auto host_numbers_of(Transport const& t) {
  if constexpr (requires {
                  { t.host_of_ranks() } -> std::convertible_to<std::vector<int> const&>;
                })
    return &t.host_of_ranks();
  else if constexpr (requires { t.inner(); })
    return host_numbers_of(t.inner());
  else
    return nullptr;
}

// Whether `Transport` says which host each rank is on (`host_numbers_of`): known at compile
// time, so that the others pay nothing.
template <class Transport>
constexpr bool says_hosts() {
  return !std::is_same_v<decltype(host_numbers_of(std::declval<Transport const&>())),
                         std::nullptr_t>;
}

// The host number of each rank of `comm` (mapped through the communicator's ranks), or empty
// where the transport does not say.
template <class Comm>
std::vector<int> hosts_of_comm(Comm& comm) {
  std::vector<int> out;
  if constexpr (requires { comm.transport(); }) {
    using transport = std::remove_cvref_t<decltype(comm.transport())>;
    if constexpr (says_hosts<transport>()) {
      auto const& all = *host_numbers_of(comm.transport());
      for (int r = 0; r < comm.size(); ++r)
        out.push_back(all[static_cast<std::size_t>(comm.transport_rank(r))]);
    }
  }
  return out;
}

// The positions of a binomial tree over the ranks of several hosts (`members`: each host's ranks)
// that crosses between hosts once into each and once out, rooted at `root`: the rank at each
// position, -1 at a position left empty. Each host takes the lowest free block of positions of
// its size rounded up to a power of two and aligned to it, and its ranks fill the start of it:
// first the root's host (the root at position 0), then the others, the largest first (of equal
// ones, the first listed). A block aligned so is a subtree: a host reduces inside itself before
// its first position sends out, to a position of another host (and a broadcast enters it once).
// The end of a block that its host leaves empty is free for smaller hosts, whose blocks are
// subtrees of it: over 3 + 1, rooted in the host of three, the host of one rank takes position
// 3, the child that rank 2 has no rank for, and the tree is two rounds deep (the plain tree),
// where a tree inside each host and then among their first ranks takes three. Rooted in a
// largest host, never deeper than that; a position's parent (it with its lowest set bit
// cleared) is never empty, so the tree need only skip empty children: checked for every split
// of up to 24 ranks into hosts, and for every root up to 12 (test/algorithm/hierarchical.cpp).
inline std::vector<int> tree_positions_by_hosts(std::vector<std::vector<int>> const& members,
                                                int root) {
  std::vector<std::size_t> order;
  std::size_t root_host = 0;
  for (std::size_t h = 0; h < members.size(); ++h) {
    if (std::find(members[h].begin(), members[h].end(), root) != members[h].end())
      root_host = h;
    else
      order.push_back(h);
  }
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return members[a].size() > members[b].size();
  });
  order.insert(order.begin(), root_host);
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
    auto const first = at.begin() + static_cast<std::ptrdiff_t>(start);
    std::copy(members[h].begin(), members[h].end(), first);
    if (h == root_host)  // the root first, the host's other ranks after it in turn
      std::rotate(first, std::find(first, first + static_cast<std::ptrdiff_t>(n), root),
                  first + static_cast<std::ptrdiff_t>(n));
  }
  return at;
}

// A layout of the tree by hosts and this rank's position in it.
struct tree_layout {
  std::vector<int> at;
  int index = 0;
};

// This rank's place among the hosts. `local`: the ranks of its host in rank order, this rank at
// `local_index`. `leaders`: each host's first rank, the hosts in the order of their first ranks,
// this rank's host at `host_index`. And the grid hierarchical runs on, of L lanes, L the ranks
// of the smallest host. A rank whose local index is below L is in the lane of that number:
// `in_host`, the first L ranks of its host, and `across`, its lane's rank on every host. A rank
// of a larger host beyond them folds into the lane of its local index mod L; `fold` lists that
// lane's rank on this host first, then the ranks folded into it, this rank at `fold_index` (one
// rank, this one, where nothing folds). `tree`: the tree by hosts (`tree_positions_by_hosts`)
// rooted at the first rank of the first largest host, all_reduce's; `tree_from(root)`: rooted at
// `root`, broadcast's. Empty (`valid()` false) where the transport does not say which host each
// rank is on.
struct host_grid {
  std::vector<std::vector<int>> hosts;  // each host's ranks in rank order, hosts as `leaders`
  std::vector<int> local, leaders, in_host, across, fold;
  int local_index = 0, host_index = 0, fold_index = 0;
  std::size_t ranks = 0;
  tree_layout tree;

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
    auto const largest =
        std::max_element(members.begin(), members.end(),
                         [](auto const& a, auto const& b) { return a.size() < b.size(); });
    int const root = largest->front();
    hosts = std::move(members);
    rank_ = rank;
    tree = layout(root);
  }
  bool valid() const noexcept { return !local.empty(); }
  // The tree by hosts rooted at `root`, built on first use.
  tree_layout const& tree_from(int root) const {
    if (rooted_.empty()) rooted_.resize(ranks);
    auto& t = rooted_.at(static_cast<std::size_t>(root));
    if (t.at.empty()) t = layout(root);
    return t;
  }
  // Two hosts or more, and one of them runs two ranks or more: where going by hosts differs
  // from going by ranks.
  bool spans_hosts() const noexcept { return leaders.size() >= 2 && ranks > leaders.size(); }

 private:
  tree_layout layout(int root) const {
    tree_layout t{tree_positions_by_hosts(hosts, root), 0};
    t.index = static_cast<int>(std::find(t.at.begin(), t.at.end(), rank_) - t.at.begin());
    return t;
  }
  int rank_ = 0;
  mutable std::vector<tree_layout> rooted_;  // tree_from's, by root
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

// `comm`'s host grid where its ranks run on two hosts or more and some host runs several
// (`spans_hosts`), else null.
template <class Comm>
host_grid const* grid_if_over_hosts(Comm& comm) {
  if constexpr (requires { comm.transport(); }) {
    if constexpr (says_hosts<std::remove_cvref_t<decltype(comm.transport())>>()) {
      auto const& g = host_grid_of(comm);
      return g.spans_hosts() ? &g : nullptr;
    }
  }
  return nullptr;
}

}  // namespace gcl::detail
