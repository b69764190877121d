#pragma once
/// \file
/// `counting<Transport>`: a transport decorator that counts, per rank, the messages and bytes it
/// sends and receives, the sizes of those messages, and the communication rounds: the length of
/// the longest chain of messages each of which could only be sent after the previous one had
/// arrived. It is how gcl proves the message counts of doc/algorithms.md.
///
/// Rounds are a Lamport clock. Each rank keeps `clock`, the highest depth it has received (0 at
/// start and after `reset()`). A message sent now gets depth `clock + 1`; receiving a message of
/// depth d sets `clock = max(clock, d)`. A rank's `rounds` is the highest depth it sent or
/// received, and the rounds of a collective are the maximum over ranks (`stats::operator+=`).
/// So the ring's reduce-scatter + all-gather is 2(P-1) rounds, a binomial tree 2 floor(log2 P)
/// (its height, twice; = 2 log2 P for powers of two),
/// direct 1, and a send issued before a receive in `sendrecv` does not depend on that receive.
///
/// The depth travels in a side message of 8 bytes on a derived reserved tag (`depth_tag`), sent
/// just before the payload and received just after it; the side messages are not counted. FIFO
/// per (source, destination, tag) pairs the k-th payload with the k-th depth. A side message
/// rather than a header on the payload keeps the payload's bytes, size checks and the wrapped
/// transport's zero-copy paths (posted receives, `irecv` into the user's buffer) exactly as
/// without counting, at the price of one uncounted small message per counted one.
///
/// Counts and clocks are kept per communicator: the messages of a communicator made by `split`
/// or `dup` (its context, in the tag: detail/context.hpp) are counted apart from the world's,
/// and their rounds on a clock of their own, so that a sub-communicator's collective counts
/// exactly as on a world of its size. `stats()` is the world communicator's; a communicator's
/// own: `comm.stats()`.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "call_info.hpp"
#include "concepts.hpp"
#include "detail/context.hpp"

namespace gcl {

/// What a `counting` transport saw since it was created or `reset()`. Add the stats of all
/// ranks with `+=` for the totals of a collective (sums of counts, max of rounds).
///
///     auto s = comm.transport().stats();
///     std::printf("%llu messages, %llu bytes, %d rounds\n", s.messages_sent, s.bytes_sent,
///     s.rounds);
struct transport_stats {
  std::uint64_t messages_sent = 0;
  std::uint64_t bytes_sent = 0;
  std::uint64_t messages_received = 0;
  std::uint64_t bytes_received = 0;
  /// Smallest and largest message sent, in bytes (0 and 0 when nothing was sent).
  std::uint64_t min_message_bytes = 0;
  std::uint64_t max_message_bytes = 0;
  /// How many messages of each size (bytes) were sent.
  std::map<std::uint64_t, std::uint64_t> sent_sizes;
  /// The longest chain of dependent messages this rank took part in (see the file comment).
  int rounds = 0;

  /// Combines two ranks' stats: counts add, sizes merge, rounds take the maximum.
  transport_stats& operator+=(transport_stats const& o) {
    if (o.messages_sent != 0) {
      min_message_bytes = messages_sent == 0 ? o.min_message_bytes
                                             : std::min(min_message_bytes, o.min_message_bytes);
      max_message_bytes = std::max(max_message_bytes, o.max_message_bytes);
    }
    messages_sent += o.messages_sent;
    bytes_sent += o.bytes_sent;
    messages_received += o.messages_received;
    bytes_received += o.bytes_received;
    for (auto [size, n] : o.sent_sizes) sent_sizes[size] += n;
    rounds = std::max(rounds, o.rounds);
    return *this;
  }
  friend transport_stats operator+(transport_stats a, transport_stats const& b) { return a += b; }
};

/// A transport that counts what `Transport` moves, and is otherwise `Transport`:
///
///     gcl::spawn<gcl::counting<gcl::inproc_transport>>(4, [](auto& comm) {
///       std::vector<float> v(1000, 1.0f);
///       gcl::all_reduce(comm, v, gcl::sum{}, gcl::ring{});
///       auto s = comm.transport().stats();  // 6 messages of 250 floats, 6 rounds
///     });
///
/// It forwards `set_call`, `sendrecv`, `sendrecv_reduce`, `recv_reduce`, `reduce_and_forward`,
/// `share_with_all` and `irecv` when `Transport` has them, and
/// `group` and `options` when `Transport` is a group transport (so `spawn` works over it).
template <transport Transport>
class counting;

namespace detail {
template <class Transport>
struct counting_group_base;
}

template <transport Transport>
class counting : public detail::counting_group_base<Transport> {
 public:
  using inner_type = Transport;

  /// The derived tag that carries the depth of messages sent with `tg` (bit 30 flipped: user
  /// tags map into the reserved range [2^30, 2^31), collective tags above 2^31 stay reserved).
  static constexpr tag depth_tag(tag tg) noexcept {
    return tag{static_cast<std::uint32_t>(tg) ^ (1u << 30)};
  }

  explicit counting(Transport inner) : inner_(std::move(inner)) {}

  counting(counting&&) noexcept = default;
  counting& operator=(counting&&) noexcept = default;

  int rank() const noexcept { return inner_.rank(); }
  int size() const noexcept { return inner_.size(); }

  /// What was counted of the world communicator's messages since construction or the last
  /// `reset()`.
  transport_stats const& stats() const noexcept { return stats(0); }
  /// What was counted of the messages of the communicator with context id `context`
  /// (`communicator::context()`; `communicator::stats()` calls this).
  transport_stats const& stats(std::uint32_t context) const noexcept {
    static transport_stats const none;
    return context < contexts_.size() ? contexts_[context].stats : none;
  }
  /// Zeroes counts and round clocks. Reset every rank at a point where no counted message
  /// is in flight (e.g. before the first collective, or between two spawns).
  void reset() noexcept {
    for (auto& c : contexts_) c = per_context{};
  }

  /// A fork of the wrapped transport (`forkable_transport`), counted apart: the lane of a
  /// communicator's non-blocking collectives, whose messages this one's stats do not include.
  counting fork(fork_bootstrap& b) requires forkable_transport<Transport> {
    return counting(inner_.fork(b));
  }

  /// The wrapped transport (messages sent through it directly are not counted).
  Transport& inner() noexcept { return inner_; }
  Transport const& inner() const noexcept { return inner_; }

  void set_call(call_info const& c) requires call_aware_transport<Transport> { inner_.set_call(c); }
  void end_context(std::uint32_t context) requires call_aware_transport<Transport> {
    inner_.end_context(context);
  }

  void send(int peer, tag tg, std::span<std::byte const> out) {
    send_depth(peer, tg);
    inner_.send(peer, tg, out);
    count_sent(tg, out.size());
  }

  void recv(int peer, tag tg, std::span<std::byte> in) {
    inner_.recv(peer, tg, in);
    receive_depth(peer, tg, in.size());
  }

  void sendrecv(int dst, tag send_tag, std::span<std::byte const> out, int src, tag recv_tag,
                std::span<std::byte> in) requires sendrecv_transport<Transport> {
    send_depth(dst, send_tag);  // before the receive: this message does not depend on it
    inner_.sendrecv(dst, send_tag, out, src, recv_tag, in);
    count_sent(send_tag, out.size());
    receive_depth(src, recv_tag, in.size());
  }

  /// Counted as the `sendrecv` it is, when the wrapped transport combined it.
  bool sendrecv_reduce(int dst, tag send_tag, std::span<std::byte const> out, int src, tag recv_tag,
                       std::span<std::byte> acc,
                       combiner const& c) requires combining_transport<Transport> {
    // The depth goes after the message (on its own tag, so FIFO does not care), once it is
    // known that the message went: a refusal sends nothing, and the caller's sendrecv counts.
    // It is still this rank's clock before the receive, which receive_depth moves.
    if (!inner_.sendrecv_reduce(dst, send_tag, out, src, recv_tag, acc, c)) return false;
    send_depth(dst, send_tag);
    count_sent(send_tag, out.size());
    receive_depth(src, recv_tag, acc.size());
    return true;
  }

  /// Counted as the receive it is, when the wrapped transport combined it.
  bool recv_reduce(int src, tag tg, std::span<std::byte> acc,
                   combiner const& c) requires forwarding_transport<Transport> {
    if (!inner_.recv_reduce(src, tg, acc, c)) return false;
    receive_depth(src, tg, acc.size());
    return true;
  }

  /// Counted as the receive and then the send it is, when the wrapped transport forwarded it:
  /// the message sent carries this rank's clock after the receive, as a `send` after `recv`.
  bool reduce_and_forward(int src, tag recv_tag, std::span<std::byte> acc, combiner const& c,
                          int dst, tag send_tag) requires forwarding_transport<Transport> {
    if (!inner_.reduce_and_forward(src, recv_tag, acc, c, dst, send_tag)) return false;
    receive_depth(src, recv_tag, acc.size());
    send_depth(dst, send_tag);
    count_sent(send_tag, acc.size());
    return true;
  }

  /// The wrapped transport's answer; nothing is sent.
  bool offers(int dst,
              std::span<std::byte const> out) const requires forwarding_transport<Transport> {
    return inner_.offers(dst, out);
  }

  /// Counted as the sends and receives it is (one round), when the wrapped transport shared.
  bool share_with_all(std::span<int const> peers, tag tg, std::span<std::byte const> out,
                      std::span<std::span<std::byte> const> ins) requires
      sharing_transport<Transport> {
    // As sendrecv_reduce's: the depths go once it is known that the messages went, each sent
    // before any is received, so that they carry this rank's clock before the round.
    if (!inner_.share_with_all(peers, tg, out, ins)) return false;
    for (int peer : peers) {
      send_depth(peer, tg);
      count_sent(tg, out.size());
    }
    for (std::size_t i = 0; i < peers.size(); ++i) receive_depth(peers[i], tg, ins[i].size());
    return true;
  }

  /// A pending `irecv`: the message is counted when `wait()` or a successful `test()` sees it.
  class request {
   public:
    request(request&&) noexcept = default;
    request& operator=(request&&) noexcept = default;
    void wait() {
      if (!self_) return;
      inner_.wait();
      finish();
    }
    bool test() {
      if (!self_) return true;
      if (!inner_.test()) return false;
      finish();
      return true;
    }

   private:
    friend class counting;
    using inner_request =
        decltype(std::declval<Transport&>().irecv(0, tag{}, std::span<std::byte>{}));
    request(counting* self, int peer, tag tg, std::size_t bytes, inner_request r)
        : self_(self), peer_(peer), tg_(tg), bytes_(bytes), inner_(std::move(r)) {}
    void finish() {
      auto* s = std::exchange(self_, nullptr);
      s->receive_depth(peer_, tg_, bytes_);
    }
    counting* self_;
    int peer_;
    tag tg_;
    std::size_t bytes_;
    inner_request inner_;
  };

  request irecv(int peer, tag tg, std::span<std::byte> in) requires irecv_transport<Transport> {
    return request(this, peer, tg, in.size(), inner_.irecv(peer, tg, in));
  }

 private:
  struct per_context {
    transport_stats stats;
    std::int64_t clock = 0;
  };
  per_context& of(tag tg) {
    auto const c = detail::context_of(tg);
    if (c >= contexts_.size()) contexts_.resize(c + 1);
    return contexts_[c];
  }

  void send_depth(int peer, tag tg) {
    auto& c = of(tg);
    std::int64_t depth = c.clock + 1;
    inner_.send(peer, depth_tag(tg), std::as_bytes(std::span(&depth, 1)));
    c.stats.rounds = std::max(c.stats.rounds, static_cast<int>(depth));
  }
  void count_sent(tag tg, std::size_t bytes) {
    auto& s = of(tg).stats;
    s.min_message_bytes =
        s.messages_sent == 0 ? bytes : std::min<std::uint64_t>(s.min_message_bytes, bytes);
    s.max_message_bytes = std::max<std::uint64_t>(s.max_message_bytes, bytes);
    ++s.messages_sent;
    s.bytes_sent += bytes;
    ++s.sent_sizes[bytes];
  }

  void receive_depth(int peer, tag tg, std::size_t bytes) {
    std::int64_t depth = 0;
    inner_.recv(peer, depth_tag(tg), std::as_writable_bytes(std::span(&depth, 1)));
    auto& c = of(tg);
    c.clock = std::max<std::int64_t>(c.clock, depth);
    c.stats.rounds = std::max(c.stats.rounds, static_cast<int>(depth));
    ++c.stats.messages_received;
    c.stats.bytes_received += bytes;
  }

 private:
  Transport inner_;
  std::vector<per_context> contexts_ = std::vector<per_context>(1);  // [0]: the world's
};

namespace detail {
// `group` and `options` exist only when the wrapped transport has them, so that counting<T>
// stays a plain transport for a T that is not a group transport.
template <class Transport>
struct counting_group_base {};
template <class Transport>
requires requires {
  typename Transport::options;
  typename Transport::group;
}
struct counting_group_base<Transport> {
  using options = typename Transport::options;
  /// `Transport::group`, handing out counting endpoints: what `gcl::spawn` uses.
  class group {
   public:
    explicit group(int size, options opts = {}) : inner_(size, std::move(opts)) {}
    counting<Transport> connect(int rank) { return counting<Transport>(inner_.connect(rank)); }
    void abort(std::string const& reason) { inner_.abort(reason); }
    typename Transport::group& inner() noexcept { return inner_; }

   private:
    typename Transport::group inner_;
  };
};
}  // namespace detail

}  // namespace gcl
