#pragma once
/// \file
/// What a transport may tell the algorithms about itself, so that the defaults fit it. Each
/// is an optional static member of the transport; decorators (`counting`) pass their inner
/// transport's on.

#include <cstddef>

namespace gcl {

/// Where the default all_reduce algorithm (`gcl::by_size`) switches, in bytes per rank: a
/// transport's `static constexpr all_reduce_thresholds default_all_reduce`.
struct all_reduce_thresholds {
  std::size_t recursive_doubling_below = 16 * 1024;  ///< below: recursive doubling
  std::size_t ring_from = 256 * 1024;  ///< from here: ring (halving-doubling in between)
  /// Below this, the binomial tree instead, when the transport says that ranks of the job
  /// share cores (a member `bool ranks_share_cores() const`, the same on every rank). 0: never.
  std::size_t tree_below_if_cores_shared = 0;
};

}  // namespace gcl
