#pragma once
/// \file
/// `inproc_transport`: ranks are threads of one process.
///
/// Each destination rank has an inbox. A send first looks for a receive already posted by the
/// destination (`recv`, `sendrecv`, `irecv`) for its (source, tag): if there is one, the sender
/// copies straight into the receiver's buffer, the one copy a message costs. Otherwise it copies
/// into a pooled buffer of the inbox and returns (eager send); the receiver copies it out later.
/// Pooled buffers and queue slots are kept and reused, so a warm transport allocates nothing per
/// message. Every wait is bounded by `inproc_options::timeout` and woken by `group::abort`.

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
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "../call_info.hpp"
#include "../detail/call_progress.hpp"
#include "../detail/deadline.hpp"
#include "../error.hpp"

namespace gcl {

/// Options of `inproc_transport`, passed to `spawn` or to `inproc_transport::group`.
///
///     gcl::spawn<gcl::inproc_transport>(4, f, {.timeout = std::chrono::seconds{5}});
struct inproc_options {
  /// Bound on every blocking call; a call that waits longer throws `errc::timeout`, naming the
  /// ranks that hold the collective up. Long by default, as torch.distributed's 30 minutes: a
  /// rank may spend minutes evaluating or checkpointing between collectives. Tests set their own.
  std::chrono::milliseconds timeout{std::chrono::minutes{30}};
  /// How long a blocked call polls for its message before sleeping on a condition variable.
  /// Waking a sleeping thread costs microseconds (a futex call and a reschedule), which
  /// dominates small messages; polling yields the core on every round, so ranks that outnumber
  /// the cores still make progress. 0: never poll. See doc/benchmarks.md for the measurements.
  std::chrono::microseconds spin{50};
};

namespace detail {

// A receive waiting for its message. Lives on the receiver's stack (recv, sendrecv) or in an
// irecv request; the inbox only points to it while it is posted.
struct inproc_posted_recv {
  enum class state : unsigned char { idle, posted, claimed, done, mismatch };
  int source = 0;
  tag tg{};
  std::span<std::byte> destination;
  call_info receiver_call;
  state st = state::idle;
  // Filled by a sender that found the receive incompatible:
  std::size_t sent_bytes = 0;
  call_info sender_call;
};

// A message that arrived before its receive was posted, in a buffer owned by the inbox.
struct inproc_message {
  int source = 0;
  tag tg{};
  call_info call;
  std::unique_ptr<std::byte[]> data;
  std::size_t capacity = 0;
  std::size_t size = 0;
  bool ready = false;  // false while the sender is still copying in (outside the lock)
};

struct inproc_inbox {
  std::mutex mutex;
  std::condition_variable changed;
  // Bumped under `mutex` whenever `changed` is notified, so that a waiter can poll for news
  // without the lock (see inproc_transport::await).
  std::atomic<std::uint32_t> events{0};
  void notify() {
    events.fetch_add(1, std::memory_order_release);
    changed.notify_all();
  }
  std::vector<inproc_message*> queue;       // in send order; matched FIFO per (source, tag)
  std::vector<inproc_posted_recv*> posted;  // in post order
  std::vector<std::unique_ptr<inproc_message>> owned;
  std::vector<inproc_message*> free;  // reusable messages, buffers kept
  // The owner's collectives, which senders check their messages against, and the rank the
  // owner is blocked on (-1: none), for timeout messages.
  call_progress progress;
  int waiting_for = -1;
  // The owner's transport is gone (its job ended normally): `progress` holds its last
  // collective, and a rank that begins a later one knows it is alone.
  bool ended = false;
};

class inproc_world {
 public:
  inproc_world(int size, inproc_options options)
      : size_(size), options_(options), inboxes_(std::make_unique<inproc_inbox[]>(size)) {}

  int size() const noexcept { return size_; }
  inproc_options const& options() const noexcept { return options_; }
  inproc_inbox& inbox(int rank) noexcept { return inboxes_[rank]; }

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
  // Takes every inbox lock: call it holding none.
  void abort(std::string const& reason, errc code = errc::aborted) {
    {
      std::lock_guard lock(reason_mutex_);
      if (aborted_.load()) return;
      reason_ = reason;
      code_ = code;
      aborted_.store(true, std::memory_order_release);
    }
    for (int r = 0; r < size_; ++r) {
      std::lock_guard lock(
          inboxes_[r].mutex);  // no waiter can miss the flag between check and wait
      inboxes_[r].notify();
    }
  }

 private:
  int size_;
  inproc_options options_;
  std::unique_ptr<inproc_inbox[]> inboxes_;
  std::atomic<bool> aborted_{false};
  std::mutex reason_mutex_;
  std::string reason_;
  errc code_ = errc::aborted;
};

inline std::string tag_text(tag tg) {
  auto v = static_cast<std::uint32_t>(tg);
  return v >= tag_user_limit ? "library tag " + std::to_string(v) : "tag " + std::to_string(v);
}

}  // namespace detail

/// A rank of a group of threads in one process. Create the group once and connect each rank,
/// or let `gcl::spawn` do both:
///
///     gcl::inproc_transport::group g(4);
///     // on thread r:  gcl::communicator comm(g.connect(r));
class inproc_transport {
 public:
  using options = inproc_options;

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

  /// A pending `irecv`. Completes when a sender copies into its buffer, or in `wait()`.
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
      self->wait_posted(*post_, "irecv from");
    }
    /// True once the message is in the buffer; never blocks. Throws what `wait()` would.
    bool test() {
      if (!self_) return true;
      {
        auto& box = self_->world_->inbox(self_->rank_);
        std::lock_guard lock(box.mutex);
        using st = detail::inproc_posted_recv::state;
        if (post_->st == st::posted || post_->st == st::claimed) return false;
      }
      wait();
      return true;
    }

   private:
    friend class inproc_transport;
    request() = default;
    void cancel() noexcept {
      if (self_) self_->withdraw(*post_);
      self_ = nullptr;
    }
    inproc_transport* self_ = nullptr;  // null once complete
    std::unique_ptr<detail::inproc_posted_recv> post_;
  };

  int rank() const noexcept { return rank_; }
  int size() const noexcept { return world_->size(); }

  /// Which call the following messages belong to; compared with the peer's on every receive.
  /// When a collective begins, messages of it that peers sent ahead are checked now: a peer that
  /// called another collective under the same number is `errc::mismatch` here and at once.
  void set_call(call_info const& c) {
    call_ = c;
    auto& box = world_->inbox(rank_);
    std::unique_lock lock(box.mutex);
    box.progress.set(c);
    if (c.kind == call_kind::point_to_point) return;
    lock.unlock();
    for (int r = 0; r < world_->size(); ++r)
      if (auto what = ended_disagreement(r, box.progress); !what.empty()) fail_mismatch(what);
    lock.lock();
    for (auto* m : box.queue) {
      using verdict = detail::call_progress::verdict;
      auto v = box.progress.check(m->call);
      if (v == verdict::conflict || v == verdict::stale) {
        auto what = box.progress.disagreement(rank_, m->source, m->call);
        lock.unlock();
        fail_mismatch(what);
      }
    }
  }

  /// Eager: copies `out` (into the posted receive, or a pooled buffer) and returns.
  void send(int peer, tag tg, std::span<std::byte const> out) {
    throw_if_aborted("send to", peer);
    auto& box = world_->inbox(peer);
    std::unique_lock lock(box.mutex);
    // The receiver's view of this collective, whether or not it is about to read this message:
    // a receiver in another call under this number, or done with it, disagrees with us.
    if (auto v = box.progress.check(call_); v == detail::call_progress::verdict::conflict ||
                                            v == detail::call_progress::verdict::stale) {
      auto what = box.progress.disagreement(peer, rank_, call_);
      lock.unlock();
      fail_mismatch(what);
    }
    // A posted receive and a queued message for the same (source, tag) never coexist: each is
    // only added after finding none of the other under this lock. So FIFO holds either way.
    auto it = std::find_if(box.posted.begin(), box.posted.end(),
                           [&](auto* p) { return p->source == rank_ && p->tg == tg; });
    if (it != box.posted.end()) {
      auto* p = *it;
      box.posted.erase(it);
      using st = detail::inproc_posted_recv::state;
      if (p->destination.size() != out.size() || !(p->receiver_call == call_)) {
        p->st = st::mismatch;  // the receiver reports it, naming both sides; nothing is copied
        p->sent_bytes = out.size();
        p->sender_call = call_;
        box.notify();
        return;
      }
      p->st = st::claimed;
      lock.unlock();
      if (!out.empty()) std::memcpy(p->destination.data(), out.data(), out.size());
      lock.lock();
      p->st = st::done;
      box.notify();
      return;
    }
    detail::inproc_message* m = acquire_message(box, out.size());
    m->source = rank_;
    m->tg = tg;
    m->call = call_;
    m->size = out.size();
    m->ready = false;
    box.queue.push_back(m);
    lock.unlock();
    if (!out.empty()) std::memcpy(m->data.get(), out.data(), out.size());
    lock.lock();
    m->ready = true;
    box.notify();
  }

  /// Blocks until exactly `in.size()` bytes from `peer` with `tg` are in `in`.
  void recv(int peer, tag tg, std::span<std::byte> in) {
    detail::inproc_posted_recv p;
    if (post_or_find(peer, tg, in, p))
      wait_posted(p, "recv from");
    else
      take_queued(peer, tg, in, "recv from");
  }

  /// Posts the receive, sends, then waits: the incoming message lands in `in` directly.
  void sendrecv(int dst, tag send_tag, std::span<std::byte const> out, int src, tag recv_tag,
                std::span<std::byte> in) {
    detail::inproc_posted_recv p;
    bool posted = post_or_find(src, recv_tag, in, p);
    try {
      send(dst, send_tag, out);
    } catch (...) {
      if (posted) withdraw(p);
      throw;
    }
    if (posted)
      wait_posted(p, "recv from");
    else
      take_queued(src, recv_tag, in, "recv from");
  }

  /// Posts a receive and returns; `wait()` or `test()` the request. Keep `in` alive until then.
  /// The transport must stay where it is (not moved) while the request is pending.
  request irecv(int peer, tag tg, std::span<std::byte> in) {
    request r;
    auto p = std::make_unique<detail::inproc_posted_recv>();
    if (post_or_find(peer, tg, in, *p)) {
      r.self_ = this;
      r.post_ = std::move(p);
    } else {
      // The message is already here: take it now, so that receives complete in post order
      // even if their requests are waited on in another order.
      take_queued(peer, tg, in, "irecv from");
    }
    return r;
  }

  inproc_transport(inproc_transport&& other) noexcept = default;
  inproc_transport& operator=(inproc_transport&& other) noexcept {
    if (this != &other) {
      end();
      world_ = std::move(other.world_);
      rank_ = other.rank_;
      call_ = other.call_;
    }
    return *this;
  }
  ~inproc_transport() { end(); }

 private:
  inproc_transport(std::shared_ptr<detail::inproc_world> world, int rank)
      : world_(std::move(world)), rank_(rank) {
    auto& mine = world_->inbox(rank_);
    std::lock_guard lock(mine.mutex);
    mine.ended = false;  // connected again after an earlier transport of this rank ended
  }

  static detail::inproc_message* acquire_message(detail::inproc_inbox& box, std::size_t bytes) {
    detail::inproc_message* m;
    if (!box.free.empty()) {
      m = box.free.back();
      box.free.pop_back();
    } else {
      box.owned.push_back(std::make_unique<detail::inproc_message>());
      m = box.owned.back().get();
      box.free.reserve(box.owned.size());  // so that releasing never allocates
    }
    if (m->capacity < bytes) {
      m->data.reset(new std::byte[bytes]);  // default-initialised: no zeroing of what we overwrite
      m->capacity = bytes;
    }
    return m;
  }

  // This rank's job is over. Unless an exception is on its way out (the group is then aborted
  // with that error, which is the cause), the other ranks learn its last collective: one that
  // has begun a later collective, or another call under the same number, will never be joined
  // by this rank, which is a disagreement about the calls, not a reason to wait for a timeout.
  void end() noexcept {
    if (!world_ || std::uncaught_exceptions() > 0) return;
    try {
      call_info last;
      {
        auto& mine = world_->inbox(rank_);
        std::lock_guard lock(mine.mutex);
        mine.ended = true;
        last = mine.progress.last();
      }
      for (int r = 0; r < world_->size(); ++r) {
        if (r == rank_) continue;
        auto& box = world_->inbox(r);
        std::unique_lock lock(box.mutex);
        auto what = box.progress.ended_disagreement(r, rank_, last);
        lock.unlock();
        if (!what.empty()) return world_->abort(what, errc::mismatch);
      }
    } catch (...) {  // out of memory for a message: the others' timeout still ends their wait
    }
  }

  // Holding no inbox lock: what rank r's end shows to a rank whose collectives are `mine`
  // (that rank's own inbox lock released by the caller), or "".
  std::string ended_disagreement(int r, detail::call_progress const& mine) const {
    if (r == rank_) return {};
    call_info last;
    {
      auto& box = world_->inbox(r);
      std::lock_guard lock(box.mutex);
      if (!box.ended) return {};
      last = box.progress.last();
    }
    return mine.ended_disagreement(rank_, r, last);
  }

  // Under the inbox lock: if a message for (peer, tg) is queued, leave it for take_queued and
  // return false; otherwise post `p` and return true.
  bool post_or_find(int peer, tag tg, std::span<std::byte> in, detail::inproc_posted_recv& p) {
    throw_if_aborted("recv from", peer);
    auto& box = world_->inbox(rank_);
    std::lock_guard lock(box.mutex);
    for (auto* m : box.queue)
      if (m->source == peer && m->tg == tg) return false;
    p.source = peer;
    p.tg = tg;
    p.destination = in;
    p.receiver_call = call_;
    p.st = detail::inproc_posted_recv::state::posted;
    box.posted.push_back(&p);
    return true;
  }

  // `box.changed.wait_until(lock, deadline, ready)`, but first polls `box.events` without the
  // lock for up to `options().spin`, re-checking `ready` under the lock after each event. Every
  // event is counted under the lock, so one that happens after `ready()` was false is seen.
  template <class Ready>
  bool await(detail::inproc_inbox& box, std::unique_lock<std::mutex>& lock,
             std::chrono::steady_clock::time_point deadline, Ready ready) {
    if (ready()) return true;
    if (auto const spin = world_->options().spin; spin.count() > 0) {
      auto const give_up = std::chrono::steady_clock::now() + spin;
      for (bool news = true; news;) {
        std::uint32_t const seen = box.events.load(std::memory_order_relaxed);
        lock.unlock();
        news = false;
        // Yield rather than pause: measured faster here even with a core per rank, and a rank
        // sharing the core (more ranks than cores) gets to run and send what we wait for.
        while (!(news = box.events.load(std::memory_order_acquire) != seen) &&
               std::chrono::steady_clock::now() < give_up)
          std::this_thread::yield();
        // Not lock(): the notifier still holds the mutex, and a contended std::mutex sleeps in
        // the kernel at once, which costs the very wake-up that polling is here to avoid.
        while (!lock.try_lock()) std::this_thread::yield();
        if (ready()) return true;
      }
    }
    // About to sleep: ranks that are all waiting in calls they disagree about (different roots
    // of a reduce: every rank only receives) exchange no message that could show it. The last
    // of them to get here sees the others' calls.
    if (call_.kind != call_kind::point_to_point) {
      lock.unlock();
      check_peers_agree();
      lock.lock();
    }
    return box.changed.wait_until(lock, deadline, ready);
  }

  // Holding no inbox lock: if another rank is inside a collective under the number of ours and
  // it is another call, ends the group with errc::mismatch (which wakes this rank too).
  void check_peers_agree() {
    for (int r = 0; r < world_->size(); ++r) {
      if (r == rank_) continue;
      auto& box = world_->inbox(r);
      std::unique_lock lock(box.mutex);
      if (box.progress.check(call_) != detail::call_progress::verdict::conflict) continue;
      auto what = box.progress.disagreement(r, rank_, call_);
      lock.unlock();
      world_->abort(what, errc::mismatch);
      return;
    }
  }

  void wait_posted(detail::inproc_posted_recv& p, char const* what) {
    using st = detail::inproc_posted_recv::state;
    auto& box = world_->inbox(rank_);
    std::unique_lock lock(box.mutex);
    auto deadline = std::chrono::steady_clock::now() + world_->options().timeout;
    box.waiting_for = p.source;
    bool finished = await(box, lock, deadline, [&] {
      return p.st == st::done || p.st == st::mismatch || world_->aborted();
    });
    box.waiting_for = -1;
    // A sender that claimed the receive is copying into our buffer: let it finish (bounded,
    // it does nothing but memcpy) before the buffer can go out of scope.
    box.changed.wait(lock, [&] { return p.st != st::claimed; });
    if (p.st == st::done) return;
    if (p.st == st::mismatch) {
      p.st = st::idle;
      throw mismatch_error(p.source, p.tg, p.destination.size(), p.receiver_call, p.sent_bytes,
                           p.sender_call);
    }
    std::erase(box.posted, &p);
    p.st = st::idle;
    if (finished) throw aborted_error(what, p.source);
    lock.unlock();
    throw timeout_error(what, p.source, p.tg, p.destination.size());
  }

  // Takes the first queued message for (peer, tg), waiting while its sender is still copying.
  void take_queued(int peer, tag tg, std::span<std::byte> in, char const* what) {
    auto& box = world_->inbox(rank_);
    std::unique_lock lock(box.mutex);
    auto deadline = std::chrono::steady_clock::now() + world_->options().timeout;
    auto find = [&] {
      return std::find_if(box.queue.begin(), box.queue.end(),
                          [&](auto* m) { return m->source == peer && m->tg == tg; });
    };
    box.waiting_for = peer;
    bool ok = await(box, lock, deadline, [&] {
      auto it = find();
      return (it != box.queue.end() && (*it)->ready) || world_->aborted();
    });
    box.waiting_for = -1;
    auto it = find();
    if (it == box.queue.end() || !(*it)->ready) {
      if (ok) throw aborted_error(what, peer);
      lock.unlock();
      throw timeout_error(what, peer, tg, in.size());
    }
    detail::inproc_message* m = *it;
    if (m->size != in.size() || !(m->call == call_))
      throw mismatch_error(peer, tg, in.size(), call_, m->size,
                           m->call);  // left queued: nothing lost
    box.queue.erase(it);
    lock.unlock();
    if (!in.empty()) std::memcpy(in.data(), m->data.get(), in.size());
    lock.lock();
    box.free.push_back(m);
  }

  // Removes a posted receive nobody will wait for (request destroyed, send failed).
  void withdraw(detail::inproc_posted_recv& p) noexcept {
    using st = detail::inproc_posted_recv::state;
    auto& box = world_->inbox(rank_);
    std::unique_lock lock(box.mutex);
    box.changed.wait(lock, [&] { return p.st != st::claimed; });
    if (p.st == st::posted) std::erase(box.posted, &p);
    p.st = st::idle;
  }

  void throw_if_aborted(char const* what, int peer) const {
    if (world_->aborted()) throw aborted_error(what, peer);
  }

  std::string prefix() const { return "gcl: rank " + std::to_string(rank_) + ": "; }

  transport_error mismatch_error(int peer, tag tg, std::size_t expected, call_info const& mine,
                                 std::size_t sent, call_info const& theirs) const {
    return transport_error(errc::mismatch,
                           prefix() + "expected " + std::to_string(expected) + " bytes for " +
                               describe(mine) + " from rank " + std::to_string(peer) + " (" +
                               detail::tag_text(tg) + "), but rank " + std::to_string(peer) +
                               " sent " + std::to_string(sent) + " bytes for " + describe(theirs));
  }
  // Holding no inbox lock (it takes each rank's in turn): who holds the call up, and what
  // this rank has received but not read.
  transport_error timeout_error(char const* what, int peer, tag tg, std::size_t bytes) const {
    std::vector<detail::rank_status> all;
    std::string unread;
    int unread_count = 0;
    for (int r = 0; r < world_->size(); ++r) {
      auto& box = world_->inbox(r);
      std::lock_guard lock(box.mutex);
      detail::rank_status st{
          r, true, box.progress.started(), box.progress.in_call(), box.waiting_for, {}};
      if (auto const* c = box.progress.recall(st.started)) st.call = *c;
      all.push_back(st);
      if (r != rank_) continue;
      for (auto* m : box.queue)
        if (m->ready && unread_count++ < 4)
          unread += std::string(unread.empty() ? "" : ", ") + std::to_string(m->size) +
                    " bytes from rank " + std::to_string(m->source) + " (" +
                    detail::tag_text(m->tg) + ", " + describe(m->call) + ")";
    }
    if (unread_count > 0)
      unread = ". Received here but not read: " + unread + (unread_count > 4 ? ", ..." : "");
    return transport_error(
        errc::timeout,
        detail::timeout_text(prefix(), call_,
                             std::string(what) + " rank " + std::to_string(peer) + " (" +
                                 std::to_string(bytes) + " bytes, " + detail::tag_text(tg) + ")",
                             detail::format_duration(world_->options().timeout),
                             detail::describe_stall(call_, all), unread));
  }
  transport_error aborted_error(char const* what, int peer) const {
    auto code = world_->abort_code();
    if (code == errc::mismatch)  // the disagreement concerns every rank: say it as it is
      return transport_error(code, prefix() + world_->abort_reason());
    return transport_error(code, prefix() + what + " rank " + std::to_string(peer) + " in " +
                                     describe(call_) + " aborted: " + world_->abort_reason());
  }
  // Ranks disagree about a call: every rank of the group learns it, with this text.
  [[noreturn]] void fail_mismatch(std::string const& what) const {
    world_->abort(what, errc::mismatch);
    throw transport_error(errc::mismatch, prefix() + what);
  }

  std::shared_ptr<detail::inproc_world> world_;
  int rank_ = 0;
  call_info call_{};
};

}  // namespace gcl
