#pragma once
/// \file
/// What a transport may tell the algorithms about itself, so that the defaults fit it. Each
/// is an optional static member of the transport; decorators (`counting`) pass their inner
/// transport's on.

#include <cstddef>

namespace gcl {

/// Where the default all_reduce algorithm (`gcl::by_size`) switches, in bytes per rank: a
/// transport's `static constexpr all_reduce_thresholds default_all_reduce`, or, for a transport
/// that learns at its rendezvous which it is (hybrid_transport: shared memory only, or TCP
/// too), a member `all_reduce_thresholds all_reduce_sizes() const` that answers the same on
/// every rank.
struct all_reduce_thresholds {
  std::size_t recursive_doubling_below = 16 * 1024;  ///< below: recursive doubling
  std::size_t ring_from = 256 * 1024;  ///< from here: ring (halving-doubling in between)
  /// Below this, the binomial tree instead, when the transport says that ranks of the job
  /// share cores (a member `bool ranks_share_cores() const`, the same on every rank). 0: never.
  std::size_t tree_below_if_cores_shared = 0;
  /// ... and from this size: below it the algorithm the other thresholds pick. 0: every size
  /// below `tree_below_if_cores_shared` (TCP, where a message costs a wake-up and the tree sends
  /// the fewest); threads and shared memory keep recursive doubling's fewer rounds for the
  /// smallest messages, which cost less than a switch.
  std::size_t tree_from_if_cores_shared = 0;
  /// Below this (when it is larger than `tree_below_if_cores_shared`), the binomial tree too,
  /// where the transport says that some host of the job has more than two ranks per CPU (a
  /// member `bool ranks_over_two_per_cpu() const`, the same on every rank). The more ranks take
  /// turns on a core, the longer each message waits for its sender to be scheduled, and the
  /// tree sends the fewest. 0: never.
  std::size_t tree_below_if_over_two_per_cpu = 0;
  /// Below this, `direct` (every rank sends its vector to the P - 1 others and combines all P
  /// itself: one round) where ranks share the cores (as for `tree_below_if_cores_shared`) and
  /// they are at most `by_size::direct_max_ranks`. Each rank then waits once for the others to
  /// be scheduled, where recursive doubling's log2 P rounds wait log2 P times. Ahead of the
  /// tree's window where both apply. 0: never.
  std::size_t direct_below_if_cores_shared = 0;
  /// Below this (from where `direct` stops, or from 0 for more than `by_size::direct_max_ranks`
  /// ranks), `parameter_server` (every rank sends its vector to rank 0, which combines them and
  /// sends the result back: 2 (P - 1) messages in two rounds) where the transport says that its
  /// ranks crowd the cores (a member `bool ranks_crowd_cores() const`, the same on every rank:
  /// at least two ranks per CPU of their host) and they are at most
  /// `by_size::parameter_server_max_ranks`: the fewest messages (the tree's) in the fewest rounds
  /// after direct's one, where every message waits for a rank to be scheduled. Ahead of the
  /// tree's window. 0: never.
  std::size_t parameter_server_below_if_cores_crowded = 0;
  /// Ring all-reduces a larger message a block at a time (`ring::block_bytes`), so that each
  /// block's chunks stay in the cache from the scatter-reduce that produces them to the
  /// all-gather that sends them on: at P ranks, blocks of max(ring_block_bytes,
  /// ring_block_total_bytes / P) bytes per rank. `ring_block_bytes` pays each block's 2 (P - 1)
  /// rounds over enough bytes; `ring_block_total_bytes` lets fewer ranks take larger blocks
  /// where the blocks of all of them together still fit the shared cache. Both 0: the whole
  /// buffer at once. The defaults suit processes (shared memory, TCP), whose copies through
  /// rings and socket buffers take cache of their own; threads copy straight between the
  /// ranks' buffers and take 16 MiB over the ranks (inproc_transport). Measured on 2 cores
  /// (1 MiB of L2 each, 32 MiB of L3), doc/algorithms.md.
  std::size_t ring_block_bytes = 2 * 1024 * 1024;
  std::size_t ring_block_total_bytes = 0;  ///< see ring_block_bytes
  /// Where ranks share cores (as for `tree_below_if_cores_shared`), each step of ring's blocks
  /// moves at least P times this (blocks of at least P² times this). Every step then waits for
  /// ranks to be scheduled, about P / cores of them, so a block's 2 (P - 1) steps cost about P²
  /// switches, and its bytes must grow as fast for the blocks' cache gain to pay. 0: no floor.
  std::size_t ring_step_bytes_per_rank_if_cores_shared = 0;
  /// At P = 2, recursive doubling below this instead (where it is above
  /// `recursive_doubling_below`). Two ranks then exchange their vectors once, in one round,
  /// where halving-doubling exchanges halves in two: the same bytes each way, for twice the
  /// reduction. Where a round costs more than reducing the vector (TCP: a round trip through
  /// the kernel), one round wins; at P > 2 recursive doubling sends log2 P vectors a rank
  /// against halving-doubling's two, so it keeps `recursive_doubling_below`. 0: as at any P.
  /// (Last, so that thresholds written out in order before it was added mean what they did.)
  std::size_t recursive_doubling_below_at_two_ranks = 0;
  /// Below this, halving-doubling where ring would run (from `ring_from`, or where ranks share
  /// cores from `ring_from_if_cores_shared`), where the transport says that its ranks crowd
  /// the cores (as for `parameter_server_below_if_cores_crowded`) and they are a power of
  /// two. Both send 2 (P - 1) / P of the vector a rank; at a power of two halving-doubling
  /// does it in 2 log2 P rounds against ring's 2 (P - 1) a block, and where every round waits
  /// for ranks to take turns on a core, the rounds decide. At other P halving-doubling first
  /// folds the extra ranks' whole vectors in, and ring stays ahead.
  /// 0: never. (After the one above, for the same reason.) Threads set it below 2 MiB
  /// (inproc_transport::default_all_reduce has the numbers); shm did, from 2 MiB, until timing
  /// over loops of calls found ring in blocks ahead there (shm_transport::default_all_reduce).
  std::size_t halving_doubling_below_if_cores_crowded = 0;
  /// ... and from this size: below it, ring still (from `ring_from`). Ring's 2 (P - 1) rounds
  /// of P-th chunks flow where the ranks taking turns on a core each find their chunk written
  /// when they run, and a chunk that fits its transport's buffer leaves its sender at once;
  /// halving-doubling's first rounds move halves and quarters of the vector, which hold both
  /// ranks of a pair until the larger of them is through. 0: from `ring_from`. (Last, for the
  /// same reason.)
  std::size_t halving_doubling_from_if_cores_crowded = 0;
  /// From this size (where it is below `ring_from`), ring where the transport says that its
  /// ranks share cores (as for `tree_below_if_cores_shared`), or halving-doubling where the
  /// rule above takes it: from there the bytes, which ring and halving-doubling move fewest of,
  /// cost more than the switches, which the tree makes fewest of. Halving-doubling in between
  /// would first fold the extra ranks' whole vectors in, at a P that is not a power of two.
  /// 0: from `ring_from`. (Last, for the same reason.)
  std::size_t ring_from_if_cores_shared = 0;
  /// From this size, `hierarchical` wherever halving-doubling or ring would run, where the
  /// transport says which host each rank is on (a member `host_of_ranks()`, as
  /// `hybrid_transport`'s) and the job spans two hosts or more, some running two ranks or more
  /// (of equal numbers or not): each host then sends the others the least an all_reduce can,
  /// where ring's one link out of a host carries nearly twice the vector. And, non-zero, it
  /// turns the tree, wherever it would run (ranks that share cores), into `tree_by_hosts`,
  /// which crosses between hosts only once into each host and once out, where the tree may
  /// cross several times (3 + 3 in blocks, interleaved ranks, 1 + 3). 0: never. (Last, for the
  /// same reason.)
  std::size_t hierarchical_from = 0;
  /// Where the transport says that some host of the job has more than two ranks per CPU (a
  /// member `bool ranks_over_two_per_cpu() const`, the same on every rank), `direct` only below
  /// this, where it is below `direct_below_if_cores_shared`. Each of direct's P - 1 messages a
  /// rank then waits behind two others for its sender's turn on a core, and from a few hundred
  /// bytes the parameter server's 2 (P - 1) messages in all (where the ranks crowd the cores,
  /// as they then do) cost less. 0: `direct_below_if_cores_shared` alone. (Last, for the same
  /// reason.)
  std::size_t direct_below_if_over_two_per_cpu = 0;
  /// Where the transport says that ranks share cores (as for `tree_below_if_cores_shared`),
  /// ring's blocks are at least this many bytes, whatever P: each block's 2 (P - 1) rounds then
  /// wait for ranks to be scheduled, and fewer, larger blocks pay that less often. Threads
  /// set it (inproc_transport::default_all_reduce has the numbers); TCP has
  /// `ring_step_bytes_per_rank_if_cores_shared` instead, which grows with P², and shm neither
  /// (its chunks must fit its rings). 0: no floor. (Last, for the same reason.)
  std::size_t ring_block_bytes_if_cores_shared = 0;
};

}  // namespace gcl
