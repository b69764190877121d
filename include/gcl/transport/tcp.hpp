#pragma once
/// \file
/// `tcp_transport`: one rank per process (or per thread, for tests) over TCP, with Boost.Asio.
///
/// One connection per pair of ranks, `TCP_NODELAY`, an 80-byte header on every frame carrying
/// the tag, the sender's `call_info` and a 64-bit length. Each transport runs one I/O thread
/// that reads every peer's socket into per-(source, tag) queues, or straight into a posted
/// receive, so a peer's send never waits for a matching receive here: sends are eager at any
/// size, and "everybody sends, then everybody receives" cannot deadlock (a large message that
/// arrives early may wait in the socket while this rank is busy in a collective, until its
/// receive is posted or the rank waits for anything else). A send writes its frame itself when
/// nothing else is being written to that peer, goes on writing what the kernel did not take
/// while the peer takes it (leaving it to the I/O thread after 2 ms in which it took nothing),
/// and returns when the kernel has taken the last byte (no copy on the send side); `sendrecv`
/// posts its receive while its send is under way, and moves both frames. A receive takes the
/// first queued message for (source, tag), compares sizes and `call_info`, and copies it out,
/// or has its frame read straight into its buffer.
/// See doc/tcp.md for the rendezvous, the environment and the failure behaviour.

#include <unistd.h>

#include <array>
#include <cstdint>
#include <exception>
#include <memory>
#include <span>
#include <string>
#include <tuple>
#include <utility>

#include "../call_info.hpp"
#include "../detail/random_token.hpp"
#include "../error.hpp"
#include "../fork_bootstrap.hpp"
#include "../transport_hints.hpp"
#include "tcp/asio.hpp"
#include "tcp/engine.hpp"
#include "tcp/options.hpp"

namespace gcl {

/// A rank of a job whose ranks talk over TCP. Construct it from options (it blocks until the
/// whole job has connected, bounded by `timeout`), or let `gcl::spawn` run n ranks as threads
/// over loopback:
///
///     gcl::communicator comm{gcl::tcp_transport(gcl::tcp_options::from_env())};
///     gcl::spawn<gcl::tcp_transport>(4, [](auto& comm) { /* ... */ });
class tcp_transport {
 public:
  using options = tcp_options;
  /// Where the default all_reduce switches algorithm over TCP, where a message costs tens of
  /// microseconds: the few-rounds algorithms keep larger sizes than between threads (measured
  /// back to back, doc/benchmarks.md). Where ranks share cores (`ranks_share_cores`), the
  /// binomial tree takes the sizes below 1 MiB, recursive doubling's and then some: 2(P - 1)
  /// messages instead of P log2 P or halving-doubling's 2 P log2 P, and there every message
  /// waits for its sender to be scheduled, while the bytes all ranks move and reduce together
  /// are the same (measured on 2 cores, back to back: P = 4 and 8, 4 B to 16 KiB, the median
  /// call 0.66-0.70x of recursive doubling's, the mean over a loop 1-3% lower; 64 KiB at P = 8
  /// 0.6-0.7x halving-doubling's time, level at P = 4; 256 and 512 KiB at P = 3 to 8
  /// 0.70-0.99x, but 1.08x once at P = 5, 256 KiB; at 1 MiB 0.82-1.01x at P = 8 and 1.18-1.20x
  /// at P = 4, so halving-doubling keeps 1 MiB where ranks are two to a CPU; where some host
  /// has more than two (`ranks_over_two_per_cpu`) the tree takes 1 MiB too: at P = 8 on 2
  /// cores 0.76x halving-doubling's time in ten interleaved jobs, 0.82-1.01x in three runs
  /// before, level in eight after; benchmark/analysis.md). There, too, ring's blocks grow with P²
  /// (`ring_step_bytes_per_rank_if_cores_shared`, 32 KiB: 2 MiB up to P = 8, as where each rank
  /// has a core, 8 MiB at P = 16): each step costs system calls and a wait for the peers to be
  /// scheduled, which the blocks' cache gain must outweigh. Measured on 2 cores
  /// (benchmark/default_vs_fixed with ring's blocks as candidates, 2026-12-07, an Intel host):
  /// at P = 8 2 MiB blocks took 0.77-0.98x the time of the 8 MiB blocks of before (128 KiB)
  /// from 8 to 64 MiB in six jobs; at P = 6 0.84-1.03x that of 4.5 MiB blocks from 8 to
  /// 32 MiB in two; at P = 16 2 MiB blocks were the slowest (8 MiB 80 ms against 59-74 for the
  /// whole buffer, 32 MiB 370 against 326-360 for larger blocks), 8 MiB blocks the fastest at
  /// 32 MiB. On 2026-11-25, with the transport of then, 8 MiB blocks had been ahead at P = 8;
  /// by_size before and after this change, two jobs each at P = 8: 8 to 32 MiB 0.67-0.87x the
  /// time (benchmark/analysis.md).
  /// Ring from 2 MiB: at 1 MiB halving-doubling took 0.6-0.9x ring's time at P = 4 and 8
  /// (2026-11-27, on 2 cores, two rounds each, back to back), and ring was ahead from 2 MiB;
  /// at P = 2 the two send the same messages. At P = 2, recursive doubling to 1 MiB: one
  /// exchange of the vectors where halving-doubling makes two of halves, the same bytes; from
  /// 64 to 512 KiB it took 0.88-0.92x halving-doubling's time, at 1 MiB 1.12x (2026-11-29, 2
  /// cores, benchmark/default_vs_fixed: every algorithm in one job, nine rounds in random
  /// orders; 0.81-0.92x at 64 and 256 KiB in three runs before). Where every core runs two
  /// ranks or more (`ranks_crowd_cores`), the parameter server below 64 KiB, ahead of the tree:
  /// the tree's 2 (P - 1) messages in two rounds instead of 2 log2 P, and every round waits for
  /// ranks to be scheduled (same tool, 4 B to 16 KiB: at P = 8 0.71-0.90x the tree's time, at
  /// P = 4 0.78-1.04x; at 64 KiB 0.98-1.38x, and behind halving-doubling at P = 8; two runs of
  /// seven rounds on 2 cores, 2026-11-29).
  static constexpr all_reduce_thresholds default_all_reduce{
      .recursive_doubling_below = 64 * 1024,
      .ring_from = 2 * 1024 * 1024,
      .tree_below_if_cores_shared = 1024 * 1024,
      .tree_below_if_over_two_per_cpu = 2 * 1024 * 1024,
      .parameter_server_below_if_cores_crowded = 64 * 1024,
      .ring_step_bytes_per_rank_if_cores_shared = 32 * 1024,
      .recursive_doubling_below_at_two_ranks = 1024 * 1024};

  /// Forms the job with the other ranks described by `o` (rendezvous through rank 0).
  explicit tcp_transport(tcp_options const& o)
      : tcp_transport(o, std::make_shared<detail::tcp_abort_state>(), -1) {}

  /// n ranks in one process over loopback, for `gcl::spawn` and tests. The constructor binds
  /// rank 0's listening socket on a free port (`options.master_port` 0) so ranks cannot race
  /// for it; `connect(rank)` forms rank `rank`'s endpoint (call it on that rank's thread).
  ///
  ///     gcl::tcp_transport::group g(4, {.timeout = std::chrono::seconds{5}});
  ///     // on thread r:  gcl::communicator comm(g.connect(r));
  class group {
   public:
    explicit group(int size, tcp_options opts = {})
        : opts_(std::move(opts)), abort_(std::make_shared<detail::tcp_abort_state>()) {
      if (size < 1)
        throw usage_error("gcl: a group needs at least one rank, got " + std::to_string(size));
      opts_.size = size;
      // Every rank is in this process, so a token of our own costs nothing and keeps any other
      // local process from taking a rank's place while the group forms.
      if (opts_.token.empty()) {
        opts_.token = detail::random_token();
        opts_.token_source = "random";
      }
      abort_->group = true;
      if (opts_.master_port == 0) bind_master();
    }
    group(group const&) = delete;
    group& operator=(group const&) = delete;
    ~group() {
      if (fd_ >= 0) ::close(fd_);
    }
    int size() const noexcept { return opts_.size; }
    /// The options every rank uses (with the chosen port in `master_port`).
    tcp_options const& options() const noexcept { return opts_; }
    /// Rank `rank`'s endpoint; blocks until the whole group has connected.
    tcp_transport connect(int rank) const {
      if (rank < 0 || rank >= opts_.size)
        throw usage_error("gcl: tcp connect: rank " + std::to_string(rank) +
                          " is out of range for a group of " + std::to_string(opts_.size));
      auto o = opts_;
      o.rank = rank;
      return tcp_transport(o, abort_, rank == 0 && fd_ >= 0 ? ::dup(fd_) : -1);
    }
    /// Releases every blocked call of every rank with `errc::aborted`, now and from now on.
    void abort(std::string const& reason) { abort_->abort(reason); }
    /// The error that ended the group, if one did (for `spawn`: a rank may have returned before
    /// another found that the two disagreed about a call they both made).
    std::exception_ptr failure() const {
      if (!abort_->aborted) return nullptr;
      return std::make_exception_ptr(transport_error(abort_->code, abort_->why()));
    }

   private:
    void bind_master() {
      namespace asio = boost::asio;
      asio::io_context io;
      auto family = opts_.family;
      if (family == address_family::any)
        family = opts_.master_addr.find(':') != std::string::npos ? address_family::v6
                                                                  : address_family::v4;
      if (family == address_family::v6 && opts_.master_addr == "127.0.0.1")
        opts_.master_addr = "::1";
      asio::ip::tcp::acceptor a(io);
      asio::ip::tcp::endpoint ep(asio::ip::make_address(opts_.master_addr), 0);
      a.open(ep.protocol());
      a.bind(ep);
      a.listen();
      opts_.master_port = a.local_endpoint().port();
      fd_ = a.release();
    }
    tcp_options opts_;
    std::shared_ptr<detail::tcp_abort_state> abort_;
    int fd_ = -1;
  };

  /// A second endpoint of this rank with connections of its own among the ranks `b` names
  /// (`forkable_transport`): the lane of a communicator's non-blocking collectives. Lane rank 0
  /// listens on a new port of the address it listens on now; the port and a new random token
  /// travel over this transport's connections, so that only the lane's ranks can join. It
  /// shares this transport's abort.
  tcp_transport fork(fork_bootstrap& b) {
    struct offer {
      std::uint16_t port = 0;
      std::array<char, 64> token{};
    } offered;
    int fd = -1;
    if (b.rank == 0) {
      std::tie(fd, offered.port) = impl_->listen_anew();
      detail::random_token("gcl-fork:").copy(offered.token.data(), offered.token.size() - 1);
    }
    try {
      b.broadcast(std::as_writable_bytes(std::span(&offered, 1)));
    } catch (...) {
      if (fd >= 0) ::close(fd);
      throw;
    }
    auto o = impl_->options();
    o.size = b.size;
    o.rank = b.rank;
    o.master_port = offered.port;
    o.token = offered.token.data();
    o.token_source = "a fork of the job's transport";
    o.local_rank = -1;
    o.local_size = 0;
    // A lane of some of the job's ranks keeps the job's judgement of their cores (in
    // shares_cores, over_two_per_cpu, crowds_cores and spin), which counted every rank of each
    // machine: its own ranks alone could look like a core each where the machine's ranks share
    // them.
    o.cpus.clear();
    // Lane rank 0 keeps the job's master address: it only listens, as the family of that one.
    if (b.rank != 0) o.master_addr = impl_->peer_address(b.members[0]);
    return tcp_transport(o, impl_->abort_state(), fd);
  }

  int rank() const noexcept { return impl_->rank(); }
  int size() const noexcept { return impl_->size(); }
  /// The TCP port this rank listens on (rank 0: the master port).
  std::uint16_t port() const { return impl_->port(); }
  /// The options this rank was formed with (`options` names the type, as spawn requires).
  tcp_options const& config() const noexcept { return impl_->options(); }
  /// Whether any rank of the job shares a core with other ranks (its
  /// `tcp_options::shares_cores`), as the rendezvous told every rank: the same answer on every
  /// rank, so `gcl::by_size` may choose by it.
  bool ranks_share_cores() const noexcept { return impl_->any_shares_cores(); }
  /// Whether some rank's host has more than two ranks per CPU (its
  /// `tcp_options::over_two_per_cpu`), as the rendezvous told every rank: the same everywhere.
  bool ranks_over_two_per_cpu() const noexcept { return impl_->any_over_two_per_cpu(); }
  /// Whether some rank's host has at least two ranks per CPU (its `tcp_options::crowds_cores`),
  /// as the rendezvous told every rank: the same everywhere, so `gcl::by_size` may choose by it
  /// (`all_reduce_thresholds::parameter_server_below_if_cores_crowded`).
  bool ranks_crowd_cores() const noexcept { return impl_->any_crowds_cores(); }
  /// The TCP congestion control of the connection to `peer` (as the kernel names it: "reno",
  /// "bbr", ...; "" for this rank itself, or where the system cannot say). Connections within
  /// a host use `tcp_options::same_host_congestion_control`.
  std::string congestion_control(int peer) const { return impl_->congestion_control(peer); }

  /// Which call the following messages belong to; sent in every frame header and compared by
  /// the receiver, which throws `errc::mismatch` naming both sides. When a collective begins,
  /// messages of it that peers sent ahead are checked at once.
  void set_call(call_info const& c) { impl_->set_call(c); }
  /// A communicator of context `context` is gone from this rank: its calls are forgotten, so
  /// that a new communicator taking the id again is checked from its #1.
  void end_context(std::uint32_t context) { impl_->end_context(context); }

  /// Eager: returns once `out` is in the kernel (the peer's I/O thread always drains it).
  void send(int peer, tag tg, std::span<std::byte const> out) { impl_->send(peer, tg, out); }

  /// Blocks until exactly `in.size()` bytes from `peer` with `tg` are in `in`.
  void recv(int peer, tag tg, std::span<std::byte> in) { impl_->recv(peer, tg, in); }

  /// `send` and `recv` at once: a frame too large for the socket's buffer goes on being written
  /// while the receive waits, so the incoming frame lands straight in `in`.
  void sendrecv(int dst, tag send_tag, std::span<std::byte const> out, int src, tag recv_tag,
                std::span<std::byte> in) {
    impl_->sendrecv(dst, send_tag, out, src, recv_tag, in);
  }

  tcp_transport(tcp_transport&&) noexcept = default;
  tcp_transport& operator=(tcp_transport&&) noexcept = default;

 private:
  tcp_transport(tcp_options const& o, std::shared_ptr<detail::tcp_abort_state> abort, int fd)
      : impl_(std::make_unique<detail::tcp_impl>(check(o), std::move(abort), fd)) {}
  static tcp_options const& check(tcp_options const& o) {
    if (o.size < 1 || o.rank < 0 || o.rank >= o.size)
      throw usage_error("gcl: tcp_options: rank " + std::to_string(o.rank) +
                        " is out of range for a job of size " + std::to_string(o.size));
    if (o.size > 1 && o.master_port == 0)
      throw usage_error(
          "gcl: tcp_options: master_port is 0; set the port rank 0 listens on "
          "(GCL_MASTER_PORT), or use tcp_transport::group for a local job");
    if (o.timeout.count() <= 0) throw usage_error("gcl: tcp_options: timeout must be positive");
    return o;
  }
  std::unique_ptr<detail::tcp_impl> impl_;
};

}  // namespace gcl
