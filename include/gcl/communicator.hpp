#pragma once
/// \file
/// `communicator<Transport>`: a rank's handle on its group. Point-to-point primitives are
/// members (as in Boost.Asio's sockets); collectives are free functions in collective/.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <ranges>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "call_info.hpp"
#include "concepts.hpp"
#include "detail/context.hpp"
#include "detail/error_text.hpp"
#include "error.hpp"

namespace gcl {

namespace detail {

/// The tag every collective's messages carry. One tag suffices: all ranks run the same
/// collectives in the same order, each pair's messages are FIFO, and `call_info` tells the
/// collectives apart (which is how a mismatch is caught on the first message rather than
/// hanging on a tag nobody sends).
inline constexpr tag collective_tag{1u << 31};

template <class T>
std::span<std::byte const> bytes_of(T const& data) {
  if constexpr (sendable_range<T const>)
    return std::as_bytes(std::span(std::ranges::data(data), std::ranges::size(data)));
  else
    return std::as_bytes(std::span(&data, 1));
}

template <class T>
std::span<std::byte> writable_bytes_of(T& data) {
  if constexpr (sendable_range<T>)
    return std::as_writable_bytes(std::span(std::ranges::data(data), std::ranges::size(data)));
  else
    return std::as_writable_bytes(std::span(&data, 1));
}

// The transport's own irecv request type, or a placeholder where it has none.
struct no_native_request {};
template <class T>
struct native_request {
  using type = no_native_request;
};
template <irecv_transport T>
struct native_request<T> {
  using type = decltype(std::declval<T&>().irecv(0, tag{}, std::span<std::byte>{}));
};

// One address per type, without RTTI: the key of `communicator::cached`.
template <class T>
inline constexpr char type_key = 0;

}  // namespace detail

/// A rank's view of its group: who it is, how many there are, and point-to-point messaging.
/// Payloads are contiguous ranges of trivially copyable elements, or single such values.
///
///     gcl::spawn<gcl::inproc_transport>(2, [](auto& comm) {
///       if (comm.rank() == 0) comm.send(1, std::vector<int>{1, 2, 3});
///       else { std::vector<int> v(3); comm.recv(0, v); }
///     });
///
/// `split` and `dup` make communicators over a subset of the ranks (or all of them) that share
/// this one's transport, no new connection made: their messages never meet this one's, each
/// numbers its own collectives, and each may be destroyed before or after the others.
template <transport Transport>
class communicator {
 public:
  using transport_type = Transport;

  /// The `color` with which a rank takes part in `split` without joining any of the new
  /// communicators (MPI_UNDEFINED); it then gets `std::nullopt`.
  static constexpr int no_color = -1;

  /// A pending non-blocking operation: `wait()` blocks until done, `test()` polls.
  class request {
   public:
    request() = default;  // already complete
    void wait() {
      if (auto* d = std::get_if<deferred>(&state_)) {
        auto const in = *d;
        state_ = std::monostate{};
        in.self->annotated([&] { in.self->transport_->recv(in.peer, in.tg, in.in); });
      } else if constexpr (irecv_transport<Transport>) {
        if (auto* n = std::get_if<native>(&state_)) self_->annotated([&] { n->wait(); });
      }
      state_ = std::monostate{};
    }
    /// True once complete. On transports without a native `irecv`, the receive happens here
    /// (blocking, bounded by the transport's timeout), so `test()` then always returns true.
    bool test() {
      if constexpr (irecv_transport<Transport>) {
        if (auto* n = std::get_if<native>(&state_)) {
          if (!self_->annotated([&] { return n->test(); })) return false;
          state_ = std::monostate{};
          return true;
        }
      }
      wait();
      return true;
    }

   private:
    friend class communicator;
    struct deferred {
      communicator* self;
      int peer;  // in the transport's numbering, and the tag with this communicator's context
      tag tg;
      std::span<std::byte> in;
    };
    communicator* self_ = nullptr;
    using native = typename detail::native_request<Transport>::type;
    std::variant<std::monostate, deferred, native> state_;
  };

  /// Keeps `call_info` set on the transport for the duration of one collective.
  class call_scope {
   public:
    call_scope(call_scope const&) = delete;
    call_scope& operator=(call_scope const&) = delete;
    ~call_scope() { self_.set_call(call_info{}); }

   private:
    friend class communicator;
    explicit call_scope(communicator& self) : self_(self) {}
    communicator& self_;
  };

  /// The world communicator of `t`: every rank of the transport, numbered as it numbers them.
  explicit communicator(Transport t)
      : transport_(std::make_shared<Transport>(std::move(t))),
        rank_(transport_->rank()),
        size_(transport_->size()) {
    // A communicator split from this one keeps the transport alive until its context is given
    // back (its lease is destroyed before its transport_), so the lock succeeds then.
    if constexpr (call_aware_transport<Transport>)
      context_.registry()->released = [weak =
                                           std::weak_ptr<Transport>(transport_)](std::uint32_t id) {
        if (auto alive = weak.lock()) alive->end_context(id);
      };
  }

  // One communicator per (rank, group): a copy would share its context and sequence numbers.
  // Moving hands the context over (detail::context_lease gives it back when destroyed).
  communicator(communicator const&) = delete;
  communicator& operator=(communicator const&) = delete;
  communicator(communicator&&) noexcept = default;
  communicator& operator=(communicator&&) noexcept = default;

  /// This rank, in [0, size()).
  int rank() const noexcept { return rank_; }
  /// The number of ranks in the group.
  int size() const noexcept { return size_; }
  /// The underlying transport, for its own options and statistics. Communicators made by
  /// `split` and `dup` share their parent's: its numbering of ranks is `transport_rank`'s.
  Transport& transport() noexcept { return *transport_; }
  Transport const& transport() const noexcept { return *transport_; }
  /// The transport's number for rank `r` of this communicator (`r` itself in the world's).
  int transport_rank(int r) const noexcept {
    return members_ ? (*members_)[static_cast<std::size_t>(r)] : r;
  }
  /// 0 for the world communicator; each communicator made by `split` or `dup` has another,
  /// the same on all its ranks (error messages say "communicator N").
  std::uint32_t context() const noexcept { return context_.id(); }

  /// Sends `data` (a range or a value) to `peer`; returns once `data` may be reused.
  template <sendable T>
  void send(int peer, T const& data, tag tg = tag{0}) {
    check_peer(peer, "send to");
    check_tag(tg);
    annotated([&] { transport_->send(transport_rank(peer), wire(tg), detail::bytes_of(data)); });
  }

  /// Receives into `data`, which must have exactly the size that `peer` sent.
  template <class T>
  requires sendable<std::remove_cvref_t<T>> &&
      (!std::is_const_v<std::remove_reference_t<T>>)void recv(int peer, T&& data, tag tg = tag{0}) {
    check_peer(peer, "recv from");
    check_tag(tg);
    annotated(
        [&] { transport_->recv(transport_rank(peer), wire(tg), detail::writable_bytes_of(data)); });
  }

  /// Receives one value: `int n = comm.recv<int>(0);`
  template <sendable_value T>
  T recv(int peer, tag tg = tag{0}) {
    T value;
    recv(peer, value, tg);
    return value;
  }

  /// Sends `out` to `dst` and receives `in` from `src` without deadlock, whatever the peers do.
  template <sendable S, class R>
  requires sendable<std::remove_cvref_t<R>>
  void sendrecv(int dst, S const& out, int src, R&& in, tag tg = tag{0}) {
    check_peer(dst, "send to");
    check_peer(src, "recv from");
    check_tag(tg);
    int const d = transport_rank(dst), s = transport_rank(src);
    tag const w = wire(tg);
    annotated([&] {
      if constexpr (sendrecv_transport<Transport>) {
        transport_->sendrecv(d, w, detail::bytes_of(out), s, w, detail::writable_bytes_of(in));
      } else {
        transport_->send(d, w, detail::bytes_of(out));  // eager, so this cannot deadlock
        transport_->recv(s, w, detail::writable_bytes_of(in));
      }
    });
  }

  /// Sends `out` to `dst` and combines what `src` sends (`acc.size()` elements) into `acc`:
  /// `acc[i] = op(acc[i], got[i])`, or `op(got[i], acc[i])` with `received_operand::left`.
  /// Over a `combining_transport` the message is reduced as it arrives (from the sender's
  /// memory, or the ring it streams through), with no scratch buffer in between; otherwise it
  /// is received into this communicator's scratch and reduced. The same messages either way.
  ///
  ///     comm.sendrecv_reduce(left, std::span<float const>(mine), right, std::span(acc),
  ///                          gcl::sum{});
  template <class T, class Op>
  void sendrecv_reduce(int dst, std::span<T const> out, int src, std::span<T> acc, Op const& op,
                       received_operand side = received_operand::right, tag tg = tag{0}) {
    if constexpr (combining_transport<Transport>) {
      check_peer(dst, "send to");
      check_peer(src, "recv from");
      check_tag(tg);
      bool combined = false;
      annotated([&] {
        combined = transport_->sendrecv_reduce(
            transport_rank(dst), wire(tg), std::as_bytes(out), transport_rank(src), wire(tg),
            std::as_writable_bytes(acc), combiner::of<T>(op, side));
      });
      if (combined) return;
    }
    auto got = scratch<T>(acc.size(), reduce_scratch_slot);
    sendrecv(dst, out, src, got, tg);
    combiner::of<T>(op, side)(reinterpret_cast<std::byte*>(acc.data()),
                              reinterpret_cast<std::byte const*>(got.data()), acc.size_bytes());
  }

  /// Whether `reduce_and_forward` and `recv_reduce` go to the transport
  /// (`forwarding_transport`: shm, hybrid), which writes a combined message straight into the
  /// one it forwards. Ring's scatter-reduce is written with them only then: elsewhere its
  /// `sendrecv_reduce` steps post each receive before the send.
  static constexpr bool forwards_reduced = forwarding_transport<Transport>;

  /// Whether `send(dst, out)` offers `out` to be read where it lies, returning only once `dst`
  /// has read it, rather than copying it out at once (`forwarding_transport`: shm, for a large
  /// message in its pool). Ring's scatter-reduce forwards only where its first send is not
  /// one: ranks that each send before they receive would otherwise wait on one another.
  template <class T>
  bool offers(int dst, std::span<T const> out) const {
    if constexpr (forwarding_transport<Transport>) {
      check_peer(dst, "send to");
      return transport_->offers(transport_rank(dst), std::as_bytes(out));
    } else {
      return false;
    }
  }

  /// Receives `acc.size()` elements from `src` and combines them into `acc` as
  /// `sendrecv_reduce` does, without sending: as they arrive over a `forwarding_transport`,
  /// else received into scratch and reduced.
  template <class T, class Op>
  void recv_reduce(int src, std::span<T> acc, Op const& op,
                   received_operand side = received_operand::right, tag tg = tag{0}) {
    if constexpr (forwarding_transport<Transport>) {
      check_peer(src, "recv from");
      check_tag(tg);
      bool combined = false;
      annotated([&] {
        combined = transport_->recv_reduce(transport_rank(src), wire(tg),
                                           std::as_writable_bytes(acc), combiner::of<T>(op, side));
      });
      if (combined) return;
    }
    auto got = scratch<T>(acc.size(), reduce_scratch_slot);
    recv(src, got, tg);
    combiner::of<T>(op, side)(reinterpret_cast<std::byte*>(acc.data()),
                              reinterpret_cast<std::byte const*>(got.data()), acc.size_bytes());
  }

  /// `recv_reduce(src, acc, ...)`, then sends the result to `dst`: the same two messages. Over
  /// a `forwarding_transport` (shm) the result is written straight into the message to `dst`
  /// as `src`'s arrives, and is not kept here, so `acc`'s contents afterwards are unspecified
  /// (the result, part of it, or what it held). A ring's scatter-reduce step forwards what the
  /// step before combined: written once, into the message, instead of into `acc` and then
  /// copied from there into the message (algorithm/ring.hpp).
  template <class T, class Op>
  void reduce_and_forward(int src, std::span<T> acc, int dst, Op const& op,
                          received_operand side = received_operand::right, tag tg = tag{0}) {
    if constexpr (forwarding_transport<Transport>) {
      check_peer(src, "recv from");
      check_peer(dst, "send to");
      check_tag(tg);
      bool forwarded = false;
      annotated([&] {
        forwarded = transport_->reduce_and_forward(
            transport_rank(src), wire(tg), std::as_writable_bytes(acc), combiner::of<T>(op, side),
            transport_rank(dst), wire(tg));
      });
      if (forwarded) return;
    }
    recv_reduce(src, acc, op, side, tg);
    send(dst, std::span<T const>(acc), tg);
  }

  /// Sends `out` to every other rank and receives what each rank r sends into `into(r)` (a
  /// `std::span<T>`), in one round, where the transport stages `out` once for all of them
  /// (`sharing_transport`: shm copies it into its share area of the segment, and each peer
  /// copies it from there). False, having sent nothing, where it does not: another transport,
  /// or a message larger than shm's share area (ranks that send the same sizes agree). Ring's
  /// all_reduce takes it for its all-gather (algorithm/ring.hpp).
  ///
  ///     comm.share_with_all(std::span<float const>(mine),
  ///                         [&](int r) { return std::span(all).subspan(r * n, n); });
  template <class T, class Into>
  bool share_with_all(std::span<T const> out, Into&& into, tag tg = tag{0}) {
    if constexpr (sharing_transport<Transport>) {
      check_tag(tg);
      // Kept vectors: a warm call allocates nothing.
      share_peers_.clear();
      share_ins_.clear();
      for (int k = 1; k < size_; ++k) {  // from the left neighbour on (shm/engine.hpp)
        int const r = (rank_ - k + size_) % size_;
        share_peers_.push_back(transport_rank(r));
        share_ins_.push_back(std::as_writable_bytes(std::span<T>(into(r))));
      }
      bool shared = false;
      annotated([&] {
        shared = transport_->share_with_all(share_peers_, wire(tg), std::as_bytes(out), share_ins_);
      });
      return shared;
    } else {
      return false;
    }
  }

  /// Non-blocking send. Sends are eager, so the returned request is already complete.
  template <sendable T>
  request isend(int peer, T const& data, tag tg = tag{0}) {
    send(peer, data, tg);
    return request{};
  }

  /// Non-blocking receive into `data`; keep `data` alive and unmoved until `wait()`.
  template <class T>
  requires sendable_range<std::remove_cvref_t<T>> || sendable_value<std::remove_cvref_t<T>> request
  irecv(int peer, T& data, tag tg = tag{0}) {
    check_peer(peer, "recv from");
    check_tag(tg);
    request r;
    r.self_ = this;
    if constexpr (irecv_transport<Transport>)
      annotated([&] {
        r.state_.template emplace<typename request::native>(
            transport_->irecv(transport_rank(peer), wire(tg), detail::writable_bytes_of(data)));
      });
    else
      r.state_ = typename request::deferred{this, transport_rank(peer), wire(tg),
                                            detail::writable_bytes_of(data)};
    return r;
  }

  /// A new communicator of the ranks that pass the same `color` (>= 0), numbered by `key`,
  /// ties by their rank here (MPI_Comm_split). Collective: every rank of this communicator
  /// calls it, in the same place of its sequence of collectives. A rank passing `no_color`
  /// takes part but gets `std::nullopt`. The new communicator shares this one's transport (no
  /// connection is made), has its own context (messages of the two never meet) and numbers its
  /// own collectives; it may outlive this one.
  ///
  ///     auto row = *comm.split(comm.rank() / cols, comm.rank() % cols);
  ///     auto col = *comm.split(comm.rank() % cols, comm.rank() / cols);
  ///     gcl::all_reduce(row, v, gcl::sum{});  // then over col: the sum over all ranks
  std::optional<communicator> split(int color, int key) {
    if (color < 0 && color != no_color)
      throw usage_error(detail::rank_prefix(rank()) + "split color " + std::to_string(color) +
                        " is negative; colors are >= 0, or no_color (" + std::to_string(no_color) +
                        ") for a rank that joins no new communicator");
    struct offer {
      std::int32_t color, key;
      detail::context_set used;
    };
    std::vector<offer> all(static_cast<std::size_t>(size()));
    offer const mine{color, key, context_.registry()->used};
    all[static_cast<std::size_t>(rank())] = mine;
    {
      // Everyone's color, key and used contexts, from everyone (each pair once in each
      // direction, so the count of messages is size * (size - 1), as gcl::direct's all_gather).
      call_info info;
      info.kind = call_kind::split;
      info.count = 1;
      detail::copy_name(info.algorithm, "direct");
      auto scope = begin_call(info);
      for (int d = 1; d < size(); ++d) {
        int const to = (rank() + d) % size(), from = (rank() - d + size()) % size();
        sendrecv(to, mine, from, all[static_cast<std::size_t>(from)], detail::collective_tag);
      }
    }
    // The lowest id that no rank of this communicator uses: the same on every rank, and new
    // communicators of different colors may share it (they have no rank in common).
    detail::context_set used;
    for (auto const& o : all) used |= o.used;
    std::uint32_t const id = used.lowest_free();
    if (id == 0)
      throw usage_error(detail::rank_prefix(rank()) + "split: all " +
                        std::to_string(detail::context_count - 1) +
                        " communicator contexts are in use on some rank of this communicator; "
                        "destroy communicators made by split or dup that are no longer needed");
    if (color == no_color) return std::nullopt;
    std::vector<int> order;
    for (int r = 0; r < size(); ++r)
      if (all[static_cast<std::size_t>(r)].color == color) order.push_back(r);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
      return all[static_cast<std::size_t>(a)].key < all[static_cast<std::size_t>(b)].key;
    });
    auto members = std::make_shared<std::vector<int>>();
    int new_rank = 0;
    for (std::size_t i = 0; i < order.size(); ++i) {
      if (order[i] == rank()) new_rank = static_cast<int>(i);
      members->push_back(transport_rank(order[i]));
    }
    return communicator(transport_, detail::context_lease(context_.registry(), id),
                        std::move(members), new_rank);
  }

  /// A communicator of the same ranks, numbered alike, with a context of its own
  /// (MPI_Comm_dup): a library given one can send and run collectives on it without meeting
  /// its caller's messages. Collective, like `split`.
  communicator dup() { return std::move(*split(0, rank())); }

  /// Marks the start of a collective: numbers it and tells a call-aware transport, so that its
  /// messages are checked against the peers' view of the same call. Used by collective/.
  [[nodiscard]] call_scope begin_call(call_info info) {
    info.sequence = detail::context_sequence(++sequence_, context_.id());
    set_call(info);
    return call_scope(*this);
  }

  /// A per-communicator scratch buffer of `n` elements of `T`, grown on demand and reused, so
  /// that algorithms allocate nothing per call once warm. `slot` picks one of a few buffers
  /// (0 to 2; `sendrecv_reduce` uses 3).
  template <class T>
  std::span<T> scratch(std::size_t n, int slot = 0) {
    static_assert(std::is_trivially_copyable_v<T> && alignof(T) <= alignof(std::max_align_t));
    auto& buf = scratch_.at(static_cast<std::size_t>(slot));
    std::size_t words = (n * sizeof(T) + sizeof(std::max_align_t) - 1) / sizeof(std::max_align_t);
    if (buf.size() < words) buf.resize(words);
    return {reinterpret_cast<T*>(buf.data()), n};
  }

  /// This communicator's instance of `State`, default-constructed on first use and destroyed
  /// with the communicator: what an algorithm learns across calls (MPI calls this attribute
  /// caching). Every rank runs the same collectives in the same order on its own communicator,
  /// so state updated only from values all ranks agree on stays the same on every rank, and a
  /// new communicator starts afresh.
  ///
  ///     auto& seen = comm.template cached<my_algorithm_state>();
  template <class State>
  State& cached() {
    void const* const key = &detail::type_key<State>;
    for (auto& [k, state] : cached_)
      if (k == key) return *static_cast<State*>(state.get());
    cached_.emplace_back(key,
                         erased_state(new State{}, [](void* s) { delete static_cast<State*>(s); }));
    return *static_cast<State*>(cached_.back().second.get());
  }

  /// Over `gcl::counting<...>`: what it counted of this communicator's own messages (those of
  /// the communicators split from it, or of its parent, are counted apart).
  decltype(auto) stats() const requires requires(Transport const& t) { t.stats(std::uint32_t{}); }
  { return transport_->stats(context_.id()); }

  /// The number of collectives this communicator has started.
  std::uint64_t collective_count() const noexcept { return sequence_; }

 private:
  communicator(std::shared_ptr<Transport> t, detail::context_lease context,
               std::shared_ptr<std::vector<int>> members, int rank)
      : transport_(std::move(t)),
        members_(std::move(members)),
        rank_(rank),
        size_(static_cast<int>(members_->size())),
        context_(std::move(context)) {}

  // The tag on the wire: the user's or the collective's, with this communicator's context.
  tag wire(tag tg) const noexcept { return detail::context_tag(tg, context_.id()); }

  // Runs a transport call; in a communicator made by split or dup, an error it throws also
  // says which of this communicator's ranks the transport's rank numbers are.
  template <class F>
  decltype(auto) annotated(F&& f) {
    if (!members_) return f();
    try {
      return f();
    } catch (transport_error const& e) {
      std::string what = e.what();
      // system_error's what() ends with ": <the code's message>", which the new error adds again.
      if (std::string const tail = ": " + e.code().message();
          what.size() >= tail.size() &&
          what.compare(what.size() - tail.size(), tail.size(), tail) == 0)
        what.resize(what.size() - tail.size());
      throw transport_error(
          static_cast<errc>(e.code().value()),
          what + detail::context_note(context_.id(), members_->size(), members_->data()));
    }
  }

  void set_call(call_info const& info) {
    in_collective_ = info.kind != call_kind::point_to_point;
    // A call-aware transport checks the messages that peers sent ahead for this call (now, or
    // at the call's first send or receive).
    if constexpr (call_aware_transport<Transport>) annotated([&] { transport_->set_call(info); });
  }
  void check_peer(int peer, std::string_view what) const {
    if (peer < 0 || peer >= size())
      throw usage_error(detail::rank_prefix(rank()) + std::string(what) + " rank " +
                        std::to_string(peer) + ", but the world size is " + std::to_string(size()) +
                        " (ranks 0.." + std::to_string(size() - 1) + ")");
  }
  void check_tag(tag tg) const {
    if (static_cast<std::uint32_t>(tg) >= tag_user_limit && !in_collective_)
      throw usage_error(detail::rank_prefix(rank()) + "tag " +
                        std::to_string(static_cast<std::uint32_t>(tg)) +
                        " is reserved for collectives; user tags must be below " +
                        std::to_string(tag_user_limit));
  }

  std::shared_ptr<Transport> transport_;       // shared with the communicators split from this one
  std::shared_ptr<std::vector<int>> members_;  // transport ranks of ours; null: the world
  int rank_ = 0, size_ = 0;
  detail::context_lease context_;
  std::uint64_t sequence_ = 0;
  bool in_collective_ = false;
  static constexpr int reduce_scratch_slot = 3;  // sendrecv_reduce's, over other transports
  std::vector<std::vector<std::max_align_t>> scratch_ =
      std::vector<std::vector<std::max_align_t>>(4);
  std::vector<int> share_peers_;                 // share_with_all's, kept
  std::vector<std::span<std::byte>> share_ins_;  // (no allocation once warm)
  using erased_state = std::unique_ptr<void, void (*)(void*)>;
  std::vector<std::pair<void const*, erased_state>> cached_;  // few entries: a linear search
};

}  // namespace gcl
