#pragma once
/// \file
/// `communicator<Transport>`: a rank's handle on its group. Point-to-point primitives are
/// members (as in Boost.Asio's sockets); collectives are free functions in collective/.

#include <cstddef>
#include <cstring>
#include <memory>
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
template <transport Transport>
class communicator {
 public:
  using transport_type = Transport;

  /// A pending non-blocking operation: `wait()` blocks until done, `test()` polls.
  class request {
   public:
    request() = default;  // already complete
    void wait() {
      if (auto* d = std::get_if<deferred>(&state_))
        d->self->transport_.recv(d->peer, d->tg, d->in);
      else if constexpr (irecv_transport<Transport>) {
        if (auto* n = std::get_if<native>(&state_)) n->wait();
      }
      state_ = std::monostate{};
    }
    /// True once complete. On transports without a native `irecv`, the receive happens here
    /// (blocking, bounded by the transport's timeout), so `test()` then always returns true.
    bool test() {
      if constexpr (irecv_transport<Transport>) {
        if (auto* n = std::get_if<native>(&state_)) {
          if (!n->test()) return false;
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
      int peer;
      tag tg;
      std::span<std::byte> in;
    };
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

  explicit communicator(Transport t) : transport_(std::move(t)) {}

  /// This rank, in [0, size()).
  int rank() const noexcept { return transport_.rank(); }
  /// The number of ranks in the group.
  int size() const noexcept { return transport_.size(); }
  /// The underlying transport, for its own options and statistics.
  Transport& transport() noexcept { return transport_; }
  Transport const& transport() const noexcept { return transport_; }

  /// Sends `data` (a range or a value) to `peer`; returns once `data` may be reused.
  template <sendable T>
  void send(int peer, T const& data, tag tg = tag{0}) {
    check_peer(peer, "send to");
    check_tag(tg);
    transport_.send(peer, tg, detail::bytes_of(data));
  }

  /// Receives into `data`, which must have exactly the size that `peer` sent.
  template <class T>
  requires sendable<std::remove_cvref_t<T>> &&
      (!std::is_const_v<std::remove_reference_t<T>>)void recv(int peer, T&& data, tag tg = tag{0}) {
    check_peer(peer, "recv from");
    check_tag(tg);
    transport_.recv(peer, tg, detail::writable_bytes_of(data));
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
    if constexpr (sendrecv_transport<Transport>) {
      transport_.sendrecv(dst, tg, detail::bytes_of(out), src, tg, detail::writable_bytes_of(in));
    } else {
      transport_.send(dst, tg, detail::bytes_of(out));  // eager, so this cannot deadlock
      transport_.recv(src, tg, detail::writable_bytes_of(in));
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
    if constexpr (irecv_transport<Transport>)
      r.state_.template emplace<typename request::native>(
          transport_.irecv(peer, tg, detail::writable_bytes_of(data)));
    else
      r.state_ = typename request::deferred{this, peer, tg, detail::writable_bytes_of(data)};
    return r;
  }

  /// Marks the start of a collective: numbers it and tells a call-aware transport, so that its
  /// messages are checked against the peers' view of the same call. Used by collective/.
  [[nodiscard]] call_scope begin_call(call_info info) {
    info.sequence = ++sequence_;
    set_call(info);
    return call_scope(*this);
  }

  /// A per-communicator scratch buffer of `n` elements of `T`, grown on demand and reused, so
  /// that algorithms allocate nothing per call once warm. `slot` picks one of a few buffers.
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

  /// The number of collectives this communicator has started.
  std::uint64_t collective_count() const noexcept { return sequence_; }

 private:
  void set_call(call_info const& info) {
    in_collective_ = info.kind != call_kind::point_to_point;
    if constexpr (call_aware_transport<Transport>) transport_.set_call(info);
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

  Transport transport_;
  std::uint64_t sequence_ = 0;
  bool in_collective_ = false;
  std::vector<std::vector<std::max_align_t>> scratch_ =
      std::vector<std::vector<std::max_align_t>>(4);
  using erased_state = std::unique_ptr<void, void (*)(void*)>;
  std::vector<std::pair<void const*, erased_state>> cached_;  // few entries: a linear search
};

}  // namespace gcl
