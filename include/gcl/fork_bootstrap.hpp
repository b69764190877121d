#pragma once
/// \file
/// `fork_bootstrap`: what a transport's `fork` gets to form a second endpoint among the ranks
/// of a communicator (see `forkable_transport`, concepts.hpp).

#include <functional>
#include <span>

namespace gcl {

/// The ranks of a communicator forming a new lane: a set of channels (connections, rings) of
/// their own among them, numbered as the communicator numbers them, usable from another thread
/// while the existing endpoint is in use. `broadcast` and `barrier` run over the existing
/// endpoint, as collectives of the communicator; a transport uses them to hand out what it
/// needs (an address and port, a token, a segment's name).
struct fork_bootstrap {
  int rank = 0;                  ///< this rank in the new lane (its rank in the communicator)
  int size = 1;                  ///< the ranks in the new lane
  std::span<int const> members;  ///< the existing endpoint's number of each lane rank
  /// Copies lane rank 0's `bytes` into every rank's (all pass the same size).
  std::function<void(std::span<std::byte>)> broadcast;
  /// Returns once every lane rank has called it.
  std::function<void()> barrier;
};

}  // namespace gcl
