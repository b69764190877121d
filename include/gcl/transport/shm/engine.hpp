#pragma once
// The engine of shm_transport (see transport/shm.hpp for what it promises): the rings it
// writes and drains, the offers of large messages, the per-(source, tag) queues, the wait
// (poll, then sleep on the rank's futex), the job's abort state, and how a dead, departed or
// stopped peer is noticed and named.
//
// No thread of its own: whenever this rank waits for anything (a message, room in a ring, an
// offer taken), it drains every ring to it into its queues and copies every offer made to it,
// so a sender never waits for this rank to post the matching receive, only for it to be inside
// any call of the transport (doc/shm.md, "Eager sends").

#include <poll.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <new>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "../../call_info.hpp"
#include "../../combiner.hpp"
#include "../../detail/call_progress.hpp"
#include "../../detail/error_text.hpp"
#include "../../detail/fence.hpp"
#include "../../detail/host_cpus.hpp"
#include "../../detail/spread_over_cpus.hpp"
#include "../../error.hpp"
#include "futex.hpp"
#include "options.hpp"
#include "pool.hpp"
#include "rendezvous.hpp"
#include "ring.hpp"
#include "segment.hpp"

namespace gcl::detail {

// What the ranks of one `shm_transport::group` (threads of this process) share to stop
// together: a flag, the first reason, and the transports to wake when it is raised.
struct shm_group_state {
  std::atomic<bool> aborted{false};
  std::mutex mutex;
  std::string reason;
  errc code = errc::aborted;
  std::vector<std::pair<void const*, std::function<void()>>> members;

  void abort(std::string const& why, errc c = errc::aborted) {
    std::lock_guard lock(mutex);
    if (aborted.load()) return;
    reason = why;
    code = c;
    aborted.store(true, std::memory_order_release);
    for (auto& m : members) m.second();
  }
};

// A message's header as the engine handles it: the ring's (shm_message) with the call whole
// and the offer's address, from the extension that carried them or, without one, from the
// last call named on the ring and the header's sequence.
struct shm_envelope {
  std::uint32_t tg = 0;
  std::uint8_t offer = 0;
  std::uint8_t rewinds = 0;  // shm_message::rewinds
  std::uint8_t complete = 0;
  std::uint64_t size = 0;
  std::uint64_t address = 0;
  call_info call;
};

// A message taken out of its ring before its receive was posted. Entries are kept for reuse
// with their buffers (shm_impl::spare_), so that a warm rank allocates nothing per message.
// An offer (a large message read out of its sender's memory) is not copied into an entry when
// it arrives: the entry keeps its header (`offer`), and the receive that takes it copies it
// once, straight into its own buffer (shm_impl::drain says when it is copied sooner).
struct shm_entry {
  tag tg{};
  call_info call;
  std::unique_ptr<std::byte[]> buffer;  // not zeroed: every byte is written before it is read
  std::size_t size = 0, capacity = 0;
  bool complete = false;
  bool lost = false;     // an offer its sender withdrew (the sender was failing)
  bool offered = false;  // an offer not yet copied: its bytes are still the sender's
  shm_envelope offer;    // its header, when `offered`

  std::byte* data() noexcept { return buffer.get(); }
  // Room for n bytes; the bytes there are not kept.
  void reserve(std::size_t n) {
    if (n <= capacity) return;
    buffer.reset();
    buffer.reset(new std::byte[n]);
    capacity = n;
  }
};

// The message being read out of one source's ring.
struct shm_incoming {
  std::uint64_t tail = 0;  // this rank's copy of the ring's tail
  bool active = false;     // a header has been read, its payload not yet all
  shm_envelope header;
  call_info named;  // the last call named on this ring (shm_message_extension)
  std::uint64_t got = 0;
  std::byte* destination = nullptr;
  shm_entry* entry = nullptr;         // null: straight into the posted receive
  combiner const* combine = nullptr;  // the posted receive's, if it combines
  std::uint64_t staged = 0;           // bytes of it in shm_impl::staging_, not yet combined
  // Left in the ring for reduce_and_forward, which reads it as it writes the message it
  // forwards; drain reads no further while this is set.
  bool held = false;
};

// The receive this rank is blocked in, which a message may fill straight from the ring.
struct shm_posted {
  int source = -1;
  tag tg{};
  std::span<std::byte> in;
  call_info call;
  bool started = false;
  bool done = false;
  bool lost = false;
  combiner const* combine = nullptr;  // sendrecv_reduce's: combine into `in`, not copy
  bool forward = false;               // reduce_and_forward's: held in the ring (shm_incoming)
};

// Aligned to a cache line: ranks that are threads of one process each have one, written at
// every message, and two that shared a line slowed each other (4 B all_reduce at P = 2 as
// threads: 0.14 or 0.18 us per call, by where the allocator put them).
class alignas(64) shm_impl {
 public:
  using clock = std::chrono::steady_clock;

  shm_impl(shm_options o, std::shared_ptr<shm_group_state> group)
      : o_(std::move(o)), group_(std::move(group)), prefix_(rank_prefix(name_of(o_.rank))) {
    if (group_) {
      std::lock_guard lock(group_->mutex);
      group_->members.emplace_back(this, [this] { ring_bell(o_.rank, true); });
    }
    try {
      start();
    } catch (...) {
      leave_group();
      throw;
    }
  }
  shm_impl(shm_impl const&) = delete;
  shm_impl& operator=(shm_impl const&) = delete;
  ~shm_impl() {
    end();
    leave_group();
  }

  int rank() const noexcept { return o_.rank; }
  int size() const noexcept { return o_.size; }
  shm_options const& options() const noexcept { return o_; }
  // Whether this rank's waits take the cores as shared (shm_options::shares_cores).
  bool cores_shared() const noexcept { return cores_shared_; }
  // How long a blocked call polls before it sleeps.
  std::chrono::microseconds spin() const noexcept { return spin_; }
  // The group this rank's transport stops with (null for a process of its own): its forks join it.
  std::shared_ptr<shm_group_state> const& group_state() const noexcept { return group_; }
  // Whether messages from `peer` of at least offer_bytes are copied once (cross-memory attach).
  bool copies_once_from(int peer) const noexcept {
    return seg_->pair(peer, o_.rank).pull_ok.load(std::memory_order_relaxed) != 0;
  }

  // This rank's pool (empty unless the job has one): shm_transport::allocate hands it out.
  std::shared_ptr<shm_pool> const& pool() const noexcept { return pool_; }
  // How many messages this rank has sent from its pool, read where they lay by the receiver.
  std::uint64_t sent_from_pool() const noexcept { return sent_from_pool_; }
  std::uint64_t bytes_queued() const noexcept { return bytes_queued_; }
  std::uint64_t bytes_forwarded() const noexcept { return bytes_forwarded_; }

  // Only this rank's thread reads progress_ (arrivals are checked as it scans its rings).
  void end_context(std::uint32_t context) { progress_.forget(context); }

  // Calls equal but for their sequence share a generation; a ring names a generation's call
  // once, in the extension of its first message of it (shm_message_extension). The two most
  // recent are remembered: a communicator alternates between a collective's call and the
  // point-to-point one it resets to at the collective's end. Found at call_'s first message,
  // not by set_call: the reset that ends every collective is seldom followed by a message, and
  // naming it cost a comparison of the whole call at each (4 B all_reduce at P = 2: 6% of the
  // samples, with the entries swapped where now an index moves).
  std::uint64_t call_generation() noexcept {
    if (generation_known_) return call_generation_;
    auto rest = call_;
    rest.sequence = 0;
    if (!(recent_calls_[latest_call_].call == rest)) {
      latest_call_ ^= 1;  // the other one, or the older one replaced
      if (!(recent_calls_[latest_call_].call == rest))
        recent_calls_[latest_call_] = named_call{rest, ++last_generation_};
    }
    call_generation_ = recent_calls_[latest_call_].generation;
    generation_known_ = true;
    return call_generation_;
  }

  // Never throws when a collective ends (the communicator resets the call from a destructor).
  void set_call(call_info const& c) {
    auto& me = seg_->rank(o_.rank);
    generation_known_ = false;
    if (c.kind == call_kind::point_to_point) {
      call_ = c;
      progress_.set(c);
      me.in_call.store(0, std::memory_order_release);
      return;
    }
    guarded("set_call", -1, [&] {
      call_ = c;
      progress_.set(c);
      me.call.store(c);
      me.started.store(c.sequence, std::memory_order_relaxed);
      me.in_call.store(1, std::memory_order_release);
      check_arrivals();
    });
  }

  void send(int peer, tag tg, std::span<std::byte const> out) {
    guarded("send to", peer, [&] {
      if (post(peer, tg, out)) finish_offer(peer, tg, out.size());
    });
  }

  void recv(int peer, tag tg, std::span<std::byte> in) {
    guarded("recv from", peer, [&] { receive(peer, tg, in, false, nullptr); });
  }

  // The receive is posted before the send, so that the incoming message lands straight in `in`
  // while this rank writes its own, and a large outgoing message is copied by its receiver
  // while this rank receives.
  void sendrecv(int dst, tag send_tag, std::span<std::byte const> out, int src, tag recv_tag,
                std::span<std::byte> in) {
    exchange(dst, send_tag, out, src, recv_tag, in, nullptr);
  }

  // sendrecv, the message combined into `acc` as it is drained from the ring (where it lies) or
  // copied out of the sender's memory (through staging_, so never more than one staging block is
  // between the copy and the reduction). False, having done nothing, for an element that does not
  // fit a quarter of it, and below the options' combine_threshold().
  bool sendrecv_reduce(int dst, tag send_tag, std::span<std::byte const> out, int src, tag recv_tag,
                       std::span<std::byte> acc, combiner const& c) {
    if (!combines(acc.size(), c)) return false;
    exchange(dst, send_tag, out, src, recv_tag, acc, &c);
    return true;
  }

  // The receiving half of sendrecv_reduce, declined where it is.
  bool recv_reduce(int src, tag tg, std::span<std::byte> acc, combiner const& c) {
    if (!combines(acc.size(), c)) return false;
    guarded("recv from", src, [&] { receive(src, tg, acc, false, &c); });
    return true;
  }

  // Receives src's message, combines it with `acc` and sends the result to dst, combining each
  // piece where it lies in src's ring straight into dst's ring (combiner::to): a ring
  // scatter-reduce's step forwards what the one before combined, and that result is written
  // once, into the message, where combining into `acc` and then sending `acc` wrote it there and
  // copied it again. `acc` ends unspecified. Declined as sendrecv_reduce is, and also for an
  // element that does not divide a cache line (then none straddles a ring's wrap: payloads
  // start on a line, rings are whole line pairs) and between this rank and itself.
  bool reduce_and_forward(int src, tag recv_tag, std::span<std::byte> acc, combiner const& c,
                          int dst, tag send_tag) {
    if (!combines(acc.size(), c) || shm_cache_line % c.element_size != 0 || src == o_.rank ||
        dst == o_.rank)
      return false;
    guarded("recv from", src, [&] { forward(src, recv_tag, acc, c, dst, send_tag); });
    return true;
  }

  // Whether send(peer, out) offers `out` where it lies, and so returns only once peer has read
  // it: a message from the pool, or one read by cross-memory attach.
  bool offers(int peer, std::span<std::byte const> out) const {
    return offer_kind(peer, out) != offer_none;
  }

  // Whether a message of `bytes` is combined as it arrives (sendrecv_reduce).
  bool combines(std::size_t bytes, combiner const& c) const noexcept {
    return c.element_size != 0 && c.element_size <= ring_piece_bytes / 4 &&
           bytes >= combine_threshold_;
  }

  // Sends `out` to each rank of `peers` and receives one message from each, ins[i] from
  // peers[i], in one round: `out` is copied once into this rank's share area, every peer copies
  // it from there (an offer of it, so FIFO, mismatch and failure work as for any offer), and
  // this rank copies each peer's from its share area. Where the rings would take two copies per
  // peer (into a ring, out of it) this takes one per peer and one more. Returns when every peer
  // has copied `out`. False, having sent nothing, when `out` or any of `ins` is larger than the
  // share area: a ring all_reduce's ranks, which send every chunk, then agree.
  bool share_with_all(std::span<int const> peers, tag tg, std::span<std::byte const> out,
                      std::span<std::span<std::byte> const> ins) {
    auto const room = seg_->share_bytes();
    if (out.size() > room ||
        std::any_of(ins.begin(), ins.end(), [&](auto const& in) { return in.size() > room; }))
      return false;
    guarded("send to", -1, [&] {
      auto* const area = seg_->share(o_.rank);
      if (!out.empty()) std::memcpy(area, out.data(), out.size());
      // Offered from the last peer to the first, received from the first to the last: with
      // the peers listed from the left neighbour on (communicator::share_with_all), each rank's
      // first offer goes to the rank that receives from it first.
      std::size_t offered = 0;
      try {
        for (; offered < peers.size(); ++offered)
          offer_share(peers[peers.size() - 1 - offered], tg, out.size());
        for (std::size_t i = 0; i < peers.size(); ++i)
          receive(peers[i], tg, ins[i], false, nullptr);
        for (std::size_t i = 0; i < peers.size(); ++i) finish_offer(peers[i], tg, out.size());
      } catch (...) {
        for (std::size_t i = 0; i < offered; ++i) withdraw(peers[peers.size() - 1 - i]);
        throw;
      }
    });
    return true;
  }

  // sendrecv, or with `combine` sendrecv_reduce.
  void exchange(int dst, tag send_tag, std::span<std::byte const> out, int src, tag recv_tag,
                std::span<std::byte> in, combiner const* combine) {
    guarded("send to", dst, [&] {
      bool const posted = first_entry(src, recv_tag) == nullptr;
      if (posted) posted_ = {src, recv_tag, in, call_, false, false, false, combine, false};
      bool offered = false;
      try {
        offered = post(dst, send_tag, out);
        receive(src, recv_tag, in, posted, combine);
      } catch (...) {
        posted_.source = -1;
        if (offered) withdraw(dst);
        throw;
      }
      if (offered) finish_offer(dst, send_tag, out.size());
    });
  }

  // reduce_and_forward. dst's header goes first, while this rank holds nothing back: a rank
  // that waits for room drains every ring, so ranks that all forward around a ring cannot end
  // up waiting on one another. Then src's message is posted to be held in its ring, and
  // forward_posted writes the result. A message queued before this call, or one that does not
  // match (the receive then reports it, and the job fails with dst's message unfinished), is
  // received and combined into `acc`, and `acc` sent from there.
  void forward(int src, tag recv_tag, std::span<std::byte> acc, combiner const& c, int dst,
               tag send_tag) {
    auto const n = acc.size();
    shm_envelope h;
    h.tg = static_cast<std::uint32_t>(send_tag);
    h.size = n;
    h.call = call_;
    auto& in = incoming_[static_cast<std::size_t>(src)];
    struct unpost {
      shm_posted& p;
      shm_incoming& in;
      ~unpost() {
        p.source = -1;
        p.forward = false;
        in.held = false;
      }
    } reset{posted_, in};
    bool const queued = first_entry(src, recv_tag) != nullptr;
    // Posted before dst's header is written, so that src's message, if it comes meanwhile,
    // lands in `acc` rather than in a queue entry; held only once the header is out.
    if (!queued) posted_ = {src, recv_tag, acc, call_, false, false, false, &c, false};
    write_header(dst, send_tag, h, n);
    if (!queued) {
      posted_.forward = true;
      auto begun = [&] {
        return posted_.started || posted_.done || first_entry(src, recv_tag) != nullptr;
      };
      if (!begun()) wait(begun, src, "recv from", recv_tag, n);
      if (posted_.started || posted_.done) return forward_posted(src, in, acc, c, dst, send_tag);
      posted_.source = -1;
      take(*first_entry(src, recv_tag), src, recv_tag, acc, &c);
    } else {
      receive(src, recv_tag, acc, false, &c);
    }
    write(dst, send_tag, acc.data(), n, n);
  }

  // forward's loop once src's message has begun. While it is held in its ring, each piece that
  // has arrived, as much as dst's ring has room for (up to ring_piece_bytes, so that both stay
  // in the first-level cache), is combined from there with acc's bytes into dst's ring,
  // published, and its room given back to src. When dst's ring is full the message is let go:
  // drained and combined into `acc` like any posted receive's while this rank waits for room
  // (so it never waits for room holding anything), and sent on from `acc` as it is combined;
  // once all of that has gone and there is room again, it is held again. An offer is never
  // held (it is pulled into `acc` at once).
  void forward_posted(int src, shm_incoming& in, std::span<std::byte> acc, combiner const& c,
                      int dst, tag send_tag) {
    auto const n = static_cast<std::uint64_t>(acc.size());
    auto const e = static_cast<std::uint64_t>(c.element_size);
    auto& pb = seg_->pair(src, o_.rank);
    auto const* from = seg_->ring(src, o_.rank);
    auto* to = seg_->ring(o_.rank, dst);
    auto& head = heads_[static_cast<std::size_t>(dst)];
    auto const bytes = static_cast<std::size_t>(n);
    // The whole elements of the held message that can be read now (its sender may have
    // published part of one).
    auto readable = [&] {
      std::uint64_t avail = n - in.got;
      if (in.header.complete == 0) {
        auto const published = pb.head.load(std::memory_order_acquire);
        avail = std::min(avail, published > in.tail ? published - in.tail : 0);
      }
      return avail / e * e;
    };
    // Bytes of the result in `acc` once let go: all of it at the end, else what is combined.
    auto combined = [&] { return posted_.done ? n : in.got - in.staged; };
    // What a held wait waits for: a whole element, or, where the ranks outnumber the cores,
    // up to forward_batch_bytes of the rest, so that a rank combines a few pieces per turn on
    // its core rather than one (ranks that forward around a ring each wait for the one before,
    // and a switch per piece took 1.09-1.16x the old path's time at P = 8, 16 and 64 MiB,
    // processes on 2 cores, in the host's slow state; waiting for a whole chunk, up to half a
    // ring, left the ranks of the other core idle: 1.02x at 1 MiB, where 64 KiB took 0.89x:
    // benchmark/analysis.md). Never more than half a ring, which the sender can always write
    // while this rank holds it.
    auto batch = [&] {
      if (!batch_pieces_) return e;
      return std::max(e, std::min({n - in.got, ring_ / 2, forward_batch_bytes}) / e * e);
    };
    std::uint64_t sent = 0;  // bytes of the result written to dst
    while (sent < n) {
      if (in.held) {
        auto const avail = readable();
        if (avail < batch()) {
          auto arrived = [&] { return readable() >= batch(); };
          wait(arrived, src, "recv from", tag{in.header.tg}, bytes);
          continue;
        }
        auto const space = room(dst, e) / e * e;
        if (space == 0) {
          in.held = false;
          continue;
        }
        // Elements never straddle either ring's wrap (reduce_and_forward): k is whole ones.
        auto const k = std::min({avail, space, ring_ - in.tail % ring_, ring_ - head % ring_,
                                 std::uint64_t{ring_piece_bytes}});
        c.to(to + head % ring_, acc.data() + in.got, from + in.tail % ring_,
             static_cast<std::size_t>(k));
        head += k;
        publish(dst);
        in.got += k;
        in.tail += k;
        sent += k;
        bytes_forwarded_ += k;
        pb.tail.store(in.tail, std::memory_order_release);  // src may go on at once
        ring_bell(src, false);
        if (in.got == n) end_message(in);
        continue;
      }
      if (posted_.lost) throw_aborted("recv from", src);
      if (auto const ready = combined(); ready > sent) {
        // write waits for room, draining (so combining) the rest meanwhile.
        write(dst, send_tag, acc.data() + sent, static_cast<std::size_t>(ready - sent), bytes);
        sent = ready;
        continue;
      }
      // All that is combined has gone: held again if nothing is half-combined and there is room.
      auto holdable = [&] {
        return !posted_.done && in.staged == 0 && in.header.offer == offer_none &&
               room(dst, e) >= e;
      };
      if (holdable()) {
        in.held = true;
        continue;
      }
      auto more = [&] { return combined() > sent || posted_.lost || holdable(); };
      wait(more, src, "recv from", tag{in.header.tg}, bytes);
    }
    // All n bytes sent means the message ended: the piece or the drain that completes it ends
    // it (end_message), so posted_.done holds here.
  }

  // ---- for hybrid_transport, which composes this engine with tcp's -------------------------

  // What await's `peer` is while this rank waits for something outside the segment.
  static constexpr int external_wait = -2;

  // Waits, as a blocked call of this transport does (draining every ring to this rank, copying
  // every offer made to it, then sleeping on the rank's futex), until `ready()`, which is
  // looked at between drains and after each wake-up (wake() ends a sleep). Throws on this
  // job's abort or a local peer's death; false at `deadline`. Part of a call: poisons and ends
  // the job on a failure, as every call does.
  template <class Ready>
  bool wait_external(Ready& ready, clock::time_point deadline) {
    bool got = false;
    guarded("wait", -1, [&] { got = await(ready, external_wait, deadline, true); });
    return got;
  }

  // Ends a sleep of wait_external (or of any blocked call of this rank) so that it looks again.
  // Safe from any thread, while the transport exists.
  void wake() noexcept { ring_bell(o_.rank, false); }

  // Called whenever a blocked call of this rank wakes up (and before it sleeps): throws to end
  // the wait, for an error of something outside the segment. Set once, before any call.
  void set_external_check(std::function<void()> check) { external_check_ = std::move(check); }

  // Called just before a blocked call of this rank sleeps on its futex (after its last look):
  // what wakes it from then on must be told (hybrid_transport: the TCP I/O thread, which rests
  // while the caller reads the sockets itself). Set once, before any call.
  void set_before_sleep(std::function<void()> before) { before_sleep_ = std::move(before); }

  // An error met outside this transport ends it as one of its own would: it is poisoned, and
  // the error goes into the segment so that every rank of the job stops with it (the first
  // error wins).
  void fail_from_outside(transport_error const& e) noexcept {
    if (!mapped_) return;
    if (!poisoned_) {
      poisoned_ = true;
      try {
        failure_ = e.what();
      } catch (...) {
      }
    }
    abort_job(e);
  }

 private:
  // The rank number that messages use: the global one under hybrid_transport.
  int name_of(int r) const noexcept {
    return o_.global_ranks.empty() ? r : o_.global_ranks[static_cast<std::size_t>(r)];
  }
  std::string name(int r) const { return std::to_string(name_of(r)); }

  // ---- setup and teardown -------------------------------------------------------------------

  void start() {
    auto const deadline = clock::now() + o_.timeout;
    bool const spread = o_.spreads_ranks();  // before the rendezvous: GCL_SPREAD may be wrong
    shm_rendezvous rv(o_, deadline);
    auto joined = o_.rank == 0 ? rv.lead(seg_) : rv.join();
    unique_fd segment_fd(joined.segment_fd);
    if (o_.rank != 0) seg_ = shm_segment::attach(segment_fd.get(), o_.size, prefix_);
    segment_fd.reset();  // the mapping keeps the memory; nothing names it any more
    peers_ = std::move(joined.peers);
    mapped_ = true;
    incoming_.resize(static_cast<std::size_t>(o_.size));
    queues_.resize(static_cast<std::size_t>(o_.size));
    spare_.reserve(max_spare());
    poll_fds_.reserve(static_cast<std::size_t>(o_.size));
    poll_ranks_.reserve(static_cast<std::size_t>(o_.size));
    heads_.assign(static_cast<std::size_t>(o_.size), 0);
    tails_seen_.assign(static_cast<std::size_t>(o_.size), 0);
    named_generation_.assign(static_cast<std::size_t>(o_.size), 0);
    ring_ = seg_->ring_bytes();
    stamp_key_ = seg_->header().stamp_key;
    pool_ = std::make_shared<shm_pool>(seg_, o_.rank);

    auto& me = seg_->rank(o_.rank);
    probe_ = shm_magic ^ static_cast<std::uint64_t>(o_.rank);
    me.pid.store(static_cast<std::int32_t>(::getpid()), std::memory_order_relaxed);
    me.probe_address.store(reinterpret_cast<std::uintptr_t>(&probe_), std::memory_order_relaxed);
    me.light_fences.store(register_cross_process_fences() ? 1 : 0, std::memory_order_relaxed);
    // Each rank writes its rings to its peers once, before any message (nobody reads a ring
    // before the second barrier): the pages are in place (segment.hpp, MAP_POPULATE), but the
    // lines the kernel zeroed there were found slow to go round the first time. Measured on
    // the AMD EPYC host of 2026-12-05, P = 2, 1 KiB all_reduce back to back, no calls before:
    // a mean per call over the first 500 of 1.35-2.25 us against 4.30-5.15 (three runs each,
    // alternated); with the rings gone round once before (benchmark/all_reduce --calibrate),
    // level from 4 B to 64 KiB, and at P = 8 level.
    for (int r = 0; r < o_.size; ++r)
      if (r != o_.rank) std::memset(seg_->ring(o_.rank, r), 0, ring_);
    barrier(1, deadline);
    // Which peers' memory this rank can read: where it can, their large messages are copied
    // once, straight from their buffers (the kernel may forbid it: ptrace rules, seccomp).
    for (int s = 0; s < o_.size; ++s)
      seg_->pair(s, o_.rank).pull_ok.store(can_read(s) ? 1 : 0, std::memory_order_relaxed);
    me.start_cpu.store(current_cpu(), std::memory_order_relaxed);
    barrier(2, deadline);
    // Only now, and only if every rank registered: until every rank has left the setup's
    // waits, which used full fences, no rank's light fence may pair with another's full one.
    bool all = true;
    for (int r = 0; r < o_.size; ++r)
      all = all && seg_->rank(r).light_fences.load(std::memory_order_relaxed) == 1;
    asymmetric_.store(all, std::memory_order_relaxed);
    // Every rank polls from here on, so the kernel will hardly move one again: where they
    // outnumber the CPUs, each starts on its share of them; where they do not, a rank that
    // shares its CPU with a lower one moves to a CPU none of them is on.
    if (spread && ranks_outnumber_allowed_cpus(o_.size)) {
      spread_over_cpus(o_.rank, o_.size);
    } else if (spread) {
      std::vector<int> where(static_cast<std::size_t>(o_.size));
      for (int r = 0; r < o_.size; ++r)
        where[static_cast<std::size_t>(r)] =
            seg_->rank(r).start_cpu.load(std::memory_order_relaxed);
      move_apart(o_.rank, where);
    }
  }

  // Every rank has reached this point of the setup (the n-th time).
  void barrier(unsigned n, clock::time_point deadline) {
    auto& ready = seg_->header().ready;
    ready.fetch_add(1, std::memory_order_acq_rel);
    for (int r = 0; r < o_.size; ++r) ring_bell(r, false);
    auto const want = n * static_cast<unsigned>(o_.size);
    auto done = [&] { return ready.load(std::memory_order_acquire) >= want; };
    if (!await(done, -1, deadline, false))
      throw transport_error(errc::timeout, prefix_ + "the shm job's setup timed out after " +
                                               format_duration(o_.timeout) + ": " + stall_text());
  }

  bool can_read(int s) const {
    if (!o_.uses_cross_memory_attach()) return false;
    auto const& peer = seg_->rank(s);
    auto const pid = peer.pid.load(std::memory_order_relaxed);
    if (pid == ::getpid()) return true;  // a thread of this process: a plain memcpy
    std::uint64_t value = 0;
    iovec local{&value, sizeof value};
    iovec remote{reinterpret_cast<void*>(peer.probe_address.load(std::memory_order_relaxed)),
                 sizeof value};
    return ::process_vm_readv(pid, &local, 1, &remote, 1, 0) ==
               static_cast<ssize_t>(sizeof value) &&
           value == (shm_magic ^ static_cast<std::uint64_t>(s));
  }

  // This rank's job is over: the others learn it (a clean end, or a failure), so that a peer
  // waiting for it is told so rather than that it died; then its sockets close.
  void end() noexcept {
    if (!mapped_) return;
    bool const failing = poisoned_ || std::uncaught_exceptions() > 0;
    // Offers kept waiting for receives that never came: copied, so that their senders' sends
    // end as an eager send's does, whether or not the message is read.
    if (!failing) try {
        defer_ = false;
        progress();  // offers parked in their rings too
        pull_waiting_offers();
      } catch (...) {  // the job is failing after all, and its senders learn it from the segment
      }
    auto& me = seg_->rank(o_.rank);
    me.in_call.store(0, std::memory_order_relaxed);
    me.ended.store(failing ? 2 : 1, std::memory_order_release);
    for (int r = 0; r < o_.size; ++r)
      if (r != o_.rank) ring_bell(r, true);
    peers_.clear();
    mapped_ = false;
  }

  void leave_group() noexcept {
    if (!group_) return;
    std::lock_guard lock(group_->mutex);
    std::erase_if(group_->members, [this](auto const& m) { return m.first == this; });
  }

  // ---- sending -----------------------------------------------------------------------------

  // Writes `out` to `peer`'s ring, or an offer of it for a large message that lies in this
  // rank's pool (every rank maps it) or when the peer can read this process's memory. Returns
  // whether it offered (then finish_offer or withdraw).
  bool post(int peer, tag tg, std::span<std::byte const> out) {
    auto& pb = seg_->pair(o_.rank, peer);
    auto const kind = offer_kind(peer, out);
    bool const in_pool = kind == offer_in_pool;
    bool const offer = kind != offer_none;
    shm_envelope h;
    h.tg = static_cast<std::uint32_t>(tg);
    h.offer = kind;
    h.size = out.size();
    h.address = in_pool ? seg_->offset_of(out.data())
                : offer ? reinterpret_cast<std::uintptr_t>(out.data())
                        : 0;
    if (in_pool) ++sent_from_pool_;
    h.call = call_;
    if (offer) pb.offer_state.store(offer_posted, std::memory_order_relaxed);
    if (offer || !write_at_once(peer, h, out)) {
      write_header(peer, tg, h, out.size());
      if (!offer) write(peer, tg, out.data(), out.size(), out.size());
    }
    return offer;
  }

  // How post sends `out` to `peer`: offered from this rank's pool, offered by its address
  // (where the peer can read this process's memory), or written into the ring (offer_none).
  std::uint8_t offer_kind(int peer, std::span<std::byte const> out) const {
    if (out.empty()) return offer_none;
    bool const large = out.size() >= o_.offer_bytes;
    // Only a message large enough to be offered is looked for in the pool (small ones are the
    // hot path).
    bool const pooled =
        (large || out.size() >= pool_offer_threshold_) && pool_->contains(out.data(), out.size());
    if (pooled && out.size() >= pool_offer_threshold_) return offer_in_pool;
    // A smaller message from the pool streams: read by address it would be slower still.
    if (large && !pooled && seg_->pair(o_.rank, peer).pull_ok.load(std::memory_order_relaxed) != 0)
      return offer_by_address;
    return offer_none;
  }

  // Offers the `bytes` staged in this rank's share area to `peer` (share_with_all).
  void offer_share(int peer, tag tg, std::size_t bytes) {
    shm_envelope h;
    h.tg = static_cast<std::uint32_t>(tg);
    h.offer = offer_in_share;
    h.size = bytes;
    h.address = seg_->offset_of(seg_->share(o_.rank));
    h.call = call_;
    seg_->pair(o_.rank, peer).offer_state.store(offer_posted, std::memory_order_relaxed);
    write_header(peer, tg, h, bytes);
  }

  // The room in the ring to `peer`, judged from the tail as this rank last read it; read again
  // only when that is less than `wanted`. The receiver writes the tail at every message it
  // reads, so reading it at every message would put a cache miss before each one.
  std::uint64_t room(int peer, std::uint64_t wanted) {
    auto& seen = tails_seen_[static_cast<std::size_t>(peer)];
    auto const head = heads_[static_cast<std::size_t>(peer)];
    if (ring_ - (head - seen) < wanted)
      seen = seg_->pair(o_.rank, peer).tail.load(std::memory_order_acquire);
    return ring_ - (head - seen);
  }

  // A message whose header and payload both fit the ring's room now: written, stamped complete,
  // then published, so the receiver takes all of it at its first look, reading no line but
  // the message's. False, having written nothing, when there is not room. A small one may send
  // the next message to the start of the ring's next lap (rewinds_after).
  bool write_at_once(int peer, shm_envelope h, std::span<std::byte const> out) {
    auto& head = heads_[static_cast<std::size_t>(peer)];
    auto const before = head;
    auto const end = message_start(head) + payload_offset(peer, h) + out.size();
    auto const n = end - before;
    if (room(peer, n) < n) return false;
    h.complete = 1;
    h.rewinds = out.size() <= rewind_payload_max && rewinds_after(peer, before, end) ? 1 : 0;
    auto const at = put_header(peer, h, out);
    stamp(peer, at);
    if (h.rewinds != 0) head = round_up(end, ring_);  // the rest of this lap is never written
    publish(peer);
    return true;
  }

  // Whether a small message written from stream position `before` to `end` of the ring to
  // `peer` sends the next one to the start of the ring's next lap: once `end` lies
  // rewind_window_ or more into its lap, if the room left after the skip would still be half
  // the window. Small messages then go round the window's lines, which stay in the caches,
  // rather than the whole ring, whose lines are cold by the time a small message comes round
  // again where many rings share a core's caches (shm_options::rewind_bytes). The receiver
  // reads the `rewinds` of the header and skips the same bytes (end_message). The tail is read
  // again only when the message crosses a multiple of half the window: where the receiver lags
  // behind, not at every message.
  bool rewinds_after(int peer, std::uint64_t before, std::uint64_t end) {
    if (rewind_window_ == 0) return false;
    auto const half = std::max<std::uint64_t>(rewind_window_ / 2, 1);
    auto const into_lap = end % ring_;
    if (into_lap < rewind_window_) return false;
    auto& seen = tails_seen_[static_cast<std::size_t>(peer)];
    // The room after the skip: ring_ - (round_up(end, ring_) - seen) = into_lap - (end - seen).
    auto room_left = [&] { return end - seen + half <= into_lap; };
    if (!room_left() && (before % ring_) / half != into_lap / half)
      seen = seg_->pair(o_.rank, peer).tail.load(std::memory_order_acquire);
    return room_left();
  }

  // Writes header h where the next message starts, stamped and published, once the ring has
  // room for it; its payload, if any, follows by write().
  void write_header(int peer, tag tg, shm_envelope const& h, std::size_t message) {
    auto& head = heads_[static_cast<std::size_t>(peer)];
    auto const wanted = (message_start(head) - head) + payload_offset(peer, h);
    if (room(peer, wanted) < wanted) {
      auto enough = [&] { return room(peer, wanted) >= wanted; };
      wait_for_room(enough, peer, tg, message);
    }
    auto const at = put_header(peer, h);
    // The head before the stamp: a receiver that sees the stamp of a message that streams then
    // reads the head for its payload, which must not be one from before the header (its tail
    // would be ahead of it). The bell after both.
    publish_head(peer);
    stamp(peer, at);
    ring_bell(peer, false);
  }

  // Copies n payload bytes into the ring to `peer`, as much at a time as it has room for,
  // waiting for room in between.
  void write(int peer, tag tg, void const* from, std::size_t n, std::size_t message) {
    auto const* src = static_cast<std::byte const*>(from);
    while (n > 0) {
      if (room(peer, 1) < 1) {
        auto enough = [&] { return room(peer, 1) >= 1; };
        wait_for_room(enough, peer, tg, message);
        continue;
      }
      auto const m = std::min<std::size_t>(n, room(peer, n));
      put(peer, src, m);
      src += m;
      n -= m;
      publish(peer);
    }
  }

  // Waits for room in the ring to `peer`, saying so in the ring's block, so that its receiver
  // drains the ring meanwhile rather than leave a message there for its receive (parks): a
  // send never waits for the matching receive.
  template <class Ready>
  void wait_for_room(Ready& enough, int peer, tag tg, std::size_t message) {
    auto& flag = seg_->pair(o_.rank, peer).sender_waits;
    flag.store(1, std::memory_order_relaxed);
    struct lower {
      std::atomic<std::uint32_t>& flag;
      ~lower() { flag.store(0, std::memory_order_relaxed); }
    } reset{flag};
    wait(enough, peer, "send to", tg, message);
  }

  // Whether header h to `peer` needs an extension: for an offer's address, or for a call that
  // differs from the last one named on that ring by more than its sequence.
  bool extended(int peer, shm_envelope const& h) noexcept {
    return h.offer != offer_none ||
           named_generation_[static_cast<std::size_t>(peer)] != call_generation();
  }
  // Where h's payload starts from its header's (shm_payload_offset).
  std::uint64_t payload_offset(int peer, shm_envelope const& h) noexcept {
    auto const header =
        sizeof(shm_message) + (extended(peer, h) ? sizeof(shm_message_extension) : 0);
    return shm_payload_offset(header, h.size);
  }

  // Puts header h (all but its stamp) where the next message starts, with its extension if it
  // needs one, and `payload` where it goes (shm_payload_offset); returns that position. The
  // stamp's bytes are left alone: the receiver may be polling them. A header and payload that
  // fit a line pair are composed here and copied line by line, the first line last and in one
  // copy: the receiver polls it, and each separate write into it could find it taken away and
  // have to fetch it back.
  std::uint64_t put_header(int peer, shm_envelope const& h,
                           std::span<std::byte const> payload = {}) noexcept {
    auto& head = heads_[static_cast<std::size_t>(peer)];
    head = message_start(head);
    auto const at = head;
    alignas(16) std::byte staged[shm_line_pair];
    shm_message m;
    m.tg = h.tg;
    m.offer = h.offer;
    m.rewinds = h.rewinds;
    m.complete = h.complete;
    m.extended = extended(peer, h) ? 1 : 0;
    m.size = h.size;
    m.sequence = h.call.sequence;
    std::memcpy(staged, &m, sizeof m);
    std::size_t n = sizeof m;
    if (m.extended != 0) {
      shm_message_extension const x{h.address, h.call};
      std::memcpy(staged + n, &x, sizeof x);
      n += sizeof x;
      named_generation_[static_cast<std::size_t>(peer)] = call_generation();
    }
    auto const offset = shm_payload_offset(n, h.size);
    bool const together = offset == n && !payload.empty();
    if (together) {
      std::memcpy(staged + n, payload.data(), payload.size());
      n += payload.size();
    }
    auto const end = together ? at + n : at + offset + payload.size();
    // The header's first line last: the receiver polls it, and each write into it takes it
    // back from the receiver's core. Written first, it was taken again by the receiver's next
    // look, and then again for the stamp (64 B all_reduce at P = 2, processes pinned: 0.94 of
    // the time with this order, 7 runs of 10 faster; 4 B, whose message is that line, level).
    if (!together) {
      head = at + offset;  // the bytes in between are never written, nor read
      put(peer, payload.data(), payload.size());
    }
    if (n > shm_cache_line) {
      head = at + shm_cache_line;
      put(peer, staged + shm_cache_line, n - shm_cache_line);
    }
    head = at + sizeof m.stamp;
    put(peer, staged + sizeof m.stamp, std::min<std::size_t>(n, shm_cache_line) - sizeof m.stamp);
    head = end;
    return at;
  }

  // Stamps the header put at `at`: after this release store the receiver may read it, and with
  // `complete` its payload, whatever the head says.
  void stamp(int peer, std::uint64_t at) noexcept {
    stamp_at(seg_->ring(o_.rank, peer), ring_, at)
        .store(at ^ stamp_key_, std::memory_order_release);
  }

  // Where a message written at stream position `pos` starts (ring.hpp, shm_line_pair).
  static std::uint64_t message_start(std::uint64_t pos) noexcept { return round_to_line_pair(pos); }

  // Copies n bytes into the ring to `peer` after what this rank has written, unpublished (the
  // caller has checked the room).
  void put(int peer, void const* from, std::size_t n) noexcept {
    auto& head = heads_[static_cast<std::size_t>(peer)];
    ring_put(seg_->ring(o_.rank, peer), ring_, head, from, n);
    head += n;
  }

  // Hands everything put() wrote to `peer` over: one release store of the head, then the bell.
  void publish(int peer) noexcept {
    publish_head(peer);
    ring_bell(peer, false);
  }

  // The head's release store alone (write_header rings the bell after the stamp).
  void publish_head(int peer) noexcept {
    seg_->pair(o_.rank, peer)
        .head.store(heads_[static_cast<std::size_t>(peer)], std::memory_order_release);
  }

  // Waits until `peer` has copied the offered message, then the sender's buffer is free.
  void finish_offer(int peer, tag tg, std::size_t bytes) {
    auto& pb = seg_->pair(o_.rank, peer);
    auto taken = [&] { return pb.offer_state.load(std::memory_order_acquire) == offer_done; };
    try {
      if (!taken()) wait(taken, peer, "send to", tg, bytes);
    } catch (...) {
      withdraw(peer);
      throw;
    }
    pb.offer_state.store(offer_idle, std::memory_order_relaxed);
  }

  // The call is failing with an offer out: after this, `peer` no longer reads the buffer.
  void withdraw(int peer) noexcept {
    auto& pb = seg_->pair(o_.rank, peer);
    auto st = static_cast<std::uint32_t>(offer_posted);
    if (pb.offer_state.compare_exchange_strong(st, offer_withdrawn, std::memory_order_acq_rel))
      return;
    // Being copied: that copy ends, unless the copier dies, which its hang-up shows.
    auto const give_up = clock::now() + o_.timeout;
    while (pb.offer_state.load(std::memory_order_acquire) == offer_copying &&
           clock::now() < give_up && !hung_up(peer))
      std::this_thread::sleep_for(std::chrono::microseconds{50});
  }

  // ---- receiving ---------------------------------------------------------------------------

  // Takes the oldest message from (peer, tg) into `in` (with `combine`: combines it into `in`).
  // `posted`: posted_ is already set for it (sendrecv).
  void receive(int peer, tag tg, std::span<std::byte> in, bool posted, combiner const* combine) {
    struct unpost {
      shm_posted& p;
      ~unpost() { p.source = -1; }
    } reset{posted_};
    if (!posted) {
      // A message already queued is the oldest of its source and tag: taken without draining
      // the rings first, which at P = 8 reads a line of every source's ring for a message that
      // is here (measured: 4 B all_reduce at P = 8, back to back, 0.91-0.94 of the time).
      auto* e = first_entry(peer, tg);
      if (e == nullptr) {
        progress();
        e = first_entry(peer, tg);
      }
      if (e != nullptr) {
        posted_.source = -1;
        return take(*e, peer, tg, in, combine);
      }
      posted_ = {peer, tg, in, call_, false, false, false, combine, false};
    }
    auto ready = [&] { return posted_.done || (!posted_.started && first_entry(peer, tg)); };
    if (!ready()) wait(ready, peer, "recv from", tg, in.size());
    if (posted_.done) {
      if (posted_.lost) throw_aborted("recv from", peer);
      return;
    }
    posted_.source = -1;
    take(*first_entry(peer, tg), peer, tg, in, combine);
  }

  shm_entry* first_entry(int peer, tag tg) const {
    for (auto const& e : queues_[static_cast<std::size_t>(peer)])
      if (e->tg == tg) return e.get();
    return nullptr;
  }

  // Copies a queued message into `in` once it has all arrived; one of another size or call is
  // left where it is and reported, naming both sides.
  void take(shm_entry& e, int peer, tag tg, std::span<std::byte> in, combiner const* combine) {
    if (!e.complete) {
      auto complete = [&] { return e.complete; };
      wait(complete, peer, "recv from", tg, in.size());
    }
    if (e.lost) throw_aborted("recv from", peer);
    bool const matches = e.size == in.size() && e.call == call_;
    if (e.offered && !matches) {  // kept whole, and its sender released, for the report below
      pull_offer(peer, e, nullptr, nullptr);
      if (e.lost) throw_aborted("recv from", peer);
    }
    if (!matches) {
      auto v = progress_.check(e.call);
      if (v == call_progress::verdict::conflict || v == call_progress::verdict::stale)
        fail(errc::mismatch, progress_.disagreement(name_of(o_.rank), name_of(peer), e.call));
      throw transport_error(errc::mismatch, prefix_ + "expected " + std::to_string(in.size()) +
                                                " bytes for " + describe(call_) + " from rank " +
                                                name(peer) + " (" + tag_text(tg) + "), but rank " +
                                                name(peer) + " sent " + std::to_string(e.size) +
                                                " bytes for " + describe(e.call));
    }
    if (e.offered) {
      pull_offer(peer, e, in.data(), combine);
      if (e.lost) throw_aborted("recv from", peer);
    } else if (!in.empty()) {
      if (combine != nullptr)
        (*combine)(in.data(), e.data(), in.size());
      else
        std::memcpy(in.data(), e.data(), in.size());
    }
    auto& q = queues_[static_cast<std::size_t>(peer)];
    auto it = std::find_if(q.begin(), q.end(), [&](auto const& p) { return p.get() == &e; });
    auto done = std::move(*it);
    q.erase(it);
    recycle(std::move(done));
  }

  // The most entries kept for reuse: more than the messages a rank's steady collectives leave
  // waiting at once, not a hoard after a burst.
  std::size_t max_spare() const noexcept { return 4 * static_cast<std::size_t>(o_.size) + 16; }

  // An entry for a message of n bytes: a kept one whose buffer holds them if there is one, else
  // the kept one with the largest buffer (grown), else a new one.
  std::unique_ptr<shm_entry> fresh_entry(std::size_t n, bool room = true) {
    std::size_t pick = spare_.size();
    for (std::size_t i = 0; i < spare_.size(); ++i)
      if (spare_[i]->capacity >= n) {
        pick = i;
        break;
      } else if (pick == spare_.size() || spare_[i]->capacity > spare_[pick]->capacity) {
        pick = i;
      }
    std::unique_ptr<shm_entry> e;
    if (pick < spare_.size()) {
      e = std::move(spare_[pick]);
      spare_[pick] = std::move(spare_.back());
      spare_.pop_back();
    } else {
      e = std::make_unique<shm_entry>();
    }
    if (room) e->reserve(n);
    e->size = n;
    e->complete = false;
    e->lost = false;
    e->offered = false;
    return e;
  }

  // Keeps a received entry for reuse (up to max_spare() of them, buffers up to 64 MiB).
  void recycle(std::unique_ptr<shm_entry> e) noexcept {
    if (spare_.size() < max_spare() && e->capacity <= (std::size_t{64} << 20))
      spare_.push_back(std::move(e));  // within the capacity reserved at setup: no allocation
  }

  // The smallest message drain leaves in its ring until its receive is posted (parks).
  static constexpr std::uint64_t park_bytes = 16 * 1024;

  // Whether drain leaves the message whose header it has just read in its ring, to be read
  // again once its receive is posted: one of at least park_bytes that no posted receive waits
  // for, while its sender does not wait for room in that ring (wait_for_room) and this rank
  // will not sleep (defer_). Queued instead, it would be copied into the queue and again into
  // its receive: in a ring all_reduce the next step's chunk often arrives while its receiver
  // is still in this step, and in the next block's first step while it shares this block's
  // chunks.
  bool parks(int s, shm_incoming const& in) const noexcept {
    return defer_ && in.header.size >= park_bytes && !(posted_.source == s && !posted_.done) &&
           seg_->pair(s, o_.rank).sender_waits.load(std::memory_order_relaxed) == 0;
  }

  // Drains every ring to this rank as far as it has arrived (but for the messages it parks);
  // never blocks.
  void progress() {
    for (int s = 0; s < o_.size; ++s) drain(s);
  }

  void drain(int s) {
    auto& in = incoming_[static_cast<std::size_t>(s)];
    auto& pb = seg_->pair(s, o_.rank);
    auto const* ring = seg_->ring(s, o_.rank);
    bool moved = false;
    for (;;) {
      if (!in.active) {
        // The next header starts at message_start (the padding before it is never written);
        // it has come when its stamp says so.
        auto const at = message_start(in.tail);
        if (stamp_at(ring, ring_, at).load(std::memory_order_acquire) != (at ^ stamp_key_)) break;
        in.tail = at;
        read_header(ring, in);
        if (parks(s, in)) {  // read again when its receive is posted
          in.tail = at;
          break;
        }
        pb.tail.store(in.tail, std::memory_order_release);
        moved = true;
        begin_message(s, in);
        if (in.header.offer != 0 && in.entry != nullptr) {
          in.entry->offered = true;  // copied by the receive that takes it (take), or now
          in.entry->offer = in.header;
          end_message(in);
          if (!defer_) pull_offer(s, *in.entry, nullptr, nullptr);
        } else if (in.header.offer != 0) {
          pull(s, in);
          end_message(in);
        } else if (in.header.size == 0) {
          end_message(in);
        }
        continue;
      }
      if (in.held) break;  // reduce_and_forward reads it (forward)
      // A complete message's payload is all there (written before its stamp); another's as far
      // as the head says. The sender publishes the head before a streamed header's stamp, so it
      // is never behind this tail; were it ever, nothing would be read (rather than the bytes
      // an unsigned difference would claim) and the wait would end in its timeout.
      std::uint64_t avail = in.header.size - in.got;
      if (in.header.complete == 0) {
        auto const head = pb.head.load(std::memory_order_acquire);
        avail = head > in.tail ? head - in.tail : 0;
      }
      if (avail == 0) break;
      auto const n = std::min<std::uint64_t>(avail, in.header.size - in.got);
      if (in.combine != nullptr) {
        combine_from_ring(ring, pb, in, n);
      } else {
        ring_get(ring, ring_, in.tail, in.destination + in.got, static_cast<std::size_t>(n));
        in.got += n;
        in.tail += n;
        pb.tail.store(in.tail, std::memory_order_release);  // the sender may go on at once
      }
      moved = true;
      if (in.got == in.header.size) {
        bool const posted = in.entry == nullptr;
        end_message(in);
        // The next message is left for the next look, by which time its receive may be
        // posted (it then lands in place, where queued now it is copied twice); a rank that
        // waits looks again at once.
        if (posted) break;
      }
    }
    if (moved) ring_bell(s, false);
  }

  // Reads the header at in.tail (its stamp seen) into in.header, the call made whole.
  void read_header(std::byte const* ring, shm_incoming& in) noexcept {
    auto const at = in.tail;
    shm_message m;
    ring_get(ring, ring_, in.tail, &m, sizeof m);
    in.tail += sizeof m;
    auto& h = in.header;
    h.tg = m.tg;
    h.offer = m.offer;
    h.rewinds = m.rewinds;
    h.complete = m.complete;
    h.size = m.size;
    if (m.extended != 0) {
      shm_message_extension x;
      ring_get(ring, ring_, in.tail, &x, sizeof x);
      in.tail += sizeof x;
      in.named = x.call;
      h.address = x.address;
    } else {
      h.address = 0;
    }
    h.call = in.named;
    h.call.sequence = m.sequence;
    in.tail = at + shm_payload_offset(in.tail - at, m.size);
  }

  // A header has arrived: its payload goes straight into the posted receive if that is the one
  // it matches (oldest of its source and tag, same size and call), else into a queue entry.
  void begin_message(int s, shm_incoming& in) {
    auto const& h = in.header;
    tag const tg{h.tg};
    in.active = true;
    in.got = 0;
    if (posted_.source == s && !posted_.started && !posted_.done && posted_.tg == tg &&
        h.size == posted_.in.size() && h.call == posted_.call && first_entry(s, tg) == nullptr) {
      posted_.started = true;
      in.entry = nullptr;
      in.destination = posted_.in.data();
      in.combine = posted_.combine;
      in.staged = 0;
      in.held = posted_.forward && h.offer == offer_none;  // an offer is pulled into `in`
      return;
    }
    in.held = false;
    in.combine = nullptr;
    // An offer's entry gets room only if the offer is copied before its receive (pull_offer).
    auto e = fresh_entry(static_cast<std::size_t>(h.size), h.offer == 0);
    e->tg = tg;
    e->call = h.call;
    in.entry = e.get();
    in.destination = e->data();
    queues_[static_cast<std::size_t>(s)].push_back(std::move(e));
  }

  void end_message(shm_incoming& in) {
    in.active = false;
    // The sender skipped the rest of this lap (write_at_once); the tail follows, at the next
    // header's read.
    if (in.header.rewinds != 0) in.tail = round_up(in.tail, ring_);
    in.held = false;
    if (in.entry != nullptr && !in.entry->offered) bytes_queued_ += in.header.size;  // streamed
    if (in.entry != nullptr)
      in.entry->complete = true;
    else
      posted_.done = true;
  }

  // Copies an offered message out of the sender's memory (its pool in the segment, or its
  // buffer anywhere, by process_vm_readv): one copy, from its buffer to ours.
  void pull(int s, shm_incoming& in) {
    auto& pb = seg_->pair(s, o_.rank);
    auto const bytes = static_cast<std::size_t>(in.header.size);
    auto const pid = seg_->rank(s).pid.load(std::memory_order_relaxed);
    bool const in_pool = in.header.offer == offer_in_pool;
    bool const in_segment = in_pool || in.header.offer == offer_in_share;
    // The bytes are in this process's address space: in the segment, or a thread's buffer.
    bool const mapped = in_segment || pid == ::getpid();
    // Copied out, the sender released, then combined: a combine straight from the sender's
    // memory holds it for the slower pass (shm_options::combine_in_place_threshold). The room
    // is found before the offer is taken, so that a failing allocation leaves it to its sender.
    std::byte* const copied_out =
        mapped && in.combine != nullptr && bytes < combine_in_place_threshold_
            ? copy_out_room(bytes)
            : nullptr;
    auto st = static_cast<std::uint32_t>(offer_posted);
    if (!pb.offer_state.compare_exchange_strong(st, offer_copying, std::memory_order_acq_rel)) {
      // Withdrawn: the sender is failing, and says why in the job's abort state.
      if (in.entry != nullptr)
        in.entry->lost = true;
      else
        posted_.lost = true;
      return;
    }
    std::string error;
    auto const* address = in_segment ? seg_->at(in.header.address)
                                     : reinterpret_cast<std::byte const*>(in.header.address);
    if (in_segment && !(in_pool ? in_pool_of(s, in.header.address, bytes)
                                : in_share_of(s, in.header.address, bytes))) {
      error = "it names bytes " + std::to_string(in.header.address) + " to " +
              std::to_string(in.header.address + bytes) + " of the segment, outside its " +
              (in_pool ? "pool" : "share area");
    } else if (bytes == 0) {
      // An empty message (share_with_all sends a ring's empty chunks): nothing to copy, and
      // memcpy must not be given the null pointers an empty buffer may have.
    } else if (copied_out != nullptr) {
      std::memcpy(copied_out, address, bytes);
    } else if (mapped && in.combine != nullptr) {
      (*in.combine)(in.destination, address, bytes);
    } else if (mapped) {
      std::memcpy(in.destination, address, bytes);
    } else if (in.combine != nullptr) {
      // A piece at a time into staging_, each combined while it is in the cache.
      in.staged = 0;
      while (in.got < bytes) {
        auto const m = std::min<std::uint64_t>(bytes - in.got, staging_bytes - in.staged);
        iovec local{staging_.get() + in.staged, m};
        iovec remote{const_cast<std::byte*>(address) + in.got, m};
        auto n = ::process_vm_readv(pid, &local, 1, &remote, 1, 0);
        if (n <= 0) {
          error = n == 0 ? "read nothing" : std::strerror(errno);
          break;
        }
        combine_staged(in, static_cast<std::uint64_t>(n));
      }
    } else {
      std::size_t done = 0;
      while (done < bytes) {
        iovec local{in.destination + done, bytes - done};
        iovec remote{reinterpret_cast<void*>(in.header.address + done), bytes - done};
        auto n = ::process_vm_readv(pid, &local, 1, &remote, 1, 0);
        if (n <= 0) {
          error = n == 0 ? "read nothing" : std::strerror(errno);
          break;
        }
        done += static_cast<std::size_t>(n);
      }
    }
    pb.offer_state.store(offer_done, std::memory_order_release);
    ring_bell(s, false);
    if (!error.empty())
      fail(in_segment ? errc::protocol : errc::peer_closed,
           "cannot copy rank " + name(s) + "'s message (" + std::to_string(bytes) + " bytes, " +
               tag_text(tag{in.header.tg}) + ") out of its memory: " + error +
               (hung_up(s) ? " (rank " + name(s) + " is gone)" : ""));
    if (copied_out != nullptr) (*in.combine)(in.destination, copied_out, bytes);
  }

  // Copies the offer kept in entry e (from rank s) into `destination` (combining it, with
  // `combine`), or into the entry's own room when that is null; its sender goes on.
  void pull_offer(int s, shm_entry& e, std::byte* destination, combiner const* combine) {
    if (destination == nullptr) {
      e.reserve(e.size);
      destination = e.data();
      bytes_queued_ += e.size;
    }
    shm_incoming in;
    in.header = e.offer;
    in.destination = destination;
    in.combine = combine;
    in.entry = &e;
    e.offered = false;
    pull(s, in);
  }

  // Copies every offer kept waiting into its entry, so that no sender waits for this rank.
  void pull_waiting_offers() {
    for (int s = 0; s < o_.size; ++s)
      for (auto const& e : queues_[static_cast<std::size_t>(s)])
        if (e->offered) pull_offer(s, *e, nullptr, nullptr);
  }

  // Whether bytes [offset, offset + n) of the segment lie in rank s's pool.
  bool in_pool_of(int s, std::uint64_t offset, std::size_t n) const noexcept {
    return lies_within(seg_->offset_of(seg_->pool(s)), seg_->pool_bytes(), offset, n);
  }
  // Whether they lie in rank s's share area.
  bool in_share_of(int s, std::uint64_t offset, std::size_t n) const noexcept {
    return lies_within(seg_->offset_of(seg_->share(s)), seg_->share_bytes(), offset, n);
  }

  // Combines n bytes of the posted receive's message into the destination where they lie in the
  // ring: a copy into staging_ first would be one more pass over every byte received (measured:
  // benchmark/analysis.md, "shm: combined where it lies in the ring"). Only an element that the
  // ring's wrap or the sender's last write cuts in two goes through staging_, its bytes gathered
  // there. The ring's room is returned piece by piece.
  void combine_from_ring(std::byte const* ring, shm_pair_block& pb, shm_incoming& in,
                         std::uint64_t n) {
    auto const element = static_cast<std::uint64_t>(in.combine->element_size);
    while (n > 0) {
      auto const at = in.tail % ring_;
      auto const whole =
          std::min({n, ring_ - at, std::uint64_t{ring_piece_bytes}}) / element * element;
      std::uint64_t m = 0;
      if (in.staged == 0 && whole > 0) {
        m = whole;
        (*in.combine)(in.destination + in.got, ring + at, static_cast<std::size_t>(m));
        in.got += m;
      } else {
        m = std::min(n, element - in.staged);  // the rest of one split element
        ring_get(ring, ring_, in.tail, staging_.get() + in.staged, static_cast<std::size_t>(m));
        combine_staged(in, m);
      }
      in.tail += m;
      pb.tail.store(in.tail, std::memory_order_release);  // the sender may go on at once
      n -= m;
    }
  }

  // `m` more bytes have landed in staging_ after the `in.staged` already there: combines the
  // whole elements and keeps the bytes of a split one (a ring's piece or a partial read can
  // end inside an element) at the front for the rest.
  void combine_staged(shm_incoming& in, std::uint64_t m) {
    in.got += m;
    in.staged += m;
    auto const whole = in.staged - in.staged % in.combine->element_size;
    if (whole == 0) return;
    (*in.combine)(in.destination + (in.got - in.staged), staging_.get(),
                  static_cast<std::size_t>(whole));
    if (whole != in.staged)
      std::memmove(staging_.get(), staging_.get() + whole,
                   static_cast<std::size_t>(in.staged - whole));
    in.staged -= whole;
  }

  // ---- waiting -----------------------------------------------------------------------------

  template <class Ready>
  void wait(Ready& ready, int peer, char const* what, tag tg, std::size_t bytes) {
    if (await(ready, peer, timeout_from_first_look, true)) return;
    std::string waited = std::string(what) + " rank " + name(peer) + " (" + std::to_string(bytes) +
                         " bytes, " + tag_text(tg) + ")";
    fail(errc::timeout, timeout_text("", call_, waited, format_duration(o_.timeout),
                                     describe_stall(call_, statuses()), unread_text()));
  }

  // await's deadline for `timeout` after its first look: most waits end within a few looks,
  // before it reads the clock (tens of nanoseconds, on the path of every small message).
  static constexpr clock::time_point timeout_from_first_look{};

  // Drains the rings and polls `ready()` for `spin`, yielding the core between looks (ranks
  // that outnumber the cores still progress), then sleeps on this rank's futex until a peer
  // rings it, up to `deadline`. Every 20 ms of sleep it looks for peers that are gone. Throws
  // when the job is aborted or a peer is gone; false at the deadline.
  template <class Ready>
  bool await(Ready& ready, int peer, clock::time_point deadline, bool drain_rings) {
    auto look = [&] {
      if (drain_rings) progress();
      return ready();
    };
    for (int round = 0; round < paused_looks_; ++round) {
      if (look()) return true;
      cpu_relax();
    }
    auto const start = clock::now();
    if (deadline == timeout_from_first_look) deadline = start + o_.timeout;
    throw_if_aborted(peer);
    if (external_check_) external_check_();
    // From `offer_patience_` on (or once this rank may sleep) an offer it keeps waiting for its
    // receive would keep its sender waiting as long: those are copied then, and those that
    // arrive from then on at once, as they come (drain).
    struct deferral {
      bool& on;
      bool const was = on;
      ~deferral() { on = was; }
    } restore{defer_};
    bool copying = false;
    auto keep_no_sender_waiting = [&] {
      if (copying) return;
      copying = true;
      defer_ = false;
      pull_waiting_offers();
    };
    if (spin_.count() > 0) {
      auto const give_up = std::min(deadline, start + spin_);
      auto const keep_no_sender_from = start + offer_patience_;
      between_looks wait_a_little(start + polling_before_yielding_);
      for (unsigned round = 0;; ++round) {
        if (look()) return true;
        if (round % 8 == 0) {
          auto const now = clock::now();
          if (now >= give_up) break;
          if (now >= keep_no_sender_from) keep_no_sender_waiting();
          wait_a_little.at(now);
        }
        wait_a_little();
      }
    }
    keep_no_sender_waiting();
    auto& me = seg_->rank(o_.rank);
    me.waiting_for.store(peer >= 0 ? peer : -1, std::memory_order_relaxed);
    struct unwind {
      shm_rank_block& me;
      ~unwind() { me.waiting_for.store(-1, std::memory_order_relaxed); }
    } reset{me};
    for (bool first = true;; first = false) {
      // Registered as a sleeper before the last look, so that a peer that changes something
      // after it sees the registration and rings (the fences pair with ring_bell's).
      me.sleepers.fetch_add(1, std::memory_order_seq_cst);
      struct awake {
        shm_rank_block& me;
        ~awake() { me.sleepers.fetch_sub(1, std::memory_order_relaxed); }
      } registered{me};
      heavy_fence(asymmetric_.load(std::memory_order_relaxed), fence_reach::registered_processes);
      auto const bell = me.bell.load(std::memory_order_acquire);
      if (look()) return true;
      throw_if_aborted(peer);
      if (external_check_) external_check_();
      check_peers(peer, ready, drain_rings);
      if (!first && call_.kind != call_kind::point_to_point) check_arrivals();
      auto const now = clock::now();
      if (now >= deadline) return false;
      if (before_sleep_) before_sleep_();
      futex_wait(me.bell, bell,
                 std::min<clock::duration>(deadline - now, std::chrono::milliseconds{20}));
    }
  }

  // Tells rank r that something it may wait for changed: a release of its futex, only when it
  // sleeps (`force`: always, for an abort or an end).
  void ring_bell(int r, bool force) noexcept {
    auto& b = seg_->rank(r);
    // Dekker's pairing with await's registration: a full fence on both sides, or, when every
    // rank of the job registered for membarrier's global commands, none here and one on every
    // core from the sleeper (detail/fence.hpp): a waker's full fence waits for its stores to
    // reach the other core, a cache-line round trip on every message.
    light_fence(asymmetric_.load(std::memory_order_relaxed));
    if (!force && b.sleepers.load(std::memory_order_relaxed) == 0) return;
    b.bell.fetch_add(1, std::memory_order_release);
    futex_wake_all(b.bell);
  }

  // Whether rank r's end of its socket to this rank has hung up (its process is gone, or its
  // transport ended).
  bool hung_up(int r) const noexcept {
    auto const& fd = peers_[static_cast<std::size_t>(r)];
    if (!fd) return false;
    pollfd p{fd.get(), POLLIN, 0};
    return ::poll(&p, 1, 0) > 0 && (p.revents & (POLLHUP | POLLERR | POLLIN)) != 0;
  }

  // A peer whose process is gone (killed, crashed), or that failed, or that ended its job while
  // this rank waits for it, ends the wait with an error that names it.
  template <class Ready>
  void check_peers(int peer, Ready& ready, bool drain_rings) {
    // Kept vectors (reserved at setup): a wait that sleeps allocates nothing.
    auto& fds = poll_fds_;
    auto& who = poll_ranks_;
    fds.clear();
    who.clear();
    for (int r = 0; r < o_.size; ++r)
      if (peers_[static_cast<std::size_t>(r)]) {
        fds.push_back({peers_[static_cast<std::size_t>(r)].get(), POLLIN, 0});
        who.push_back(r);
      }
    if (!fds.empty() && ::poll(fds.data(), fds.size(), 0) > 0)
      for (std::size_t i = 0; i < fds.size(); ++i) {
        if ((fds[i].revents & (POLLHUP | POLLERR | POLLIN)) == 0) continue;
        int const r = who[i];
        auto const ended = seg_->rank(r).ended.load(std::memory_order_acquire);
        if (ended == 1) {  // a clean end: what it sent is still in the segment
          peers_[static_cast<std::size_t>(r)].reset();
          continue;
        }
        if (ended == 2) {
          // Its error, which it wrote into the segment before it left, names the cause (a rank
          // it found stopped, a disagreement); this rank would only name the messenger. Seen on
          // a loaded machine: a rank stopped, another timed out, and a third heard the hang-up
          // before the bell, and said "rank 1 failed" where the others said "rank 2 does not
          // answer".
          throw_if_aborted(peer);
          fail(errc::aborted, "rank " + name(r) + " failed and left the job" + waiting_text(peer));
        }
        fail(errc::peer_closed, "rank " + name(r) +
                                    " died: its process ended without leaving the job (killed "
                                    "or crashed)" +
                                    waiting_text(peer));
      }
    if (peer >= 0 && peer != o_.rank &&
        seg_->rank(peer).ended.load(std::memory_order_acquire) != 0) {
      if (drain_rings) progress();  // everything it sent is in its ring by now
      if (ready()) return;
      // It failed (rather than ended): its error names the cause, as above.
      if (seg_->rank(peer).ended.load(std::memory_order_relaxed) == 2) throw_if_aborted(peer);
      auto const last = seg_->rank(peer).call.load();
      fail(errc::peer_closed,
           "rank " + name(peer) + " ended its job (after " +
               (last.kind == call_kind::point_to_point ? std::string("calling no collective")
                                                       : describe(last)) +
               ") while this rank waits for it" + waiting_text(peer));
    }
  }
  std::string waiting_text(int peer) const {
    if (peer == external_wait)
      return " (this rank was in " + describe(call_) + ", waiting for a rank on another host)";
    if (peer < 0) return " (during the setup)";
    return " (this rank was in " + describe(call_) + ", waiting for rank " + name(peer) + ")";
  }

  // Messages that arrived for a collective this rank is in under another call, or has finished
  // without reading them: the ranks disagree about the call.
  void check_arrivals() {
    for (int s = 0; s < o_.size; ++s)
      for (auto const& e : queues_[static_cast<std::size_t>(s)]) {
        if (e->call.kind == call_kind::point_to_point) continue;
        auto v = progress_.check(e->call);
        if (v == call_progress::verdict::conflict || v == call_progress::verdict::stale)
          fail(errc::mismatch, progress_.disagreement(name_of(o_.rank), name_of(s), e->call));
      }
  }

  // ---- errors ------------------------------------------------------------------------------

  // Runs a public call; its first transport_error poisons the transport and, unless it is
  // itself an abort, ends the job with it so that every rank stops (and says why).
  template <class F>
  void guarded(char const* what, int peer, F&& f) {
    if (poisoned_)
      throw transport_error(errc::aborted, prefix_ + what +
                                               (peer >= 0 ? " rank " + name(peer) : std::string()) +
                                               ": this transport failed earlier: " + failure_);
    try {
      f();
    } catch (transport_error const& e) {
      poisoned_ = true;
      failure_ = e.what();
      if (e.code() != errc::aborted) abort_job(e);
      throw;
    }
  }

  [[noreturn]] void fail(errc code, std::string const& what) const {
    throw transport_error(code, prefix_ + what);
  }

  // Writes the job's abort state (the first error wins) and wakes every rank.
  void abort_job(transport_error const& e) noexcept {
    auto& h = seg_->header();
    std::uint32_t expected = 0;
    if (!h.abort_state.compare_exchange_strong(expected, 1, std::memory_order_acq_rel)) return;
    h.abort_code = static_cast<std::uint32_t>(e.code().value());
    std::string_view text = e.what();
    if (text.starts_with("gcl: ")) text.remove_prefix(5);
    std::snprintf(h.abort_reason, sizeof h.abort_reason, "%.*s", static_cast<int>(text.size()),
                  text.data());
    h.abort_state.store(2, std::memory_order_release);
    for (int r = 0; r < o_.size; ++r) ring_bell(r, true);
  }

  // How long a rank waits for another's failure to be written into the segment: a writer is
  // busy for microseconds unless descheduled or killed half-way.
  clock::time_point reason_deadline() const {
    return clock::now() + std::min<clock::duration>(std::chrono::seconds{1}, o_.timeout);
  }

  void throw_if_aborted(int peer) const {
    if (group_ && group_->aborted.load(std::memory_order_acquire)) {
      std::string reason;
      errc code;
      {
        std::lock_guard lock(group_->mutex);
        reason = group_->reason;
        code = group_->code;
      }
      throw_abort(code, reason, peer);
    }
    auto const& h = seg_->header();
    if (h.abort_state.load(std::memory_order_acquire) == 0) return;
    auto const st = settled_abort_state(h.abort_state, reason_deadline());
    if (st == 1) throw_abort(errc::aborted, "another rank is failing", peer);
    throw_abort(static_cast<errc>(h.abort_code), h.abort_reason, peer);
  }
  [[noreturn]] void throw_aborted(char const* what, int peer) const {
    // A withdrawn message means that its sender failed, but the sender withdraws as its error
    // unwinds, before that error reaches the segment's abort state (under hybrid_transport an
    // error of the TCP side reaches it after unwinding through this one). Wait for it, up to a
    // second (or the timeout), so that this rank names the rank that failed first, as the
    // others do: seen under AddressSanitizer, one survivor in about a hundred killed-rank runs
    // said only that its sender had withdrawn.
    yield_until(
        [&] {
          return seg_->header().abort_state.load(std::memory_order_acquire) != 0 ||
                 (group_ && group_->aborted.load(std::memory_order_acquire));
        },
        reason_deadline());
    throw_if_aborted(peer);
    throw transport_error(errc::aborted, prefix_ + what + " rank " + name(peer) + " in " +
                                             describe(call_) +
                                             ": the sender withdrew its message (it failed)");
  }
  [[noreturn]] void throw_abort(errc code, std::string const& reason, int peer) const {
    if (code == errc::mismatch)  // the disagreement concerns every rank: say it as it is
      throw transport_error(code, prefix_ + reason);
    throw transport_error(
        errc::aborted,
        prefix_ + (peer >= 0 ? "waiting for rank " + name(peer) + " in " : std::string("in ")) +
            describe(call_) + ": aborted: " + reason);
  }

  // Every rank's progress, read from the segment; a rank whose process is stopped (SIGSTOP, a
  // debugger) does not answer.
  std::vector<rank_status> statuses() const {
    std::vector<rank_status> all;
    for (int r = 0; r < o_.size; ++r) {
      auto const& b = seg_->rank(r);
      rank_status st;
      st.rank = name_of(r);
      st.answered = r == o_.rank || !stopped(b.pid.load(std::memory_order_relaxed));
      st.started = b.started.load(std::memory_order_relaxed);
      st.in_call = b.in_call.load(std::memory_order_acquire) != 0;
      st.waiting_for = b.waiting_for.load(std::memory_order_relaxed);
      if (st.waiting_for >= 0) st.waiting_for = name_of(st.waiting_for);
      st.call = b.call.load();
      if (st.call.sequence != st.started) st.call = {};
      all.push_back(st);
    }
    return all;
  }
  std::string stall_text() const {
    std::string s;
    for (auto const& st : statuses())
      if (!st.answered) s += "rank " + std::to_string(st.rank) + " does not answer (stopped); ";
    return s + "not every rank reached it";
  }
  static bool stopped(std::int32_t pid) {
    if (pid <= 0 || pid == ::getpid()) return false;
    std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    if (!std::getline(f, line)) return false;
    auto close = line.rfind(')');
    if (close == std::string::npos || close + 2 >= line.size()) return false;
    char state = line[close + 2];
    return state == 'T' || state == 't';
  }
  std::string unread_text() const {
    std::string unread;
    int count = 0;
    for (int s = 0; s < o_.size; ++s)
      for (auto const& e : queues_[static_cast<std::size_t>(s)])
        if (count++ < 4)
          unread += std::string(unread.empty() ? "" : ", ") + std::to_string(e->size) +
                    " bytes from rank " + name(s) + " (" + tag_text(e->tg) + ", " +
                    describe(e->call) + ")";
    if (count == 0) return {};
    return ". Received here but not read: " + unread + (count > 4 ? ", ..." : "");
  }

  shm_options o_;
  std::shared_ptr<shm_group_state> group_;
  std::string prefix_;
  std::shared_ptr<shm_segment> seg_;
  bool mapped_ = false;
  std::uint64_t ring_ = 0;
  std::uint64_t stamp_key_ = 0;       // the job's (shm_message::stamp)
  std::vector<unique_fd> peers_;      // peers_[r]: the socket whose hang-up says r is gone
  std::vector<std::uint64_t> heads_;  // heads_[r]: bytes written to r's ring
  // call_'s generation (call_generation), and the generation each ring to a peer last named.
  // The generation 0 is call_info{}'s, which a receiver takes as named before any extension.
  struct named_call {
    call_info call;  // its sequence 0
    std::uint64_t generation = 0;
  };
  std::array<named_call, 2> recent_calls_{};
  std::size_t latest_call_ = 0;  // recent_calls_[latest_call_]: the one call_ was last found in
  std::uint64_t last_generation_ = 0;
  std::uint64_t call_generation_ = 0;
  bool generation_known_ = true;  // call_generation_ is call_'s
  std::vector<std::uint64_t> named_generation_;
  std::vector<std::uint64_t> tails_seen_;  // tails_seen_[r]: r's tail as last read (room)
  std::vector<shm_incoming> incoming_;     // incoming_[s]: what is being read from s
  // queues_[s]: arrived from s, not yet received, oldest first. A vector whose capacity stays
  // (a deque frees and allocates blocks as it is used).
  std::vector<std::vector<std::unique_ptr<shm_entry>>> queues_;
  std::vector<std::unique_ptr<shm_entry>> spare_;  // received entries, kept for reuse
  std::vector<pollfd> poll_fds_;                   // check_peers' (kept: no allocation)
  std::vector<int> poll_ranks_;
  shm_posted posted_;
  call_info call_{};
  call_progress progress_;
  bool poisoned_ = false;
  // Light fences for wakers, heavy for sleepers (start, ring_bell). Atomic: the group's abort
  // rings this rank's bell from another thread, possibly while start() sets it.
  std::atomic<bool> asymmetric_{false};
  std::string failure_;
  std::function<void()> external_check_;  // set_external_check
  std::function<void()> before_sleep_;    // set_before_sleep
  // What peers read with process_vm_readv at setup to learn whether they may.
  std::uint64_t probe_ = 0;
  std::shared_ptr<shm_pool> pool_;     // this rank's part of the segment's pools
  std::uint64_t sent_from_pool_ = 0;   // messages offered from pool_
  std::uint64_t bytes_queued_ = 0;     // copied into queue entries (bytes_queued())
  std::uint64_t bytes_forwarded_ = 0;  // combined from ring to ring (bytes_forwarded())
  std::size_t combine_threshold_ = o_.combine_threshold();  // sendrecv_reduce's, from o_
  // Whether drain leaves a message that no posted receive matches where it is, for the receive
  // that will take it (one copy, into that receive's buffer, rather than two): an offer in its
  // entry, uncopied, and a large message in its ring (parks). Off while this rank may sleep
  // (await), so that no sender waits on a sleeping rank.
  bool defer_ = true;
  // The first bytes of each lap of a ring that small messages go round (rewinds_after), and
  // the largest payload that does: the messages whose time is a cache line's trip.
  std::uint64_t const rewind_window_ = o_.rewind_window();
  static constexpr std::size_t rewind_payload_max = 1024;
  // How many looks a wait takes, a pause apart, before it starts to yield (host_cpus.hpp).
  // Whether the ranks of this machine outnumber its CPUs: the options' word where something
  // that sees the whole machine said (hybrid_transport), else this job's ranks against them.
  bool const cores_shared_ = o_.shares_cores.value_or(ranks_outnumber_cpus(o_.size));
  int const paused_looks_ = looks_before_yielding_when(cores_shared_);
  std::chrono::nanoseconds const polling_before_yielding_ =
      polling_before_yielding_when(cores_shared_);
  // How long a wait polls before it sleeps (await): o_.spin, else default_spin.
  std::chrono::microseconds const spin_ = o_.spin.value_or(default_spin(o_.size));
  // How long a wait keeps the offers that no posted receive matches in their senders' memory
  // (their senders waiting) before it copies them (await): the whole `spin` if the options say
  // how long to poll, else no longer than the 50 us of ranks that share cores. Where each rank
  // has a core, default_spin polls for 2 ms, and a sender would wait as long.
  std::chrono::microseconds const offer_patience_ =
      o_.spin ? *o_.spin : std::min(spin_, shared_core_spin);
  // Whether forward_posted waits for a held message's bytes in batches (ranks outnumber cores).
  bool const batch_pieces_ = ranks_outnumber_cpus(o_.size);
  static constexpr std::uint64_t forward_batch_bytes = 64 * 1024;
  // Where sendrecv_reduce's message lands a piece at a time to be combined, aligned for any
  // element: pieces of up to 16 KiB from a ring (they stay in the first-level cache, and the
  // ring's room goes back to its sender piece by piece), of up to 256 KiB from
  // process_vm_readv (in the second-level cache: each call pins the pages it reads, and 16 KiB
  // calls took a 64 MiB all_reduce at P = 2 from 21 ms to 30).
  static constexpr std::size_t ring_piece_bytes = 16 * 1024;
  static constexpr std::size_t staging_bytes = 256 * 1024;
  struct aligned_delete {
    void operator()(std::byte* p) const noexcept { ::operator delete[](p, std::align_val_t{64}); }
  };
  // Allocated only where combining may happen (by default everywhere: shm_options).
  std::unique_ptr<std::byte[], aligned_delete> staging_{
      combine_threshold_ == static_cast<std::size_t>(-1)
          ? nullptr
          : static_cast<std::byte*>(::operator new[](staging_bytes, std::align_val_t{64}))};
  // Where pull copies a message read in place before combining it (combine_in_place_threshold_
  // and less), grown to the largest such message and kept: no allocation once warm.
  std::size_t const combine_in_place_threshold_ = o_.combine_in_place_threshold();
  // The smallest message from the pool that is offered (shm_options::pool_offer_threshold).
  std::size_t const pool_offer_threshold_ = o_.pool_offer_threshold();
  std::unique_ptr<std::byte[], aligned_delete> copy_out_;
  std::size_t copy_out_bytes_ = 0;
  std::byte* copy_out_room(std::size_t bytes) {
    if (bytes > copy_out_bytes_) {
      copy_out_.reset(static_cast<std::byte*>(::operator new[](bytes, std::align_val_t{64})));
      copy_out_bytes_ = bytes;
    }
    return copy_out_.get();
  }
};

}  // namespace gcl::detail
