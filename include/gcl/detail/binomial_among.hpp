#pragma once
/// \file
/// The binomial tree over a list of ranks (`ranks[0]` its root), rather than over the
/// communicator's ranks in order: `hierarchical`'s folds and the tree by hosts
/// (detail/host_grid.hpp) run it. A rank of -1 in the list is an empty position of the tree.

#include <cstddef>
#include <span>
#include <vector>

#include "../combiner.hpp"
#include "../communicator.hpp"
#include "binomial.hpp"

namespace gcl::detail {

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

}  // namespace gcl::detail
