#pragma once
/// \file
/// `gcl::by_size`: the default all_reduce algorithm. On each call it picks, from the bytes per
/// rank alone, the algorithm that is fastest for that size: recursive doubling for small
/// messages (log2 P rounds, the fewest: latency decides), halving-doubling in between (log2 P
/// rounds of shrinking messages), ring for large ones (every byte crosses each link once, in
/// chunks that keep every rank busy: bandwidth decides), a cache-sized block at a time
/// (`all_reduce_thresholds::ring_block_bytes`). As Open MPI's and MPICH's fixed
/// decision rules do, and for the same reasons: the choice costs nothing (no message, no
/// measurement), and every rank makes the same one because it sees the same size.
/// `by_size{}.choose(comm, bytes).name()` says which it makes.
///
/// Where the sizes switch depends on the transport: messages between threads cost a fraction
/// of a microsecond, between processes over TCP tens of microseconds, so TCP keeps the
/// few-rounds algorithms to larger sizes, and between two ranks recursive doubling, one round,
/// to larger still (`all_reduce_thresholds::recursive_doubling_below_at_two_ranks`). A transport
/// says where by a static member `default_all_reduce`, or a member `all_reduce_sizes()` where its
/// rendezvous decides (transport_hints.hpp); the values were measured back to back on a 2-core
/// machine (see doc/benchmarks.md), and a user who measures other crossovers passes their own:
///
///     gcl::all_reduce(comm, v);  // by_size, with the transport's sizes
///     gcl::by_size mine{.sizes = gcl::all_reduce_thresholds{.recursive_doubling_below = 1024,
///                                                           .ring_from = 1 << 20}};
///     gcl::all_reduce(comm, v, gcl::sum{}, mine);
///
/// Where ranks share cores, fewer messages beat fewer rounds: a message then waits for its sender
/// to be scheduled. A transport that knows the job's ranks share cores (a member
/// `ranks_share_cores()` that answers the same on every rank, as `tcp_transport`'s does from its
/// rendezvous, and `shm_transport`'s and `inproc_transport`'s from the host's CPUs) gets the
/// binomial tree from its `tree_from_if_cores_shared` to below its `tree_below_if_cores_shared` (or
/// its `tree_below_if_over_two_per_cpu` where it says, by a member `ranks_over_two_per_cpu()`, that
/// some host has more than two ranks per CPU), ring from its `ring_from_if_cores_shared` (where
/// that is smaller than `ring_from`), and ring blocks of at least P² x
/// `ring_step_bytes_per_rank_if_cores_shared` and `ring_block_bytes_if_cores_shared` (fewer
/// rounds). The smallest messages take `direct`, one round, below its
/// `direct_below_if_cores_shared` (up to `direct_max_ranks` ranks; below its
/// `direct_below_if_over_two_per_cpu` where some host runs more than two per CPU); where the ranks
/// crowd the cores (at least two per CPU: a member `ranks_crowd_cores()`), the next ones, or all
/// small ones beyond `direct_max_ranks`, take `parameter_server`, two rounds of the fewest
/// messages, below its `parameter_server_below_if_cores_crowded` (up to
/// `parameter_server_max_ranks` ranks), and where they are a power of two, the large ones
/// halving-doubling instead of ring from its `halving_doubling_from_if_cores_crowded` and below its
/// `halving_doubling_below_if_cores_crowded` (fewer rounds of the same bytes).
///
/// Across hosts, where the transport says which host each rank is on (a member
/// `host_of_ranks()`, as `hybrid_transport`'s) and its thresholds name a `hierarchical_from`,
/// `hierarchical` from that size wherever halving-doubling or ring would run: it sends between
/// hosts the least an all_reduce can. Wherever the tree would run (ranks share cores),
/// `tree_by_hosts` instead: the tree's messages, of which only one into each host and one out
/// crosses between hosts, whatever the placement. Hosts of different sizes too.
///
/// A non-commutative operator never gets ring (it reorders operands), nor hierarchical; it gets
/// halving-doubling.

#include <algorithm>
#include <bit>
#include <concepts>
#include <cstddef>
#include <optional>
#include <span>
#include <string_view>
#include <utility>

#include "../cost_model.hpp"
#include "../op.hpp"
#include "../transport_hints.hpp"
#include "direct.hpp"
#include "halving_doubling.hpp"
#include "hierarchical.hpp"
#include "parameter_server.hpp"
#include "recursive_doubling.hpp"
#include "ring.hpp"
#include "tree.hpp"

namespace gcl {

namespace detail {

// The transport's thresholds (its static member `default_all_reduce`, looked for through
// decorators such as `counting`, which name what they wrap `inner_type`), or the defaults.
template <class Transport>
constexpr all_reduce_thresholds thresholds_of() {
  if constexpr (requires { Transport::default_all_reduce; })
    return Transport::default_all_reduce;
  else if constexpr (requires { typename Transport::inner_type; })
    return thresholds_of<typename Transport::inner_type>();
  else
    return {};
}

// The thresholds of a transport object: its member `all_reduce_sizes()` where it has one (a
// transport whose rendezvous decides them: hybrid_transport), through decorators (`inner()`),
// else its type's.
template <class Transport>
all_reduce_thresholds thresholds_of(Transport const& t) {
  if constexpr (requires {
                  { t.all_reduce_sizes() } -> std::convertible_to<all_reduce_thresholds>;
                })
    return t.all_reduce_sizes();
  else if constexpr (requires { t.inner(); })
    return thresholds_of(t.inner());
  else
    return thresholds_of<Transport>();
}

// The same, of a communicator's transport.
template <class Comm>
all_reduce_thresholds thresholds_of_comm(Comm& comm) {
  if constexpr (requires { comm.transport(); })
    return thresholds_of(comm.transport());
  else
    return thresholds_of<typename Comm::transport_type>();
}

// A yes/no hint a transport may give about where its ranks run (transport_hints.hpp), asked of
// it, or of the transport a decorator such as `counting` wraps (`inner()`); false where neither
// gives it. `ask` calls the member and is not invocable on a transport without it.
template <class Transport, class Ask>
bool hint(Transport const& t, Ask ask) {
  if constexpr (std::invocable<Ask, Transport const&>)
    return ask(t);
  else if constexpr (requires { t.inner(); })
    return hint(t.inner(), ask);
  else
    return false;
}

// The same, of a communicator's transport; false for a communicator that does not show one.
template <class Comm, class Ask>
bool hint_of(Comm& comm, Ask ask) {
  if constexpr (requires { comm.transport(); })
    return hint(comm.transport(), ask);
  else
    return false;
}

// The hints: ranks of the job share cores; some host has more than two ranks per CPU; the
// ranks crowd the cores (at least two per CPU).
inline constexpr auto ranks_share_cores =
    [](auto const& t) -> decltype(bool(t.ranks_share_cores())) { return t.ranks_share_cores(); };
inline constexpr auto ranks_over_two_per_cpu =
    [](auto const& t) -> decltype(bool(t.ranks_over_two_per_cpu())) {
  return t.ranks_over_two_per_cpu();
};
inline constexpr auto ranks_crowd_cores =
    [](auto const& t) -> decltype(bool(t.ranks_crowd_cores())) { return t.ranks_crowd_cores(); };

// `all_reduce_thresholds::halving_doubling_{from,below}_if_cores_crowded`: between its sizes,
// ranks that crowd the cores, a power of two of them.
template <class Comm>
bool halving_doubling_instead_of_ring(Comm& comm, all_reduce_thresholds const& t,
                                      std::size_t bytes) {
  return bytes >= t.halving_doubling_from_if_cores_crowded &&
         bytes < t.halving_doubling_below_if_cores_crowded &&
         std::has_single_bit(static_cast<unsigned>(comm.size())) &&
         hint_of(comm, ranks_crowd_cores);
}

}  // namespace detail

struct by_size {
  static constexpr std::string_view name = "by_size";
  /// Ring, the one algorithm here that reorders operands, is only picked for commutative ones.
  static constexpr bool needs_commutative = false;

  /// The most ranks for which `direct` is taken where they share the cores
  /// (`all_reduce_thresholds::direct_below_if_cores_shared`): its P - 1 messages a rank grow
  /// with P, and from P = 6 the parameter server's 2 (P - 1) in all, in two rounds, catch up.
  /// Measured on 2 cores (benchmark/default_vs_fixed: every algorithm in one job, blocks of
  /// calls back to back, 2026-11-29), 4 B to 1 KiB, between threads and over shm: at P = 3
  /// 1.6-2.0 and 2.0-2.3 us against recursive doubling's 2.8-3.0 and 3.3-3.6; direct against
  /// the parameter server at P = 4 2.1-3.3 against 2.7-4.2 and 2.4-4.3 against 3.6-5.3, at P = 5
  /// 3.4-5.0 against 4.4-5.2 and 4.5-6.8 against 5.6-7.3; at P = 6 level to 256 B, then behind
  /// (threads, 512 B to 2 KiB: 5.7-7.5 against 5.0-5.6); at P = 8 behind at every size
  /// (threads 6.4-11.3 against 5.9-7.4, shm 8.3-22.0 against 7.7-11.8).
  static constexpr int direct_max_ranks = 5;

  /// The most ranks for which `parameter_server` is taken where they crowd the cores
  /// (`all_reduce_thresholds::parameter_server_below_if_cores_crowded`): measured up to 16 on 2
  /// cores, where it took 0.4-0.6x recursive doubling's time from 4 B to 16 KiB; rank 0
  /// receives and combines P - 1 vectors one after another, so larger jobs keep the others.
  static constexpr int parameter_server_max_ranks = 16;

  /// Empty: the transport's (its `all_reduce_sizes()`, else `Transport::default_all_reduce`,
  /// else `all_reduce_thresholds{}`).
  std::optional<all_reduce_thresholds> sizes;

  /// The ring it runs for `p` ranks: blocks of max(ring_block_bytes, ring_block_total_bytes /
  /// p) bytes per rank, and where ranks share cores at least p² x
  /// ring_step_bytes_per_rank_if_cores_shared and at least ring_block_bytes_if_cores_shared.
  static constexpr ring ring_of(all_reduce_thresholds const& t, int p,
                                bool cores_shared = false) noexcept {
    auto const ranks = static_cast<std::size_t>(p < 1 ? 1 : p);
    std::size_t const shared_floor =
        cores_shared ? std::max(ranks * ranks * t.ring_step_bytes_per_rank_if_cores_shared,
                                t.ring_block_bytes_if_cores_shared)
                     : 0;
    return ring{.block_bytes =
                    std::max({t.ring_block_bytes, t.ring_block_total_bytes / ranks, shared_floor})};
  }

  /// From this size, ring (or halving-doubling where a power of two of ranks crowd the cores,
  /// `halving_doubling_instead_of_ring`): `ring_from`, and where ranks share cores
  /// `ring_from_if_cores_shared` where it is smaller.
  static constexpr std::size_t ring_from(all_reduce_thresholds const& t,
                                         bool cores_shared) noexcept {
    return cores_shared && t.ring_from_if_cores_shared != 0
               ? std::min(t.ring_from, t.ring_from_if_cores_shared)
               : t.ring_from;
  }

  /// Below this size, recursive doubling (unless a rule for shared cores came first):
  /// `recursive_doubling_below`, and at P = 2 `recursive_doubling_below_at_two_ranks` where it
  /// is larger.
  static constexpr std::size_t recursive_doubling_below(all_reduce_thresholds const& t,
                                                        int p) noexcept {
    return p == 2 ? std::max(t.recursive_doubling_below, t.recursive_doubling_below_at_two_ranks)
                  : t.recursive_doubling_below;
  }

  /// The rounds of the algorithm it picks for this size (see cost_model.hpp), with `sizes` or
  /// the defaults (a schedule does not know the transport, nor whether ranks share cores), for
  /// a commutative operator.
  template <class F>
  void schedule(int p, std::size_t count, std::size_t element_size, F&& step) const {
    auto const t = sizes.value_or(all_reduce_thresholds{});
    std::size_t const bytes = count * element_size;
    if (bytes < recursive_doubling_below(t, p))
      for_each_step(recursive_doubling{}, p, count, element_size, step);
    else if (bytes >= t.ring_from)
      for_each_step(ring_of(t, p), p, count, element_size, step);
    else
      for_each_step(halving_doubling{}, p, count, element_size, step);
  }

  /// What `all_reduce` runs for a message of `bytes` on `comm`, and with what: the algorithm, the
  /// ring's blocks where it is ring, the host grid where it goes by hosts. `all_reduce` runs
  /// exactly this, so a user (or a benchmark) can ask which algorithm the default takes for a
  /// size, as Open MPI's `coll_tuned` decision functions answer for theirs; every rank gets the
  /// same answer for the same size.
  struct choice {
    enum class algorithm {
      direct,
      parameter_server,
      tree,
      tree_by_hosts,
      recursive_doubling,
      hierarchical,
      ring,
      halving_doubling
    };
    algorithm which = algorithm::halving_doubling;
    gcl::ring ring_blocks{};                   ///< where `which` is ring: the ring it runs
    detail::host_grid const* hosts = nullptr;  ///< where `which` goes by hosts: the grid

    /// The algorithm's name, as the algorithm names itself ("ring", "tree_by_hosts", ...).
    constexpr std::string_view name() const noexcept {
      switch (which) {
        case algorithm::direct:
          return direct::name;
        case algorithm::parameter_server:
          return parameter_server::name;
        case algorithm::tree:
          return tree::name;
        case algorithm::tree_by_hosts:
          return tree_by_hosts::name;
        case algorithm::recursive_doubling:
          return recursive_doubling::name;
        case algorithm::hierarchical:
          return hierarchical::name;
        case algorithm::ring:
          return gcl::ring::name;
        case algorithm::halving_doubling:
          return halving_doubling::name;
      }
      return {};
    }
  };

  /// The choice for `bytes` on `comm`, for an operator that is `commutative` or not (ring and
  /// the algorithms by hosts reorder operands: they need one that is).
  template <class Comm>
  choice choose(Comm& comm, std::size_t bytes, bool commutative = true) const {
    using enum choice::algorithm;
    auto const t = sizes.value_or(detail::thresholds_of_comm(comm));
    bool const cores_shared = detail::hint_of(comm, detail::ranks_share_cores);
    if (cores_shared && comm.size() <= direct_max_ranks && bytes < t.direct_below_if_cores_shared &&
        (t.direct_below_if_over_two_per_cpu == 0 || bytes < t.direct_below_if_over_two_per_cpu ||
         !detail::hint_of(comm, detail::ranks_over_two_per_cpu)))
      return {.which = direct};
    if (bytes < t.parameter_server_below_if_cores_crowded &&
        comm.size() <= parameter_server_max_ranks &&
        detail::hint_of(comm, detail::ranks_crowd_cores))
      return {.which = parameter_server};
    // Across hosts (thresholds that name `hierarchical_from`: a mixed job's; a transport that
    // says which host each rank is on), the tree and the rings go by hosts.
    auto by_hosts = [&]() -> detail::host_grid const* {
      return commutative && t.hierarchical_from != 0 ? detail::grid_if_over_hosts(comm) : nullptr;
    };
    if (cores_shared && bytes >= t.tree_from_if_cores_shared) {
      std::size_t tree_below = t.tree_below_if_cores_shared;
      if (t.tree_below_if_over_two_per_cpu > tree_below &&
          detail::hint_of(comm, detail::ranks_over_two_per_cpu))
        tree_below = t.tree_below_if_over_two_per_cpu;
      // Across hosts, the tree by hosts: it crosses between them once into each host.
      if (bytes < tree_below) {
        if (auto const* hosts = by_hosts()) return {.which = tree_by_hosts, .hosts = hosts};
        return {.which = tree};
      }
    }
    if (bytes < recursive_doubling_below(t, comm.size())) return {.which = recursive_doubling};
    if (commutative) {
      if (t.hierarchical_from != 0 && bytes >= t.hierarchical_from)
        if (auto const* hosts = by_hosts()) return {.which = hierarchical, .hosts = hosts};
      if (bytes >= ring_from(t, cores_shared) &&
          !detail::halving_doubling_instead_of_ring(comm, t, bytes))
        return {.which = ring, .ring_blocks = ring_of(t, comm.size(), cores_shared)};
    }
    return {.which = halving_doubling};
  }

  template <class Comm, class T, class Op>
  void all_reduce(Comm& comm, std::span<T> data, Op const& op) const {
    all_reduce_as(choose(comm, data.size_bytes(), commutative_op<Op, T>), comm, data, op);
  }

  /// Runs the algorithm `c` names, as `all_reduce` does once it has chosen (a benchmark times
  /// the choice apart from the algorithm so; the ranks must pass the same choice).
  template <class Comm, class T, class Op>
  static void all_reduce_as(choice const& c, Comm& comm, std::span<T> data, Op const& op) {
    using enum choice::algorithm;
    switch (c.which) {
      case direct:
        return gcl::direct{}.all_reduce(comm, data, op);
      case parameter_server:
        return gcl::parameter_server{}.all_reduce(comm, data, op);
      case tree:
        return gcl::tree{}.all_reduce(comm, data, op);
      case recursive_doubling:
        return gcl::recursive_doubling{}.all_reduce(comm, data, op);
      case halving_doubling:
        return gcl::halving_doubling{}.all_reduce(comm, data, op);
      case tree_by_hosts:
      case hierarchical:
      case ring:
        // `choose` names these for a commutative operator only; given one for another, the
        // algorithm it would have named instead, halving-doubling.
        if constexpr (commutative_op<Op, T>) {
          if (c.which == ring) return c.ring_blocks.all_reduce(comm, data, op);
          if (c.which == hierarchical)
            return gcl::hierarchical::all_reduce_over(comm, data, op, *c.hosts);
          return gcl::tree_by_hosts::all_reduce_over(comm, data, op, *c.hosts);
        }
        break;
    }
    gcl::halving_doubling{}.all_reduce(comm, data, op);
  }
};

}  // namespace gcl
