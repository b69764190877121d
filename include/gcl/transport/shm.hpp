#pragma once
/// \file
/// `shm_transport`: ranks are processes of one host, exchanging messages through shared
/// memory.
///
/// Rank 0 creates one memfd segment per job (anonymous memory, not a file in /dev/shm: the
/// size of /dev/shm does not limit it, and it vanishes with the last process that maps it,
/// even after SIGKILL) and hands it to the other ranks over a Unix socket in the abstract
/// namespace named from the job token (shm/rendezvous.hpp). Every ordered pair of ranks has a
/// single-producer single-consumer ring in it (shm/ring.hpp): a message is a header (tag, size,
/// the sender's `call_info`) and its payload, streamed through the ring as room frees up. A
/// large message from the job's pool (`allocate`), or one of at least `offer_bytes` from any
/// buffer with `cross_memory_attach` (GCL_SHM_CMA=1), is instead offered: the receiver copies
/// it straight out of the sender's buffer (with process_vm_readv for the latter, where the
/// kernel allows it: checked at setup, per pair), one copy. A blocked call drains every ring to it
/// into per-(source, tag) queues, polls for `spin`, then sleeps on its rank's futex in the segment;
/// every wait is bounded by `timeout`, a peer whose process is gone is noticed by the hang-up of
/// the socket this rank keeps to it (within 20 ms of sleep) and named, and the first error a rank
/// meets is written into the segment so that every rank stops with it. See doc/shm.md.

#include <array>
#include <memory>
#include <span>
#include <string>
#include <utility>

#include "../call_info.hpp"
#include "../combiner.hpp"
#include "../detail/host_cpus.hpp"
#include "../detail/random_token.hpp"
#include "../error.hpp"
#include "../fork_bootstrap.hpp"
#include "../transport_hints.hpp"
#include "shm/buffer.hpp"
#include "shm/engine.hpp"
#include "shm/options.hpp"

namespace gcl {

/// A rank of a job whose ranks are processes of this host. Construct it from options (it
/// blocks until every rank has joined, bounded by `timeout`), or let `gcl::spawn` run n ranks
/// as threads of this process over one segment (tests):
///
///     gcl::communicator comm{gcl::shm_transport(gcl::shm_options::from_env())};
///     gcl::spawn<gcl::shm_transport>(4, [](auto& comm) { /* ... */ });
class shm_transport {
 public:
  using options = shm_options;
  /// Between processes of one host messages cost about what they cost between threads, so the
  /// small sizes switch as inproc's do: recursive doubling below 16 KiB and, where the ranks
  /// outnumber the cores, the binomial tree from 16 to 64 KiB. Ring from 512 KiB, earlier
  /// than between threads, where every ring step's chunk is copied once more (through the
  /// ring), and from 64 KiB where the ranks outnumber the cores (`ring_from_if_cores_shared`).
  /// Measured on 2 cores (2026-11-27, back to back, four to six jobs per algorithm, medians of
  /// the jobs' medians): the tree took 0.70-0.81x halving-doubling's time from 16 to 128 KiB
  /// at P = 8, 0.8-1.13x at P = 4, and 1.33-1.78x recursive doubling's below; from 512 KiB
  /// ring took 0.62-0.92x halving-doubling's time at P = 8, and at P = 4 was level but at
  /// 1 MiB (1.17x). At P = 2 the three send alike (benchmark/analysis.md). From 64 KiB where
  /// the ranks outnumber the cores, ring: in `default_vs_fixed` (an Intel host of 2 cores,
  /// 2026-12-06, processes under gcl-launch, one job of seven rounds per P) what `by_size`
  /// ran there before (the tree, the parameter server, halving-doubling) took 1.2x ring's
  /// time at P = 4, 64 KiB (37.8 us against 31.4), 1.4x at P = 8, 64 KiB (141 against 101),
  /// 1.2-1.5x from 128 to 256 KiB at P = 4 and 5, and 2.3-2.6x at 256 KiB at P = 3 and 5
  /// (184 against 72 us, 357 against 154); halving-doubling was ahead of ring at P = 8, 64
  /// KiB (87 us), level from 128 KiB. On 2026-11-27 halving-doubling had taken 0.67x ring's
  /// time at P = 4, 256 KiB: the hosts disagree there, and ring is the simpler rule.
  ///
  /// Where the ranks outnumber the cores, `direct` below 4 KiB (up to 5 of them,
  /// `by_size::direct_max_ranks`), as between threads: one round, where recursive doubling
  /// waits log2 P times for the ranks of a core to take turns. Measured on 2 cores (2026-11-27,
  /// back to back, 4 B to 256 B, three jobs each, interleaved with Open MPI's vader): at P = 8
  /// 12-18 us against 14-46 (vader 13-23), at P = 4 3.8-7.6 against 5.2-11 (vader 3.4-8.8). At
  /// 1 and 2 KiB (2026-11-28, five jobs each, interleaved, medians): 0.98 and 0.64 of recursive
  /// doubling's time at P = 4, 0.72 and 0.91 at P = 8; at 4 KiB 1.13 and 1.05, so not from
  /// there. Since 2026-11-29 also at P = 3 (2.0-2.3 us against 3.3-3.6 from 4 B to 1 KiB), and
  /// where every core runs two ranks or more, the parameter server after it, or from 4 B beyond
  /// 5 ranks, below 64 KiB: two rounds of 2 (P - 1) messages in all. Measured on 2 cores
  /// (benchmark/default_vs_fixed, every algorithm in one job, blocks of calls back to back,
  /// 2026-11-29): at 16 KiB 6.2 us against the 8.5 of the tree by_size took at P = 4, 18.7
  /// against 27.0 at P = 8, 45.5 against 87.0 at P = 16; at 4 B 9.8 against 10.6 (P = 8,
  /// direct) and 23.6 against 57.3 (P = 16, recursive doubling); at 64 KiB 14.6 against the
  /// tree's 16.2 at P = 4, level at P = 8, 108 against 149 at P = 16; at 128 KiB behind
  /// halving-doubling at P = 4 and 8 (26.4 against 20.9, 90 against 61). Below 128 KiB until
  /// 2026-12-06, when it took 1.26x ring's time at P = 4, 64 KiB (39.5 us against 31.4) and
  /// 1.33x at P = 8 (134 against 101).
  ///
  /// Where some core runs three ranks or more (P = 5 on 2 cores), direct only below 512 B
  /// (`direct_below_if_over_two_per_cpu`), the parameter server from there, as between
  /// threads. Measured on 2 cores (benchmark/default_vs_fixed under gcl-launch, three jobs of
  /// seven rounds, 2026-12-07, an Intel host): at P = 5 direct took 7.5-7.7 us at 1 KiB
  /// against the parameter server's 6.2-6.5, 11.2-11.8 at 2 KiB against 7.3-8.3, 1.07-1.13x
  /// its time at 512 B, at most 1.08x below; at P = 3 and 4 level with it or ahead to 1 KiB.
  ///
  /// Ring runs in blocks of 1 MiB per rank, not the default 2: each chunk of a block (1 MiB /
  /// P) then fits its ring (4 MiB / P, `shm_options::ring_bytes`) whole, header included, so a
  /// sender writes it at once and goes on while its receiver reduces it straight out of the
  /// ring (`shm_options::combine_threshold`); a chunk as large as its ring made the sender wait, on
  /// every message, for the receiver to drain it, and where ranks share cores that wait is a
  /// switch. Measured on 2 cores (all_reduce, back to back, jobs interleaved, medians): at P =
  /// 2, five jobs, 0.86-0.92x the time at 1, 4, 16, 32 and 64 MiB (16 MiB 2.30 against 2.67
  /// ms), 0.95-0.99x at 2 and 8 MiB, either change alone slower at 2 to 8 MiB; at P = 4, eight
  /// jobs, 0.63-0.79x from 1 to 64 MiB (16 MiB 8.5 against 12.0 ms); at P = 8 and 16, where
  /// large messages went by cross-memory attach in 2 MiB blocks until 2026-11-27, 0.4-0.75x
  /// the time from 1 to 64 MiB (shm/options.hpp, `uses_cross_memory_attach`). At P > 2 each
  /// block's all-gather is one round through the share areas (`share_with_all`, which fits a
  /// block's chunks whole as the rings do).
  ///
  /// Between two processes, recursive doubling below 64 KiB, as between two threads: one
  /// message of the whole vector where halving-doubling and ring send two of half in turn.
  /// `default_vs_fixed`, P = 2, two jobs (2026-11-29): 3.9-4.0 us against 4.5-4.6 at 16 KiB,
  /// 6.9-7.0 against 8.0-8.3 at 32 KiB; at 64 KiB 1.04-1.07x the best.
  ///
  /// Where a power of two of ranks crowd the cores (at least two per CPU), halving-doubling
  /// from 64 KiB below 4 MiB (`halving_doubling_{from,below}_if_cores_crowded`, as between
  /// threads), ring in blocks from there. Timed on an AMD EPYC host of 2 cores (2026-12-08,
  /// processes under gcl-launch, back to back, slowest rank; benchmark/analysis.md, "shm:
  /// halving-doubling below 4 MiB where the ranks crowd the cores"): in `default_vs_fixed`,
  /// every algorithm in one job, halving-doubling took 0.26-0.36x ring's time from 128 KiB to
  /// 1 MiB at P = 4 (1 MiB 307 us against 1,188) and 0.31-0.55x at P = 8 (556 against 1,531
  /// at 512 KiB), 0.95x and 0.72x at 64 KiB; 2 and 4 MiB ahead of ring's blocks at P = 4
  /// (971 and 2,743 us against 2,704 and 3,920) and level at P = 8 at 4 MiB; two sweeps per
  /// algorithm, alternated, the same (P = 4, 1 MiB: 337-372 us against 1,367-1,500). Jobs of
  /// ring there run at one speed or at two to four times it, jobs of halving-doubling, with
  /// fewer, pairwise rounds, less so (four sweeps each, 2026-12-02, P = 4, 256 KiB: 71-348 us
  /// against 79-95). From 4 MiB ring in blocks, which took 0.39-0.81x halving-doubling's time
  /// from 4 to 64 MiB at P = 4 and 8 on another AMD EPYC host (2026-12-05, loops of calls: P =
  /// 4, 16 MiB 6.8 ms against 10.8; P = 8, 4 MiB 4.0 against 6.3), where halving-doubling from
  /// 2 MiB had been the rule from 2026-12-02 to 2026-12-05. On an Intel host (2026-12-06)
  /// halving-doubling was level with ring from 128 KiB at P = 8 and ahead at 64 KiB (87 us
  /// against 101).
  static constexpr all_reduce_thresholds default_all_reduce{
      .recursive_doubling_below = 16 * 1024,
      .ring_from = 512 * 1024,
      .tree_below_if_cores_shared = 64 * 1024,
      .tree_from_if_cores_shared = 16 * 1024,
      .direct_below_if_cores_shared = 4 * 1024,
      .parameter_server_below_if_cores_crowded = 64 * 1024,
      .ring_block_bytes = 1024 * 1024,
      .recursive_doubling_below_at_two_ranks = 64 * 1024,
      .halving_doubling_below_if_cores_crowded = 4 * 1024 * 1024,
      .halving_doubling_from_if_cores_crowded = 64 * 1024,
      .ring_from_if_cores_shared = 64 * 1024,
      .direct_below_if_over_two_per_cpu = 512};

  /// Joins the job described by `o` (rendezvous through rank 0).
  explicit shm_transport(shm_options const& o)
      : impl_(std::make_unique<detail::shm_impl>(check(o), nullptr)) {}

  /// n ranks as threads of this process, each with the transport a process would have (the
  /// same rendezvous, segment and rings), under a random token of the group's own.
  ///
  ///     gcl::shm_transport::group g(4, {.timeout = std::chrono::seconds{5}});
  ///     // on thread r:  gcl::communicator comm(g.connect(r));
  class group {
   public:
    explicit group(int size, shm_options opts = {})
        : opts_(std::move(opts)), state_(std::make_shared<detail::shm_group_state>()) {
      if (size < 1)
        throw usage_error("gcl: a group needs at least one rank, got " + std::to_string(size));
      opts_.size = size;
      if (opts_.token.empty()) {
        opts_.token = detail::random_token();
        opts_.token_source = "random";
      }
    }
    int size() const noexcept { return opts_.size; }
    shm_options const& options() const noexcept { return opts_; }
    /// Rank `rank`'s endpoint; blocks until the whole group has joined.
    shm_transport connect(int rank) const {
      if (rank < 0 || rank >= opts_.size)
        throw usage_error("gcl: shm connect: rank " + std::to_string(rank) +
                          " is out of range for a group of " + std::to_string(opts_.size));
      auto o = opts_;
      o.rank = rank;
      return shm_transport(check(o), state_);
    }
    /// Releases every blocked call of every rank with `errc::aborted`, now and from now on.
    void abort(std::string const& reason) { state_->abort(reason); }
    /// The error that ended the group, if one did.
    std::exception_ptr failure() const {
      if (!state_->aborted.load()) return nullptr;
      std::lock_guard lock(state_->mutex);
      return std::make_exception_ptr(transport_error(state_->code, "gcl: " + state_->reason));
    }

   private:
    shm_options opts_;
    std::shared_ptr<detail::shm_group_state> state_;
  };

  int rank() const noexcept { return impl_->rank(); }
  int size() const noexcept { return impl_->size(); }
  /// The options this rank was formed with.
  shm_options const& config() const noexcept { return impl_->options(); }
  /// Whether the job's ranks outnumber this host's CPUs, so that they take turns on the cores
  /// (`gcl::by_size` asks; the same answer on every rank).
  bool ranks_share_cores() const noexcept { return detail::ranks_outnumber_cpus(size()); }
  /// Whether they are at least twice this host's CPUs, so that every core runs two or more
  /// (`gcl::by_size` asks, for
  /// `all_reduce_thresholds::parameter_server_below_if_cores_crowded`).
  bool ranks_crowd_cores() const noexcept { return detail::ranks_crowd_cpus(size()); }
  /// Whether they are more than twice the host's CPUs, so that some core runs three or more
  /// (`gcl::by_size` asks, for `all_reduce_thresholds::direct_below_if_over_two_per_cpu`).
  bool ranks_over_two_per_cpu() const noexcept { return detail::ranks_outnumber_cpus(size(), 2); }
  /// Whether large messages from `peer` are copied once, straight from its memory
  /// (process_vm_readv allowed), rather than streamed through the ring.
  bool copies_once_from(int peer) const noexcept { return impl_->copies_once_from(peer); }

  /// n elements of T in this rank's part of the job's pool (`shm_options::pool_bytes`,
  /// GCL_SHM_POOL_BYTES), which every rank has mapped: a message of at least `offer_bytes` sent
  /// from there is read by its receiver where it lies, one copy at memcpy's speed, as between
  /// threads, where a message from anywhere else is streamed through a ring (two copies) or
  /// read by cross-memory attach. Throws `usage_error` naming the sizes when the pool has no
  /// room. Any thread may call it; the buffer may outlive the transport.
  ///
  ///     auto grads = transport.allocate<float>(n);
  template <class T>
  shm_buffer<T> allocate(std::size_t n) {
    return shm_buffer<T>::make(impl_->pool(), n);
  }
  /// How many messages this rank has sent from its pool (read in place by their receivers).
  std::uint64_t sent_from_pool() const noexcept { return impl_->sent_from_pool(); }
  /// How many bytes this rank has copied into its queue: messages that arrived before their
  /// receive was posted, each copied again when it is received (Open MPI's "unexpected"
  /// messages). A large message read from its sender's memory (cross-memory attach, the pool)
  /// is not: it waits uncopied for the receive that takes it, and is copied into the queue
  /// only if this rank waits long enough to sleep meanwhile (`shm_options::spin`), so that no
  /// sender waits on a sleeping rank, or if the receive that meets it does not match it (kept
  /// whole for the mismatch report). Nor is a message of 16 KiB or more in a ring: it waits
  /// there for its receive, unless its sender waits for room in that ring, or this rank may
  /// sleep, or a receive from that source meets it first.
  std::uint64_t bytes_queued() const noexcept { return impl_->bytes_queued(); }

  /// Bytes that `reduce_and_forward` combined straight from one ring into another (ring's
  /// scatter-reduce), never stored in this rank's buffer; the rest of what it forwarded went
  /// through `acc`.
  std::uint64_t bytes_forwarded() const noexcept { return impl_->bytes_forwarded(); }

  /// Which call the following messages belong to; carried in every message header and compared
  /// by the receiver, which throws `errc::mismatch` naming both sides.
  void set_call(call_info const& c) { impl_->set_call(c); }
  /// A communicator of context `context` is gone from this rank: its calls are forgotten, so
  /// that a new communicator taking the id again is checked from its #1.
  void end_context(std::uint32_t context) { impl_->end_context(context); }

  /// Eager: returns once `out` is in the ring, or copied by the receiver (a large message);
  /// waits only for room, which any call of the receiver makes.
  void send(int peer, tag tg, std::span<std::byte const> out) { impl_->send(peer, tg, out); }

  /// Blocks until exactly `in.size()` bytes from `peer` with `tg` are in `in`.
  void recv(int peer, tag tg, std::span<std::byte> in) { impl_->recv(peer, tg, in); }

  /// `send` then `recv`, with the receive posted first (the message lands straight in `in`).
  void sendrecv(int dst, tag send_tag, std::span<std::byte const> out, int src, tag recv_tag,
                std::span<std::byte> in) {
    impl_->sendrecv(dst, send_tag, out, src, recv_tag, in);
  }

  /// Sends `out` to each rank of `peers` and receives `ins[i]` from `peers[i]`, in one round
  /// (`sharing_transport`): `out` is copied once into this rank's share area of the segment,
  /// and each peer copies it from there, where the rings would copy it in and out once per
  /// peer. Returns once every peer has copied it. False, having sent nothing, when `out` or any
  /// of `ins` is larger than the share area (half a ring, `shm_options::ring_bytes`; none in a
  /// job of one or two ranks).
  bool share_with_all(std::span<int const> peers, tag tg, std::span<std::byte const> out,
                      std::span<std::span<std::byte> const> ins) {
    return impl_->share_with_all(peers, tg, out, ins);
  }

  /// `sendrecv`, the message received combined into `acc` as it arrives
  /// (`combining_transport`): reduced where it lies in the ring, or read out of the sender's
  /// memory a block at a time into a staging buffer that stays in the first-level cache, each
  /// block reduced into `acc` there. False (nothing sent) for an element larger than 4 KiB, and for
  /// a message under `shm_options::combine_threshold()` (by default 64 KiB; 4 MiB where large
  /// messages go by cross-memory attach).
  bool sendrecv_reduce(int dst, tag send_tag, std::span<std::byte const> out, int src, tag recv_tag,
                       std::span<std::byte> acc, combiner const& c) {
    return impl_->sendrecv_reduce(dst, send_tag, out, src, recv_tag, acc, c);
  }

  /// `recv`, the message combined into `acc` as it arrives (`forwarding_transport`), on the
  /// terms of `sendrecv_reduce`.
  bool recv_reduce(int src, tag tg, std::span<std::byte> acc, combiner const& c) {
    return impl_->recv_reduce(src, tg, acc, c);
  }

  /// Receives from `src`, combines with `acc`, and sends the result to `dst`
  /// (`forwarding_transport`): each piece of `src`'s message is combined where it lies in its
  /// ring straight into the message to `dst` in that rank's ring, so the result is written once
  /// and not stored here (`acc`'s contents afterwards are unspecified). False, as
  /// `sendrecv_reduce`, and also for an element size that does not divide 64 or a peer that is
  /// this rank.
  bool reduce_and_forward(int src, tag recv_tag, std::span<std::byte> acc, combiner const& c,
                          int dst, tag send_tag) {
    return impl_->reduce_and_forward(src, recv_tag, acc, c, dst, send_tag);
  }

  /// Whether `send(dst, out)` offers `out` where it lies rather than writing it into the ring,
  /// and so returns only once `dst` has read it (`forwarding_transport`): a message of at least
  /// `shm_options::pool_offer_threshold()` bytes in this rank's pool, or of `offer_bytes` read by
  /// cross-memory attach. Ring's scatter-reduce does not forward when its first send would be
  /// one: every rank would wait in that send for a rank that waits in its own.
  bool offers(int dst, std::span<std::byte const> out) const { return impl_->offers(dst, out); }

  /// A second endpoint of this rank with rings of its own, among the ranks `b` names
  /// (`forkable_transport`): the lane of a communicator's non-blocking collectives. Its
  /// segment is found by a new random token, which travels over this transport; it shares this
  /// transport's abort.
  shm_transport fork(fork_bootstrap& b) {
    std::array<char, 64> token{};
    if (b.rank == 0) detail::random_token("gcl-fork:").copy(token.data(), token.size() - 1);
    b.broadcast(std::as_writable_bytes(std::span(token)));
    auto o = impl_->options();
    o.size = b.size;
    o.rank = b.rank;
    o.token = token.data();
    o.token_source = "a fork of the job's transport";
    o.pool_bytes = 0;        // buffers come from the job's pool; the fork's segment needs none
    o.spread_ranks = false;  // the lane's thread stays beside its rank's
    o.global_ranks.clear();
    return shm_transport(check(o), impl_->group_state());
  }

  shm_transport(shm_transport&&) noexcept = default;
  shm_transport& operator=(shm_transport&&) noexcept = default;

 private:
  shm_transport(shm_options const& o, std::shared_ptr<detail::shm_group_state> state)
      : impl_(std::make_unique<detail::shm_impl>(o, std::move(state))) {}
  static shm_options const& check(shm_options const& o) {
    if (o.size < 1 || o.rank < 0 || o.rank >= o.size)
      throw usage_error("gcl: shm_options: rank " + std::to_string(o.rank) +
                        " is out of range for a job of size " + std::to_string(o.size));
    if (o.size > 1 && o.token.empty())
      throw usage_error(
          "gcl: shm_options: token is empty; the ranks of a job find each other by it (set "
          "GCL_TOKEN), or use shm_transport::group for a job of threads");
    if (o.timeout.count() <= 0) throw usage_error("gcl: shm_options: timeout must be positive");
    if (o.ring_size() < 4096)
      throw usage_error("gcl: shm_options: ring_bytes must be at least 4096, got " +
                        std::to_string(o.ring_size()));
    if (o.pool_bytes > (std::size_t{1} << 40))
      throw usage_error("gcl: shm_options: pool_bytes must be at most 2^40 (1 TiB), got " +
                        std::to_string(o.pool_bytes));
    return o;
  }
  std::unique_ptr<detail::shm_impl> impl_;
};

}  // namespace gcl
