#pragma once
/// \file
/// `inproc_transport`: ranks are threads of one process.
///
/// Every ordered pair of ranks has a channel (transport/inproc/channel.hpp), a FIFO that
/// neither side locks: a send fills a cell and publishes it, a receive finds the first cell of
/// its (source, tag) and copies out of it. A message of at most `inproc_options::eager_bytes`
/// (256 KiB where each rank has a core) is copied into the channel, and the send returns at
/// once (eager): into the cell, or from 4 KiB into the channel's staging ring, whose bytes
/// are written again only after a ring's worth of messages, once the receiver's cache has let
/// them go (inproc/channel.hpp). A larger one is offered: the
/// receiver copies it straight from the sender's buffer, one copy whichever of the two comes
/// first, and the send returns once it has. A sender does not wait for ever: after as long as
/// copying the message would take, it withdraws the offer and copies the bytes into the cell
/// itself, so that sends stay eager (ranks that all send before they receive still finish) at
/// twice the cost at worst. Cells and their buffers are reused: a warm transport allocates
/// nothing per message.
///
/// A blocked call polls for `inproc_options::spin`, then sleeps on its rank's condition
/// variable, which a peer signals only when the rank is asleep. Every wait is bounded by
/// `inproc_options::timeout` and woken by `group::abort`.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "../call_info.hpp"
#include "../combiner.hpp"
#include "../detail/call_progress.hpp"
#include "../detail/error_text.hpp"
#include "../detail/fence.hpp"
#include "../detail/host_cpus.hpp"
#include "../detail/status_lock.hpp"
#include "../error.hpp"
#include "../fork_bootstrap.hpp"
#include "../transport_hints.hpp"
#include "inproc/channel.hpp"

namespace gcl {

/// Options of `inproc_transport`, passed to `spawn` or to `inproc_transport::group`.
///
///     gcl::spawn<gcl::inproc_transport>(4, f, {.timeout = std::chrono::seconds{5}});
struct inproc_options {
  /// Bound on every blocking call; a call that waits longer throws `errc::timeout`, naming the
  /// ranks that hold the collective up. Long by default, as torch.distributed's 30 minutes: a
  /// rank may spend minutes evaluating or checkpointing between collectives. Tests set their own.
  std::chrono::milliseconds timeout{std::chrono::minutes{30}};
  /// How long a blocked call polls for its message before sleeping. Waking a sleeping thread
  /// costs microseconds (a futex call and a reschedule), which dominates small messages;
  /// polling yields the core, so ranks that outnumber the cores still make progress (where
  /// each rank has a core, only after its first 5 us: detail::polling_before_yielding). 0: sleep
  /// after a few rounds on the spot (no yielding). Unset: 2 ms where each rank has a core of
  /// its own, so that a rank that enters a call ahead of its peers (a training step's uneven
  /// work) is not woken from a sleep; 50 us where the ranks outnumber the cores
  /// (detail::default_spin says why). See doc/benchmarks.md for the measurements.
  std::optional<std::chrono::microseconds> spin;
  /// Messages up to this size are copied into the channel and the send returns at once; larger
  /// ones are copied once, by the receiver, from the sender's buffer. 0: `eager_threshold`'s
  /// default.
  std::size_t eager_bytes = 0;
  /// The smallest message `sendrecv_reduce` combines as it arrives (straight from the sender's
  /// buffer); smaller ones are received into scratch and reduced. 0: 4 MiB, or 256 KiB when
  /// the ranks outnumber the cores (`combine_threshold`).
  std::size_t combine_bytes = 0;
  /// Bytes of each (sender, receiver) channel's staging ring, where the messages copied into
  /// the channel beyond the cell's room, from 4 KiB (`inproc_transport::stage_from`), up to a
  /// quarter of the ring go in turn (inproc/channel.hpp, `stage`, says why); allocated when
  /// the channel first stages a message. 0: `ring_size`'s default.
  std::size_t ring_bytes = 0;

  /// `eager_bytes`, or its default for `ranks`: 256 KiB where each rank has a core, 16 KiB
  /// where the ranks outnumber the cores. Copying a message into the channel's ring and out
  /// again frees both sides at once and keeps the sender's buffer its own, where the one-copy
  /// offer holds the sender until the receiver has read its buffer, whose lines the sender
  /// must then take back from the receiver's cache when it next writes them (a reduction
  /// does, at once). Measured on 2 cores, P = 2, all_reduce back to back, three runs each: 8
  /// KiB to 512 KiB took 0.39-0.61x the time of the build before, which offered messages from
  /// 16 KiB (64 KiB 5.2-5.3 us against 9.2-9.3, 256 KiB 17.0-17.5 against 43.3-44.2), 1 to 4
  /// MiB level (messages of 512 KiB copied twice were 1.1-1.2x slower than offered). Where ranks
  /// share cores, every copy costs a core that another rank waits for: at P = 8, 1 to 16 MiB
  /// took 1.6-3.3x as long with copies up to 256 KiB in two rounds of four (1.1-2x in the two
  /// noisier ones).
  std::size_t eager_threshold(int ranks) const noexcept {
    if (eager_bytes != 0) return eager_bytes;
    return detail::ranks_outnumber_cpus(ranks) ? std::size_t{16} << 10 : std::size_t{256} << 10;
  }

  /// `ring_bytes`, or 4 MiB over the ranks, within [64 KiB, 2 MiB]: twice a core's
  /// second-level cache here at P = 2, and at most 4 MiB per rank where every pair talks.
  std::size_t ring_size(int ranks) const noexcept {
    if (ring_bytes != 0) return ring_bytes;
    auto const share = (std::size_t{4} << 20) / static_cast<std::size_t>(ranks < 1 ? 1 : ranks);
    return std::clamp<std::size_t>(share, std::size_t{64} << 10, std::size_t{2} << 20);
  }

  /// `combine_bytes`, or its default for `ranks`. Why a threshold: while the receiver
  /// combines, its sender waits for its offer to be taken, where a receive into scratch frees
  /// the sender after a copy (the fastest pass there is) and reduces afterwards. Where the
  /// buffers stay in the caches, that wait costs more than the scratch's round trip saves;
  /// from main memory, the reverse. Measured on 2 cores (all_reduce, ring, back to back,
  /// combining every message against none): at P = 2, 2.0-2.3x slower at 2 MiB and 1.2-1.4x
  /// at 4 MiB, 2x faster at 8 MiB and 1.3-2.3x at 16 MiB; at P = 4 (two ranks per core, which
  /// wait for the core anyway) level at 1 MiB, 2.2-2.6x faster from 4 MiB.
  std::size_t combine_threshold(int ranks) const noexcept {
    if (combine_bytes != 0) return combine_bytes;
    return detail::ranks_outnumber_cpus(ranks) ? std::size_t{256} << 10 : std::size_t{4} << 20;
  }
};

namespace detail {

// What other threads may need of a rank: a way to wake it, and where it is.
struct inproc_rank {
  // Wakes the rank when it sleeps. A peer that has made a change the rank may wait for
  // (published a message, took an offer) calls `wake`: a fence and one load when the rank is
  // awake; the mutex and a notify only when it sleeps. The sleeper registers in `sleepers`
  // before its last check, so one of the two always sees the other (detail/fence.hpp: the
  // waker's fence is free where the sleeper's can be made heavy).
  alignas(64) std::mutex bell_mutex;
  std::condition_variable bell;
  bool rung = false;  // under bell_mutex: something changed since the sleeper last looked
  std::atomic<int> sleepers{0};
  void wake(bool asymmetric) {
    light_fence(asymmetric);
    if (sleepers.load(std::memory_order_relaxed) == 0) return;
    std::lock_guard lock(bell_mutex);
    rung = true;
    bell.notify_all();
  }

  // Its collectives (written by the rank, under `status_mutex`, read by others under it: the
  // last sleeper's check, a timeout's report, a rank that ends), and whether its transport has
  // ended (its job is over: `progress` holds its last collective).
  alignas(64) status_lock status_mutex;
  call_progress progress;
  bool ended = false;
  std::atomic<int> waiting_for{-1};  // the rank it is blocked on, for timeout messages
};

class inproc_world {
 public:
  inproc_world(int size, inproc_options options)
      : paused_looks(looks_before_yielding(size)),
        polling_before_yielding(detail::polling_before_yielding(size)),
        eager_bytes(options.eager_threshold(size)),
        spin(options.spin.value_or(detail::default_spin(size))),
        offer_patience(options.spin ? *options.spin : std::min(spin, detail::shared_core_spin)),
        size_(size),
        options_(options),
        ranks_(std::make_unique<inproc_rank[]>(static_cast<std::size_t>(size))),
        channels_(static_cast<std::size_t>(size) * static_cast<std::size_t>(size)) {
    // 32 cells a batch up to P = 16, fewer above: a world whose every pair of ranks talks
    // (all_to_all) then holds about 512 P cells (channel.hpp says why many), each 256 bytes
    // and its room for inline bytes (inline_capacity, below): 9 MB at P = 8, 23 MB at P = 64.
    auto const batch = std::clamp<std::size_t>(512 / static_cast<std::size_t>(size), 4, 32);
    auto const ring = options_.ring_size(size);
    auto const room = inline_capacity(size, batch);
    // Messages' polled lines are demoted where each rank has a core of its own (a receiver on
    // the same core would find the line in that core's caches: inproc_channel::publish).
    bool const demote = !detail::ranks_outnumber_cpus(size);
    for (auto& c : channels_) c = std::make_unique<inproc_channel>(batch, room, ring, demote);
  }

  // The bytes a message may have in its cell: 4 KiB and 16 where the cells of a world whose
  // every pair of ranks talks take 16 MiB or less (up to P = 11), fewer above, down to 272.
  // A message in its cell follows the line the receiver polls, at an address it knows (a
  // buffer elsewhere is a second cache miss that waits for the first). Measured on 2 cores,
  // P = 2, all_reduce back to back, medians of seven rounds of 20,000 calls, against 272 in
  // the cell and the rest in a lent buffer (to 4 KiB) or the staging ring: 512 B 0.78-0.80 us
  // against 1.03-1.11, 1 KiB 0.86-0.90 against 1.26-1.28, 2 KiB 1.04-1.14 against 1.50-1.51,
  // 4 KiB 1.67-1.69 against 2.01-2.04 (1 KiB cells: 1 KiB 0.99, 4 KiB level). Open MPI's
  // shared memory took 1.12 us at 1 KiB, 2.70 at 4 KiB in the same hour.
  static std::size_t inline_capacity(int ranks, std::size_t batch) noexcept {
    auto const p = static_cast<std::size_t>(ranks);
    auto const fits = (std::size_t{16} << 20) / (p * p * batch);
    return std::clamp<std::size_t>(fits, 16 + 256, 16 + 4096);
  }

  int size() const noexcept { return size_; }
  inproc_options const& options() const noexcept { return options_; }
  inproc_rank& rank(int r) noexcept { return ranks_[static_cast<std::size_t>(r)]; }
  inproc_channel& channel(int from, int to) noexcept {
    return *channels_[static_cast<std::size_t>(from) * static_cast<std::size_t>(size_) +
                      static_cast<std::size_t>(to)];
  }
  // Some rank's transport has ended (then set_call looks for a disagreement with it).
  std::atomic<bool> any_ended{false};
  // Whether wake-ups use asymmetric fences (detail/fence.hpp).
  bool const asymmetric = asymmetric_fences_available();
  // How many looks a wait takes, a pause apart, before it starts to yield (host_cpus.hpp).
  int const paused_looks;
  // How long it then polls, a pause apart, before it yields between looks (host_cpus.hpp).
  std::chrono::nanoseconds const polling_before_yielding;
  // options().eager_threshold(size()), looked up once.
  std::size_t const eager_bytes;
  // How long a wait polls before it sleeps: options().spin, else detail::default_spin(size()).
  std::chrono::microseconds const spin;
  // How long a sender waits at least for its receiver to take an offer before it copies the
  // message into the channel (finish_offer): the whole `spin` if the options say how long to
  // poll, else no longer than the 50 us of ranks that share cores (where each rank has a core,
  // default_spin polls for 2 ms, and a sender whose receiver is still at work would wait as
  // long rather than copy and go on).
  std::chrono::microseconds const offer_patience;

  bool aborted() const noexcept { return aborted_.load(std::memory_order_acquire); }
  std::string abort_reason() {
    std::lock_guard lock(reason_mutex_);
    return reason_;
  }
  errc abort_code() {
    std::lock_guard lock(reason_mutex_);
    return code_;
  }
  // Wakes every blocked call of every rank; they throw `code` (errc::aborted: another rank
  // failed; errc::mismatch: ranks disagree about a call, which concerns every rank).
  // Idempotent: the first reason is kept, because later ones are usually consequences of it.
  void abort(std::string const& reason, errc code = errc::aborted) {
    std::vector<std::weak_ptr<inproc_world>> lanes;
    {
      std::lock_guard lock(reason_mutex_);
      if (aborted_.load()) return;
      reason_ = reason;
      code_ = code;
      aborted_.store(true, std::memory_order_release);
      lanes.swap(lanes_);
    }
    for (int r = 0; r < size_; ++r) {
      std::lock_guard lock(rank(r).bell_mutex);  // no sleeper misses the flag
      rank(r).bell.notify_all();
    }
    for (auto& l : lanes)
      if (auto lane = l.lock()) lane->abort(reason, code);
  }

  // A world forked from this one (inproc_transport::fork) stops when this one does.
  void adopt(std::shared_ptr<inproc_world> const& lane) {
    {
      std::lock_guard lock(reason_mutex_);
      if (!aborted_.load()) {
        std::erase_if(lanes_, [](auto const& l) { return l.expired(); });
        lanes_.push_back(lane);
        return;
      }
    }
    lane->abort(abort_reason(), abort_code());
  }

 private:
  int size_;
  inproc_options options_;
  std::unique_ptr<inproc_rank[]> ranks_;
  std::vector<std::unique_ptr<inproc_channel>> channels_;  // [from * size + to]
  std::atomic<bool> aborted_{false};
  std::mutex reason_mutex_;
  std::string reason_;
  errc code_ = errc::aborted;
  std::vector<std::weak_ptr<inproc_world>> lanes_;  // under reason_mutex_
};

// A receive posted by `irecv`, completed by whichever later call of its rank finds its message.
struct inproc_pending_recv {
  int source = 0;
  tag tg{};
  std::span<std::byte> destination;
  call_info call;
  std::uint64_t digest = 0;
  bool done = false;
  std::exception_ptr error;  // a mismatch found for it, thrown by its wait()
};

}  // namespace detail

/// A rank of a group of threads in one process. Create the group once and connect each rank,
/// or let `gcl::spawn` do both:
///
///     gcl::inproc_transport::group g(4);
///     // on thread r:  gcl::communicator comm(g.connect(r));
class inproc_transport {
 public:
  using options = inproc_options;
  /// The smallest message copied into its channel's staging ring (inproc/channel.hpp), when
  /// its cell has no room for it (in worlds of more than 11 ranks); smaller ones go in a
  /// buffer the channel lends, which the sender reuses at once and still has in its cache.
  /// Measured on 2 cores, P = 2, all_reduce back to back, three runs each, against the build
  /// before the ring: 8 KiB messages and up 0.4-0.6x the time, 4 KiB level, 2 KiB 1.3x
  /// (0.61-0.72 us against 0.47-0.56).
  static constexpr std::size_t stage_from = 4 * 1024;
  /// Where the default all_reduce switches algorithm between threads (measured back to back,
  /// doc/benchmarks.md), and ring's blocks: 16 MiB over the ranks (at P = 2, 8 MiB per rank),
  /// as the copies between threads go straight from buffer to buffer. Measured on 2 cores,
  /// back to back, against 2 MiB per rank: at P = 2 1.3-1.4x faster for 16 MiB and 1.1x for
  /// 64 MiB; level at P = 4.
  ///
  /// Where the threads outnumber the cores, blocks of at least 16 MiB, whatever P
  /// (`ring_block_bytes_if_cores_shared`): each of a block's 2 (P - 1) rounds then waits for
  /// threads to take turns on a core, and 16 MiB over the ranks made 2 MiB blocks at P = 8, eight
  /// blocks of 14 rounds for 16 MiB where the whole buffer takes 14. Measured on 2 cores
  /// (benchmark/default_vs_fixed, two jobs each way at P = 4, 5, 6 and 8, one at P = 3, seven
  /// rounds, 2026-12-07, an Intel host), the default's time over the best fixed algorithm's, before
  /// and after: P = 8, 8 MiB 1.25-1.76 and 1.06-1.22, 16 MiB 1.28-1.45 and 1.07-1.08; P = 4, 8 MiB
  /// 1.15-1.52 and 1.04-1.10, 16 MiB 1.29-1.42 and 0.99-1.08, 32 MiB 1.37-1.41 and 1.03-1.06;
  /// P = 3, 5 and 6, 16 MiB 1.13-1.6 and 1.02-1.10. Ring's blocks named outright (three jobs at
  /// P = 8, two at P = 3 to 6): at 16 MiB, 16 MiB blocks (the whole buffer) took 0.65-0.85x the
  /// time of the blocks of before; at 64 MiB, P = 6 and 8, blocks of 8 MiB took 0.83-0.93x the
  /// whole buffer's time in every job, of 16 MiB in four jobs of five.
  ///
  /// Where the threads outnumber the cores, the binomial tree from 16 to 32 KiB: each of its
  /// 2 (P - 1) messages waits for one switch to its sender, where halving-doubling's 2 P log2 P
  /// wait for more. Below 16 KiB recursive doubling stays ahead (its messages cost less than a
  /// switch). From 32 KiB the bytes cost more than the switches, and ring and halving-doubling
  /// move the fewest: ring (`ring_from_if_cores_shared`), halving-doubling instead where the
  /// threads crowd the cores and are a power of two, up to 2 MiB
  /// (`halving_doubling_{from,below}_if_cores_crowded`), as its log2 P rounds cost less than
  /// ring's 2 (P - 1) there. Measured on 2 cores (benchmark/default_vs_fixed, two jobs of nine
  /// rounds per P, 2026-12-06, an Intel host; the tree up to 128 KiB before): at 64 KiB the
  /// tree took 1.5-2.5x halving-doubling's time at P = 4 (36-63 us against 24-25), 1.7-2.0x at
  /// P = 5 (91-107 against 53-54), and ring 31-36 us against its 34-35 at P = 3; at 32 KiB
  /// 1.3-1.8x halving-doubling's at P = 4 and 2.0x ring's at P = 3 (34 us against 17). Where
  /// the tree was ahead it was by less: P = 6, 32 KiB 33-39 us against ring's 44-45; at P = 8
  /// the two jobs disagreed (64 KiB 131 and 71 against halving-doubling's 101 and 89). On the
  /// AMD host of 2026-12-01 the tree took 1.75x ring's time at P = 4, 64 KiB (68.6 us against
  /// 35.5). Before (2026-11-27, four to six jobs per algorithm): the tree 0.75-0.85x
  /// halving-doubling's time from 16 to 128 KiB at P = 8, level at P = 4, and 1.04-1.74x
  /// recursive doubling's below 16 KiB; halving-doubling 0.74-0.95x ring's from 256 KiB to
  /// 1 MiB, at P = 8 level at 2 MiB and 1.1x at 4 MiB (benchmark/analysis.md).
  ///
  /// Where the threads outnumber the cores, `direct` below 4 KiB (up to 5 of them,
  /// `by_size::direct_max_ranks`): one round, where recursive doubling waits log2 P times for
  /// the threads of a core to take turns. Measured on 2 cores (2026-11-27, back to back, 4 B to
  /// 256 B, two or three jobs each, interleaved): at P = 8 9-16 us against 17-21, at P = 4
  /// 4.4-6.3 against 5.5-9.7. At 1 and 2 KiB (2026-11-28, five jobs each, interleaved,
  /// medians): 0.70 and 0.71 of recursive doubling's time at P = 4, 0.72 and 0.94 at P = 8; at
  /// 4 KiB 0.81 at P = 4 but 0.92-1.23 at P = 8, so not from there. Since 2026-11-29 also at
  /// P = 3 (1.6-2.0 us against 2.8-3.0 from 4 B to 1 KiB), and where every core runs two
  /// threads or more, the parameter server after it, or from 4 B beyond 5 threads, below
  /// 32 KiB: two rounds of 2 (P - 1) messages in all. Measured on 2 cores
  /// (benchmark/default_vs_fixed, every algorithm in one job, blocks of calls back to back,
  /// 2026-11-29): at 16 KiB 5.9 us against the 8.5 of the tree by_size took at P = 4, 13.6
  /// against 24.0 at P = 8, 31.6 against 61.3 at P = 16; at 4 B 6.0 against 6.8 (P = 8,
  /// direct) and 12.2 against 29.1 (P = 16, recursive doubling). At 32 KiB it took 13.2 us at
  /// P = 4 (ring 10.0) and 847 at P = 16 (tree 73), and direct 452 at P = 4: from there the
  /// messages are offers (`inproc_options::eager_threshold`, 16 KiB where the threads
  /// outnumber the cores), and each of direct's sends, and each worker's, waits for its
  /// receiver, itself sending or receiving another, up to its patience (`spin`) before it
  /// copies the message into the channel. With `eager_bytes` at 128 KiB direct at P = 4 took as
  /// long at 32 and 64 KiB as at 16 (a loaded machine: 4.2 and 4.1 against 2.4 ms, where the
  /// default took 33.6 and 41.8 against 3.9).
  ///
  /// Where some core runs three threads or more (P = 5 on 2 cores), direct only below 512 B
  /// (`direct_below_if_over_two_per_cpu`), the parameter server from there: each of direct's
  /// P - 1 messages a thread waits behind two others for its sender's turn. Measured on 2
  /// cores (benchmark/default_vs_fixed, three jobs of seven rounds, 2026-12-07, an Intel host):
  /// at P = 5 direct took 5.7-6.2 us at 1 KiB against the parameter server's 4.5-5.5, 7.0-9.3
  /// at 2 KiB against 4.9-6.6, level from 4 B to 512 B (8 and 16 B 3.1-4.0 against 3.4-3.9);
  /// at P = 3 and 4, where no core runs more than two, direct stayed level with the parameter
  /// server or ahead to 2 KiB.
  ///
  /// Between two threads, recursive doubling below 64 KiB: one message of the whole vector,
  /// where halving-doubling and ring send two of half, one after the other. Since a message
  /// of up to 4 KiB lies in its cell and the cell after it is emptied ahead (2026-11-29):
  /// `default_vs_fixed`, P = 2, three jobs, recursive doubling 4.1-4.4 us at 16 KiB against
  /// the 5.5-5.8 of the algorithm by_size took, 6.2-6.5 against 8.0-8.4 at 32 KiB; at 64 KiB
  /// 1.04-1.12x the best (ring or halving-doubling).
  static constexpr all_reduce_thresholds default_all_reduce{
      .recursive_doubling_below = 16 * 1024,
      .ring_from = 2 * 1024 * 1024,
      .tree_below_if_cores_shared = 32 * 1024,
      .tree_from_if_cores_shared = 16 * 1024,
      .direct_below_if_cores_shared = 4 * 1024,
      .parameter_server_below_if_cores_crowded = 32 * 1024,
      .ring_block_total_bytes = 16 * 1024 * 1024,
      .recursive_doubling_below_at_two_ranks = 64 * 1024,
      .halving_doubling_below_if_cores_crowded = 2 * 1024 * 1024,
      .halving_doubling_from_if_cores_crowded = 32 * 1024,
      .ring_from_if_cores_shared = 32 * 1024,
      .direct_below_if_over_two_per_cpu = 512,
      .ring_block_bytes_if_cores_shared = 16 * 1024 * 1024};

  /// The shared state of `size` ranks. Outlives nothing: every transport keeps it alive.
  class group {
   public:
    explicit group(int size, inproc_options opts = {})
        : world_(std::make_shared<detail::inproc_world>(check_size(size), opts)) {}
    int size() const noexcept { return world_->size(); }
    /// The endpoint of `rank`; call once per rank, from any thread.
    inproc_transport connect(int rank) const {
      if (rank < 0 || rank >= world_->size())
        throw usage_error("gcl: inproc connect: rank " + std::to_string(rank) +
                          " is out of range for a group of " + std::to_string(world_->size()));
      return inproc_transport(world_, rank);
    }
    /// Releases every blocked call of every rank with `errc::aborted`, now and from now on.
    void abort(std::string const& reason) { world_->abort(reason); }
    /// The error that ended the group, if one did (for `spawn`: a rank may have returned before
    /// another found that the two disagreed about a call they both made).
    std::exception_ptr failure() const {
      if (!world_->aborted()) return nullptr;
      return std::make_exception_ptr(
          transport_error(world_->abort_code(), "gcl: " + world_->abort_reason()));
    }

   private:
    static int check_size(int n) {
      if (n < 1)
        throw usage_error("gcl: a group needs at least one rank, got " + std::to_string(n));
      return n;
    }
    std::shared_ptr<detail::inproc_world> world_;
  };

  /// A pending `irecv`. Completes when a later call of this rank (`wait`, `test`, or another
  /// receive) finds its message: ranks are threads, and nobody else copies into its buffer.
  class request {
   public:
    request(request&& other) noexcept
        : self_(std::exchange(other.self_, nullptr)), post_(std::move(other.post_)) {}
    request& operator=(request&& other) noexcept {
      if (this != &other) {
        cancel();
        self_ = std::exchange(other.self_, nullptr);
        post_ = std::move(other.post_);
      }
      return *this;
    }
    ~request() { cancel(); }
    /// Blocks until the message is in the buffer (or throws, as `recv` would).
    void wait() {
      if (!self_) return;
      auto* self = std::exchange(self_, nullptr);
      self->wait_pending(*post_);
    }
    /// True once the message is in the buffer; never blocks. Throws what `wait()` would.
    bool test() {
      if (!self_) return true;
      self_->throw_if_aborted("irecv from", post_->source);
      self_->serve(post_->source, post_->tg);
      if (!post_->done) return false;
      wait();
      return true;
    }

   private:
    friend class inproc_transport;
    request() = default;
    void cancel() noexcept {
      if (self_) std::erase(self_->pending_, post_.get());
      self_ = nullptr;
    }
    inproc_transport* self_ = nullptr;  // null once complete
    std::unique_ptr<detail::inproc_pending_recv> post_;
  };

  int rank() const noexcept { return rank_; }
  int size() const noexcept { return world_->size(); }
  /// Whether the group's threads outnumber this host's CPUs, so that they take turns on the
  /// cores (`gcl::by_size` asks; the same answer on every rank).
  bool ranks_share_cores() const noexcept { return detail::ranks_outnumber_cpus(size()); }
  /// Whether they are at least twice this host's CPUs, so that every core runs two or more
  /// (`gcl::by_size` asks, for
  /// `all_reduce_thresholds::parameter_server_below_if_cores_crowded`).
  bool ranks_crowd_cores() const noexcept { return detail::ranks_crowd_cpus(size()); }
  /// Whether they are more than twice this host's CPUs, so that some core runs three or more
  /// (`gcl::by_size` asks, for `all_reduce_thresholds::direct_below_if_over_two_per_cpu`).
  bool ranks_over_two_per_cpu() const noexcept { return detail::ranks_outnumber_cpus(size(), 2); }

  /// A communicator of context `context` is gone from this rank: its calls are forgotten, so
  /// that a new communicator taking the id again is checked from its #1 (call_aware_transport).
  void end_context(std::uint32_t context) {
    auto& me = world_->rank(rank_);
    std::lock_guard lock(me.status_mutex);
    me.progress.forget(context);
  }

  /// Which call the following messages belong to; compared with the peer's on every receive.
  /// When a collective begins, messages of it that peers sent ahead are checked at its first
  /// send or receive: a peer that called another collective under the same number is
  /// `errc::mismatch` there and at once. Not here: reading the peers' cells would put cache
  /// misses before this rank's first message, and a peer waiting for that message would wait
  /// for them too (measured: at P = 2, 4 B, the ranks then take turns at a 0.15 us longer call).
  void set_call(call_info const& c) {
    call_ = c;
    digest_ = detail::call_digest(c);
    auto& me = world_->rank(rank_);
    {
      std::lock_guard lock(me.status_mutex);
      me.progress.set(c);
    }
    arrivals_due_ = c.kind != call_kind::point_to_point;
    if (!arrivals_due_) return;
    if (world_->any_ended.load(std::memory_order_seq_cst))
      for (int r = 0; r < world_->size(); ++r)
        if (auto what = ended_disagreement(r); !what.empty()) fail_mismatch(what);
  }

  /// Eager up to `eager_bytes`; larger messages return once the receiver has copied them (or
  /// the sender has copied them into the channel after waiting as long as that copy takes).
  void send(int peer, tag tg, std::span<std::byte const> out) {
    throw_if_aborted("send to", peer);
    auto* offer = post(peer, tg, out);
    if (offer == nullptr) return check_arrivals_if_due();
    try {
      check_arrivals_if_due();
    } catch (...) {
      finish_offer(*offer, peer, true);  // `out` must not be read after we return
      throw;
    }
    finish_offer(*offer, peer);
  }

  /// Blocks until exactly `in.size()` bytes from `peer` with `tg` are in `in`.
  void recv(int peer, tag tg, std::span<std::byte> in) { receive(peer, tg, in, nullptr); }

  /// Sends to `dst` and receives from `src` at once: a large outgoing message is copied by its
  /// receiver while this rank copies its own incoming one.
  void sendrecv(int dst, tag send_tag, std::span<std::byte const> out, int src, tag recv_tag,
                std::span<std::byte> in) {
    exchange(dst, send_tag, out, src, recv_tag, in, nullptr);
  }

  /// `sendrecv`, the message received combined into `acc` (`combining_transport`): straight
  /// from the sender's memory (or from the cell, after a sender tired of waiting withdrew).
  /// False, having done nothing, below `options().combine_threshold(size())`.
  bool sendrecv_reduce(int dst, tag send_tag, std::span<std::byte const> out, int src, tag recv_tag,
                       std::span<std::byte> acc, combiner const& c) {
    if (acc.size() < world_->options().combine_threshold(size())) return false;
    exchange(dst, send_tag, out, src, recv_tag, acc, &c);
    return true;
  }

  /// Posts a receive and returns; `wait()` or `test()` the request. Keep `in` alive until then.
  /// The transport must stay where it is (not moved) while the request is pending.
  request irecv(int peer, tag tg, std::span<std::byte> in) {
    throw_if_aborted("irecv from", peer);
    check_arrivals_if_due();
    request r;
    if (!has_pending(peer, tg)) {
      if (auto* cell = find(peer, tg)) {
        // The message is already here: take it now, so that receives complete in post order
        // even if their requests are waited on in another order.
        take(*cell, peer, tg, in, call_, digest_);
        return r;
      }
    }
    r.post_ = std::make_unique<detail::inproc_pending_recv>();
    *r.post_ = {peer, tg, in, call_, digest_, false, nullptr};
    pending_.push_back(r.post_.get());
    r.self_ = this;
    return r;
  }

  /// A second endpoint of this rank on channels of its own, among the ranks `b` names
  /// (`forkable_transport`): the lane of a communicator's non-blocking collectives. Its group
  /// stops when this one's does.
  inproc_transport fork(fork_bootstrap& b) {
    // Lane rank 0 makes the group; the others learn where it is over this transport (ranks are
    // threads of one process) and hold it before rank 0 lets go of the copy it handed out.
    std::shared_ptr<detail::inproc_world> lane;
    auto handoff = std::make_unique<std::shared_ptr<detail::inproc_world>>();
    std::uintptr_t where = 0;
    if (b.rank == 0) {
      lane = std::make_shared<detail::inproc_world>(b.size, world_->options());
      world_->adopt(lane);
      *handoff = lane;
      where = reinterpret_cast<std::uintptr_t>(handoff.get());
    }
    try {
      b.broadcast(std::as_writable_bytes(std::span(&where, 1)));
      if (b.rank != 0) lane = *reinterpret_cast<std::shared_ptr<detail::inproc_world>*>(where);
      b.barrier();
    } catch (...) {
      // A rank that failed in between may be about to read the handoff: left to leak.
      if (b.rank == 0) (void)handoff.release();
      throw;
    }
    return inproc_transport(std::move(lane), b.rank);
  }

  inproc_transport(inproc_transport&& other) noexcept
      : world_(std::move(other.world_)),
        rank_(other.rank_),
        call_(other.call_),
        digest_(other.digest_),
        pending_(std::move(other.pending_)),
        arrivals_due_(other.arrivals_due_) {}
  inproc_transport& operator=(inproc_transport&& other) noexcept {
    if (this != &other) {
      end();
      world_ = std::move(other.world_);
      rank_ = other.rank_;
      call_ = other.call_;
      digest_ = other.digest_;
      pending_ = std::move(other.pending_);
      arrivals_due_ = other.arrivals_due_;
    }
    return *this;
  }
  ~inproc_transport() { end(); }

 private:
  using cell_t = detail::inproc_cell;

  // recv, or with `combine` the receiving half of sendrecv_reduce.
  void receive(int peer, tag tg, std::span<std::byte> in, combiner const* combine) {
    throw_if_aborted("recv from", peer);
    check_arrivals_if_due();
    detail::inproc_cell* cell = nullptr;
    auto found = [&] {
      if (!pending_.empty()) {
        serve(peer, tg);
        if (has_pending(peer, tg)) return false;  // earlier irecvs take the earlier messages
      }
      return (cell = find(peer, tg)) != nullptr;
    };
    if (!found())
      wait(peer, found, [&] { return timeout_error("recv from", peer, tg, in.size()); });
    take(*cell, peer, tg, in, call_, digest_, combine);
  }

  // sendrecv, or with `combine` sendrecv_reduce.
  void exchange(int dst, tag send_tag, std::span<std::byte const> out, int src, tag recv_tag,
                std::span<std::byte> in, combiner const* combine) {
    throw_if_aborted("send to", dst);
    auto* offer = post(dst, send_tag, out);
    if (offer == nullptr) return receive(src, recv_tag, in, combine);
    try {
      receive(src, recv_tag, in, combine);
    } catch (...) {
      finish_offer(*offer, dst, true);  // `out` must not be read after we return
      throw;
    }
    finish_offer(*offer, dst);
  }

  inproc_transport(std::shared_ptr<detail::inproc_world> world, int rank)
      : world_(std::move(world)), rank_(rank) {
    auto& me = world_->rank(rank_);
    std::lock_guard lock(me.status_mutex);
    me.ended = false;  // connected again after an earlier transport of this rank ended
  }

  // Publishes `out` to `peer`: copied into the channel (the cell, the staging ring, or the
  // cell's lent buffer; returns null), or offered (returns the cell, which finish_offer must
  // see through before `out` may go).
  cell_t* post(int peer, tag tg, std::span<std::byte const> out) {
    auto& ch = world_->channel(rank_, peer);
    bool const eager = out.size() <= world_->eager_bytes;
    // A message to itself is never offered: this rank would be waiting for itself.
    bool const offer = !eager && peer != rank_;
    // Every message above the cell's own room gets a lent buffer, staged and offered ones
    // too, so that whether the ring has room or an offer is withdrawn (matters of timing)
    // never decides whether a warm transport allocates.
    auto& c = ch.next(out.size());
    bool const stages = eager && out.size() > c.inline_capacity && out.size() >= stage_from;
    std::byte* const staged = stages ? ch.stage(out.size()) : nullptr;
    c.call = call_;  // a line the receiver reads only when the digests differ
    std::byte const* bytes = out.data();
    if (!offer) {
      std::byte* to = staged != nullptr ? staged : c.room_for(out.size());
      if (!out.empty()) std::memcpy(to, out.data(), out.size());
      bytes = to;
    }
    // The line the receiver polls, written last and at once: written before the bytes, it
    // could be read between its stores (the receiver polls it), and each store after a read
    // waits for the receiver's copy to be invalidated. Measured at P = 2, all_reduce back to
    // back, three rounds: 64 B 0.52-0.53 us against 0.61-0.63, 16 KiB 5.6 against 5.8-5.9.
    c.kind = call_.kind;
    c.tg = tg;
    c.size = out.size();
    c.sequence = call_.sequence;
    c.digest = digest_;
    c.bytes = bytes;
    ch.publish(offer ? cell_t::offered : cell_t::ready);
    world_->rank(peer).wake(world_->asymmetric);
    return offer ? &c : nullptr;
  }

  // Waits until the receiver has copied the offered bytes, for at most about as long as
  // copying them would take (at 4 bytes per ns, slower than any memory copy measured here);
  // then copies them into the cell: the offer can cost at most twice the copy. `cancel`: copy
  // them now (the call is failing).
  void finish_offer(cell_t& c, int peer, bool cancel = false) {
    auto const patience = std::max<std::chrono::nanoseconds>(std::chrono::nanoseconds(c.size / 4),
                                                             world_->offer_patience);
    if (!cancel) {
      auto settled = [&] { return c.state.load(std::memory_order_acquire) == cell_t::taken; };
      try {
        if (!settled()) await(patience, settled, peer);
      } catch (...) {  // a disagreement found while waiting: `out` goes with the exception
        withdraw(c, peer);
        throw;
      }
      if (settled()) return;
    }
    withdraw(c, peer);
    if (!cancel) throw_if_aborted("send to", peer);
  }

  // The offer ends now: its bytes are copied into the cell, unless the receiver is copying
  // them, a memcpy that ends whatever happens to the group.
  void withdraw(cell_t& c, int peer) noexcept {
    auto expected = cell_t::offered;
    if (c.state.compare_exchange_strong(expected, cell_t::withdrawing, std::memory_order_acq_rel)) {
      std::memcpy(c.data(), c.bytes, c.size);
      c.bytes = c.data();  // published by `ready`'s release
      c.state.store(cell_t::ready, std::memory_order_release);
      world_->rank(peer).wake(world_->asymmetric);
      return;
    }
    while (c.state.load(std::memory_order_acquire) != cell_t::taken) std::this_thread::yield();
  }

  // The first message from `peer` with `tg` not yet consumed, or null.
  cell_t* find(int peer, tag tg) const {
    for (auto* c = world_->channel(peer, rank_).first(); c != nullptr;
         c = detail::inproc_channel::after(c))
      if (!c->consumed && c->tg == tg) return c;
    return nullptr;
  }

  // Copies the message in `c` (from `peer`) into `in`, which was posted by a call `mine`, and
  // consumes it (with `combine`: combines it into `in`); a message of another size or call is
  // left where it is (nothing lost) and reported, naming both sides.
  void take(cell_t& c, int peer, tag tg, std::span<std::byte> in, call_info const& mine,
            std::uint64_t mine_digest, combiner const* combine = nullptr) {
    auto land = [&](std::byte const* from) {
      if (in.empty()) return;
      if (combine != nullptr)
        (*combine)(in.data(), from, in.size());
      else
        std::memcpy(in.data(), from, in.size());
    };
    if (c.size != in.size() || c.sequence != mine.sequence || c.digest != mine_digest) {
      // Another collective under a number this rank is in or has finished: a disagreement
      // about the call, which every rank learns; otherwise, a point-to-point mistake.
      auto const& progress = world_->rank(rank_).progress;
      auto v = progress.check(c.call);
      if (v == detail::call_progress::verdict::conflict ||
          v == detail::call_progress::verdict::stale)
        fail_mismatch(progress.disagreement(rank_, peer, c.call));
      throw mismatch_error(peer, tg, in.size(), mine, c.size, c.call);
    }
    auto st = c.state.load(std::memory_order_acquire);
    if (st == cell_t::offered &&
        c.state.compare_exchange_strong(st, cell_t::copying, std::memory_order_acq_rel)) {
      land(c.bytes);
      world_->channel(peer, rank_).consume(c);
      c.state.store(cell_t::taken, std::memory_order_release);
      world_->rank(peer).wake(world_->asymmetric);
      return;
    }
    // Ready, or being withdrawn: the sender is copying it into the cell (a memcpy).
    while (st != cell_t::ready) {
      std::this_thread::yield();
      st = c.state.load(std::memory_order_acquire);
    }
    land(c.bytes);
    world_->channel(peer, rank_).consume(c);
  }

  bool has_pending(int peer, tag tg) const {
    return std::any_of(pending_.begin(), pending_.end(),
                       [&](auto* p) { return p->source == peer && p->tg == tg; });
  }

  // Gives the pending irecvs for (peer, tg), oldest first, the messages that have arrived.
  void serve(int peer, tag tg) {
    for (std::size_t i = 0; i < pending_.size();) {
      auto* p = pending_[i];
      if (p->source != peer || p->tg != tg) {
        ++i;
        continue;
      }
      auto* c = find(peer, tg);
      if (c == nullptr) return;
      try {
        take(*c, peer, tg, p->destination, p->call, p->digest);
      } catch (...) {
        p->error = std::current_exception();
      }
      p->done = true;
      pending_.erase(pending_.begin() + static_cast<std::ptrdiff_t>(i));
    }
  }

  void wait_pending(detail::inproc_pending_recv& p) {
    auto ready = [&] {
      serve(p.source, p.tg);
      return p.done;
    };
    if (!ready())
      wait(p.source, ready,
           [&] { return timeout_error("irecv from", p.source, p.tg, p.destination.size()); });
    if (p.error) std::rethrow_exception(p.error);
  }

  // Waits for `ready()` up to the timeout; throws the abort's error, or `timed_out()`'s.
  template <class Ready, class TimedOut>
  void wait(int peer, Ready ready, TimedOut timed_out) {
    if (await(world_->options().timeout, ready, peer)) return;
    if (world_->aborted()) throw aborted_error("recv from", peer);
    throw timed_out();
  }

  // Polls `ready()` for `spin`, then sleeps until a peer wakes this rank, re-checking it each
  // time, for up to `limit` in all. False if it is not ready by then, or the group was aborted.
  template <class Ready>
  bool await(std::chrono::nanoseconds limit, Ready& ready, int peer) {
    using clock = std::chrono::steady_clock;
    // A few rounds on the spot, without reading the clock: the message is often a cache miss
    // away (one look only where ranks outnumber the cores: inproc_world::paused_looks).
    for (int round = 0; round < world_->paused_looks; ++round) {
      if (ready()) return true;
      detail::cpu_relax();
    }
    auto const start = clock::now();
    auto const deadline = start + limit;
    if (auto const spin = world_->spin; spin.count() > 0) {
      // Then yield, so that a rank sharing this core (more ranks than cores) runs and sends it.
      auto const give_up = std::min(deadline, start + spin);
      detail::between_looks wait_a_little(start + world_->polling_before_yielding);
      for (unsigned round = 0;; ++round) {
        if (ready()) return true;
        if (world_->aborted()) return false;
        if (round % 8 == 0) {
          auto const now = clock::now();
          if (now >= give_up) break;
          wait_a_little.at(now);
        }
        wait_a_little();
      }
    }
    auto& me = world_->rank(rank_);
    me.waiting_for.store(peer, std::memory_order_relaxed);
    struct unwind {
      detail::inproc_rank& me;
      ~unwind() { me.waiting_for.store(-1, std::memory_order_relaxed); }
    } reset{me};
    for (bool first = true;; first = false) {
      // About to sleep, or woken: messages from ranks this one is not reading may show that
      // ranks disagree about the call. Ranks that only receive in calls they disagree about
      // (different roots of a reduce) exchange no message that could show it: the last of them
      // to get here sees the others' calls.
      if (call_.kind != call_kind::point_to_point) {
        check_arrivals();
        if (first) check_peers_agree();
      }
      // Registered before the last look, so that a peer that changes something after it
      // sees a sleeper and rings. `ready()` is never evaluated under the bell's mutex: it may
      // take an offer and ring the sender's bell.
      me.sleepers.fetch_add(1, std::memory_order_seq_cst);
      struct awake {
        detail::inproc_rank& me;
        ~awake() { me.sleepers.fetch_sub(1, std::memory_order_relaxed); }
      } registered{me};
      detail::heavy_fence(world_->asymmetric);
      if (ready()) return true;
      if (world_->aborted()) return false;
      std::unique_lock lock(me.bell_mutex);
      bool const news =
          me.bell.wait_until(lock, deadline, [&] { return me.rung || world_->aborted(); });
      me.rung = false;
      if (!news) {
        lock.unlock();
        return ready();
      }
    }
  }

  // The first send or receive of a collective: check_arrivals, once (set_call says why there),
  // of the first message from each peer. Looking past it reads the cell after the last
  // message, which its sender has just emptied for the next: a cache miss on every call that
  // the rank waits out before its first message. Measured at P = 2, all_reduce back to back
  // between two bound threads, medians of 20,000 calls, four runs of each interleaved (with
  // consume()'s prefetch in both): 4 B 0.48-0.50 us against 0.50-0.53, 32 B to 512 B level.
  // The messages behind the first are checked where the rank waits (await) and when its
  // transport ends: as a message may arrive just after any look, no look is the only chance
  // to see it.
  void check_arrivals_if_due() {
    if (!arrivals_due_) return;
    arrivals_due_ = false;
    check_arrivals(true);
  }

  // Holding no lock: the messages that have arrived for this rank (with `first_only`, the
  // first from each peer), checked against its own calls. One of a collective this rank is in
  // under another call, or finished without reading it, is a disagreement about the call: ends
  // the group with errc::mismatch.
  void check_arrivals(bool first_only = false) {
    auto const& mine = world_->rank(rank_).progress;  // written only by this thread
    for (int r = 0; r < world_->size(); ++r)
      for (auto* c = world_->channel(r, rank_).first(); c != nullptr;
           c = first_only ? nullptr : detail::inproc_channel::after(c)) {
        if (c->consumed || c->kind == call_kind::point_to_point) continue;
        // This rank's current call, or a later one: nothing to say yet (without reading the
        // message's second cache line).
        if (c->sequence > mine.started() ||
            (c->sequence == mine.started() && mine.in_call() && c->digest == digest_))
          continue;
        auto v = mine.check(c->call);
        if (v == detail::call_progress::verdict::conflict ||
            v == detail::call_progress::verdict::stale)
          fail_mismatch(mine.disagreement(rank_, r, c->call));
      }
  }

  // This rank's job is over. Unless an exception is on its way out (the group is then aborted
  // with that error, which is the cause), the other ranks learn its last collective: one that
  // has begun a later collective, or another call under the same number, will never be joined
  // by this rank, which is a disagreement about the calls, not a reason to wait for a timeout.
  // So is a message of a collective that this rank leaves unread.
  void end() noexcept {
    if (!world_ || std::uncaught_exceptions() > 0) return;
    pending_.clear();
    try {
      auto& me = world_->rank(rank_);
      call_info last;
      {
        std::lock_guard lock(me.status_mutex);
        me.ended = true;
        last = me.progress.last();
      }
      world_->any_ended.store(true, std::memory_order_seq_cst);
      for (int r = 0; r < world_->size(); ++r) {
        if (r == rank_) continue;
        auto& other = world_->rank(r);
        std::unique_lock lock(other.status_mutex);
        auto what = other.progress.ended_disagreement(r, rank_, last);
        lock.unlock();
        if (!what.empty()) return world_->abort(what, errc::mismatch);
      }
      call_ = call_info{};
      check_arrivals();
    } catch (transport_error const&) {  // check_arrivals found a disagreement: the group knows
    } catch (...) {  // out of memory for a message: the others' timeout still ends their wait
    }
  }

  // What rank r's end shows to this rank (its transport is gone, and this rank has begun a
  // collective r never called), or "".
  std::string ended_disagreement(int r) const {
    if (r == rank_) return {};
    call_info last;
    {
      auto& other = world_->rank(r);
      std::lock_guard lock(other.status_mutex);
      if (!other.ended) return {};
      last = other.progress.last();
    }
    return world_->rank(rank_).progress.ended_disagreement(rank_, r, last);
  }

  // If another rank is inside a collective under the number of ours and it is another call,
  // ends the group with errc::mismatch (which wakes this rank too).
  void check_peers_agree() {
    for (int r = 0; r < world_->size(); ++r) {
      if (r == rank_) continue;
      auto& other = world_->rank(r);
      std::unique_lock lock(other.status_mutex);
      if (other.progress.check(call_) != detail::call_progress::verdict::conflict) continue;
      auto what = other.progress.disagreement(r, rank_, call_);
      lock.unlock();
      world_->abort(what, errc::mismatch);
      return;
    }
  }

  void throw_if_aborted(char const* what, int peer) const {
    if (world_->aborted()) throw aborted_error(what, peer);
  }

  transport_error mismatch_error(int peer, tag tg, std::size_t expected, call_info const& mine,
                                 std::size_t sent, call_info const& theirs) const {
    return transport_error(
        errc::mismatch, detail::rank_prefix(rank_) + "expected " + std::to_string(expected) +
                            " bytes for " + describe(mine) + " from rank " + std::to_string(peer) +
                            " (" + detail::tag_text(tg) + "), but rank " + std::to_string(peer) +
                            " sent " + std::to_string(sent) + " bytes for " + describe(theirs));
  }
  // Who holds the call up, and what this rank has received but not read.
  transport_error timeout_error(char const* what, int peer, tag tg, std::size_t bytes) const {
    std::vector<detail::rank_status> all;
    for (int r = 0; r < world_->size(); ++r) {
      auto& other = world_->rank(r);
      std::lock_guard lock(other.status_mutex);
      detail::rank_status st{r,
                             true,
                             other.progress.started(),
                             other.progress.in_call(),
                             other.waiting_for.load(std::memory_order_relaxed),
                             {}};
      if (auto const* c = other.progress.recall(st.started)) st.call = *c;
      all.push_back(st);
    }
    std::string unread;
    int unread_count = 0;
    for (int r = 0; r < world_->size(); ++r)
      for (auto* c = world_->channel(r, rank_).first(); c != nullptr;
           c = detail::inproc_channel::after(c))
        if (!c->consumed && unread_count++ < 4)
          unread += std::string(unread.empty() ? "" : ", ") + std::to_string(c->size) +
                    " bytes from rank " + std::to_string(r) + " (" + detail::tag_text(c->tg) +
                    ", " + describe(c->call) + ")";
    if (unread_count > 0)
      unread = ". Received here but not read: " + unread + (unread_count > 4 ? ", ..." : "");
    return transport_error(
        errc::timeout,
        detail::timeout_text(detail::rank_prefix(rank_), call_,
                             std::string(what) + " rank " + std::to_string(peer) + " (" +
                                 std::to_string(bytes) + " bytes, " + detail::tag_text(tg) + ")",
                             detail::format_duration(world_->options().timeout),
                             detail::describe_stall(call_, all), unread));
  }
  transport_error aborted_error(char const* what, int peer) const {
    auto code = world_->abort_code();
    if (code == errc::mismatch)  // the disagreement concerns every rank: say it as it is
      return transport_error(code, detail::rank_prefix(rank_) + world_->abort_reason());
    return transport_error(code, detail::rank_prefix(rank_) + what + " rank " +
                                     std::to_string(peer) + " in " + describe(call_) +
                                     " aborted: " + world_->abort_reason());
  }
  // Ranks disagree about a call: every rank of the group learns it, with this text.
  [[noreturn]] void fail_mismatch(std::string const& what) const {
    world_->abort(what, errc::mismatch);
    throw transport_error(errc::mismatch, detail::rank_prefix(rank_) + what);
  }

  std::shared_ptr<detail::inproc_world> world_;
  int rank_ = 0;
  call_info call_{};
  std::uint64_t digest_ = detail::call_digest(call_info{});
  std::vector<detail::inproc_pending_recv*> pending_;  // irecvs in post order
  bool arrivals_due_ = false;  // a collective has begun and check_arrivals has not run in it
};

}  // namespace gcl
