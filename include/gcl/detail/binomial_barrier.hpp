#pragma once
/// \file
/// The binomial-tree barrier: every rank waits for its children's empty messages and tells its
/// parent (up to rank 0), then waits for its parent's and tells its children (largest subtree
/// first, so the deepest path starts first). `2 (P - 1)` messages of 0 bytes in
/// `2 ceil(log2 P)` steps. `gcl::tree::barrier` is this; it lives here, below the algorithms,
/// so that `gcl::calibrate` (calibrate.hpp, reachable from cost_model.hpp) can synchronise
/// without including an algorithm header.

#include <cstddef>
#include <span>

#include "../communicator.hpp"
#include "binomial.hpp"

namespace gcl::detail {

/// No rank of `comm` returns before every rank has entered. Collective; the messages carry
/// `collective_tag`, so it runs inside the caller's collective call.
template <class Comm>
void binomial_barrier(Comm& comm) {
  int const p = comm.size(), rel = comm.rank();  // rooted at rank 0: relative rank is rank
  int const last = binomial_last_child_step(rel, p);
  std::span<std::byte> none;
  for (int i = 1; i <= last; ++i)  // up: every child's subtree has entered
    if (int const child = binomial_child(rel, i, p); child >= 0)
      comm.recv(child, none, collective_tag);
  if (rel != 0) {
    comm.send(binomial_parent(rel), std::span<std::byte const>(none), collective_tag);
    comm.recv(binomial_parent(rel), none, collective_tag);  // down: everyone has entered
  }
  for (int i = last; i >= 1; --i)
    if (int const child = binomial_child(rel, i, p); child >= 0)
      comm.send(child, std::span<std::byte const>(none), collective_tag);
}

}  // namespace gcl::detail
