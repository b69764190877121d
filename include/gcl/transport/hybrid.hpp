#pragma once
/// \file
/// `hybrid_transport`: the right path to each peer, without being told: shared memory to a rank
/// of this host (`shm_transport`'s engine), TCP to a rank of another (`tcp_transport`'s).
///
/// The TCP rendezvous runs first; each rank's join hello carries its host key (boot id, network
/// namespace, uid: hybrid/host_key.hpp) and rank 0's address table every rank's, so every rank
/// knows, before it connects to any peer, which peers share its host. Those form a host group:
/// no TCP data connection between them, and a shm job of their own (token: the job's token and
/// the group's lowest rank). Each peer is then served by one side, always the same, so messages
/// stay FIFO per (source, destination, tag).
///
/// Progress: shm has no thread of its own, so a rank must drain its rings whenever it waits,
/// or a same-host peer's large send to it would stall, which can close a cycle of waits across
/// the two sides. A receive from a remote peer therefore waits in the shm engine (draining the
/// rings, sleeping on the rank's futex), looking for the TCP message between drains; the TCP
/// I/O thread rings that futex when a frame arrives. A receive from a local peer is shm's (TCP
/// needs nothing from the caller to progress). Every wait is bounded by the one timeout.
///
/// Failures: the first `transport_error` of either side poisons the hybrid and is passed to the
/// other (the shm segment's abort state, TCP's abort frames), so every rank on every host stops
/// with the first error. See doc/shm.md, "Shared memory within a host, TCP between hosts".

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "../call_info.hpp"
#include "../combiner.hpp"
#include "../detail/host_cpus.hpp"
#include "../detail/random_token.hpp"
#include "../error.hpp"
#include "../fork_bootstrap.hpp"
#include "../transport_hints.hpp"
#include "hybrid/host_key.hpp"
#include "hybrid/options.hpp"
#include "shm.hpp"
#include "shm/engine.hpp"
#include "tcp.hpp"
#include "tcp/asio.hpp"
#include "tcp/engine.hpp"

namespace gcl {

/// Which side carries the messages to a peer (`hybrid_transport::path_to`).
enum class transport_path { shm, tcp };

/// A rank of a job whose ranks may be spread over hosts: shared memory to the ranks of its
/// host, TCP to the others (`GCL_TRANSPORT` chooses otherwise).
///
///     gcl::communicator comm{gcl::hybrid_transport(gcl::hybrid_options::from_env())};
class hybrid_transport {
 public:
  using options = hybrid_options;
  /// Between hosts, messages cost what they cost over TCP: its thresholds. A job that turns out
  /// to be on one host runs as shared memory and takes shm's instead (`all_reduce_sizes`).
  static constexpr all_reduce_thresholds default_all_reduce = tcp_transport::default_all_reduce;
  /// A job of several hosts some of which run two ranks or more: TCP's thresholds, but never
  /// the parameter server where ranks crowd the cores. Its server receives every other rank's
  /// message in turn, where the binomial tree's rounds inside a host cost a shm message each:
  /// two network namespaces of two processes on 2 cores (benchmark/two_hosts.sh, 2026-12-06,
  /// default_vs_fixed, two jobs each), 4 B to 16 KiB the tree 17-38 us against the parameter
  /// server's 23-48, the default within 1.06x of the best fixed algorithm at 4 B to 256 KiB
  /// (1.19-1.62x at 4 B to 16 KiB with the parameter server).
  ///
  /// And `gcl::hierarchical` from 64 KiB (reduce-scatter inside each host, all_reduce across,
  /// all-gather inside): each host sends the others the least an all_reduce can, where ring's
  /// one link out of a host carries nearly twice the vector. Where ranks share cores the tree's
  /// sizes come first (to 1 MiB, and no further where a host has more than two ranks per CPU),
  /// and take `gcl::tree_by_hosts`, the tree with one edge into each host. Hosts may differ in
  /// size (algorithm/hierarchical.hpp). Two network namespaces of 3 processes on 2 cores,
  /// default_vs_fixed (2026-12-07, benchmark/analysis.md, "Hierarchical"): with their link
  /// capped at 2 Gbit/s, from 1 MiB to 64 MiB 0.53-0.82x the time of what by_size took before
  /// (the tree to 2 MiB, ring from there); at 2 + 2 level with halving-doubling, which moves
  /// the same bytes there. At 3 + 3, where the plain tree crosses between the hosts twice each
  /// way, two_hosts.sh at 64 KiB: tree_by_hosts 92-96 us uncapped against hierarchical's
  /// 172-174 (1.8-2.0x TCP's speed), capped 277-279 against 319-321 and the plain tree's 539
  /// ("The tree by hosts").
  static constexpr all_reduce_thresholds mixed_all_reduce = [] {
    auto t = tcp_transport::default_all_reduce;
    t.parameter_server_below_if_cores_crowded = 0;
    t.hierarchical_from = 64 * 1024;
    t.tree_below_if_over_two_per_cpu = 0;
    return t;
  }();

  /// Joins the job described by `o` (TCP rendezvous through rank 0, then the shm rendezvous of
  /// this rank's host group; each bounded by the timeout).
  explicit hybrid_transport(hybrid_options const& o)
      : s_(std::make_unique<state>(check(o), std::make_shared<detail::tcp_abort_state>(), nullptr,
                                   -1)) {}

  /// n ranks as threads of this process (tests; `gcl::spawn`), over loopback TCP and shm
  /// segments; `options().test_hosts` splits them into pretend hosts.
  class group {
   public:
    explicit group(int size, hybrid_options opts = {})
        : opts_(std::move(opts)),
          tcp_abort_(std::make_shared<detail::tcp_abort_state>()),
          shm_abort_(std::make_shared<detail::shm_group_state>()) {
      if (size < 1)
        throw usage_error("gcl: a group needs at least one rank, got " + std::to_string(size));
      opts_.tcp.size = size;
      if (opts_.tcp.token.empty()) {
        opts_.tcp.token = detail::random_token();
        opts_.tcp.token_source = "random";
      }
      tcp_abort_->group = true;
      if (opts_.mode != transport_mode::shm && opts_.tcp.master_port == 0) bind_master();
    }
    group(group const&) = delete;
    group& operator=(group const&) = delete;
    ~group() {
      if (fd_ >= 0) ::close(fd_);
    }
    int size() const noexcept { return opts_.tcp.size; }
    hybrid_options const& options() const noexcept { return opts_; }
    /// Rank `rank`'s endpoint (call it on that rank's thread); blocks until the job has formed.
    hybrid_transport connect(int rank) const {
      if (rank < 0 || rank >= opts_.tcp.size)
        throw usage_error("gcl: hybrid connect: rank " + std::to_string(rank) +
                          " is out of range for a group of " + std::to_string(opts_.tcp.size));
      auto o = opts_;
      o.tcp.rank = rank;
      return hybrid_transport(std::make_unique<state>(check(o), tcp_abort_, shm_abort_,
                                                      rank == 0 && fd_ >= 0 ? ::dup(fd_) : -1));
    }
    /// Releases every blocked call of every rank with `errc::aborted`, now and from now on.
    void abort(std::string const& reason) {
      tcp_abort_->abort(reason);
      shm_abort_->abort(reason);
    }
    /// The error that ended the group, if one did.
    std::exception_ptr failure() const {
      if (tcp_abort_->aborted)
        return std::make_exception_ptr(transport_error(tcp_abort_->code, tcp_abort_->why()));
      if (shm_abort_->aborted.load()) {
        std::lock_guard lock(shm_abort_->mutex);
        return std::make_exception_ptr(
            transport_error(shm_abort_->code, "gcl: " + shm_abort_->reason));
      }
      return nullptr;
    }

   private:
    void bind_master() {
      namespace asio = boost::asio;
      asio::io_context io;
      auto& t = opts_.tcp;
      if (t.family == address_family::v6 && t.master_addr == "127.0.0.1") t.master_addr = "::1";
      asio::ip::tcp::acceptor a(io);
      asio::ip::tcp::endpoint ep(asio::ip::make_address(t.master_addr), 0);
      a.open(ep.protocol());
      a.bind(ep);
      a.listen();
      t.master_port = a.local_endpoint().port();
      fd_ = a.release();
    }
    hybrid_options opts_;
    std::shared_ptr<detail::tcp_abort_state> tcp_abort_;
    std::shared_ptr<detail::shm_group_state> shm_abort_;
    int fd_ = -1;
  };

  int rank() const noexcept { return s_->rank; }

  /// A second endpoint of this rank among the ranks `b` names, formed as this one was (TCP
  /// rendezvous, then shared memory within each host), with connections and rings of its own
  /// (`forkable_transport`): the lane of a communicator's non-blocking collectives. Lane rank 0
  /// listens on a new port; the port, a new random token and the address that ranks of its own
  /// host reach it at travel over this transport. It shares this transport's abort.
  hybrid_transport fork(fork_bootstrap& b) {
    auto& s = *s_;
    struct offer {
      std::uint16_t port = 0;
      std::array<char, 64> token{};
      std::array<char, 64> local_address{};  // where lane rank 0 listens, for its own host
    } offered;
    bool const tcp_side = s.o.mode != transport_mode::shm;
    int fd = -1;
    if (b.rank == 0) {
      detail::random_token("gcl-fork:").copy(offered.token.data(), offered.token.size() - 1);
      if (tcp_side) {
        auto address = s.tcp ? boost::asio::ip::make_address(s.tcp->listen_address())
                             : boost::asio::ip::address(loopback(s.o.tcp.master_addr));
        if (address.is_unspecified()) address = loopback(s.o.tcp.master_addr);
        std::tie(fd, offered.port) =
            detail::listen_on(address, "gcl: rank " + std::to_string(s.rank) + ": ");
        address.to_string().copy(offered.local_address.data(), offered.local_address.size() - 1);
      }
    }
    try {
      b.broadcast(std::as_writable_bytes(std::span(&offered, 1)));
    } catch (...) {
      if (fd >= 0) ::close(fd);
      throw;
    }
    auto o = s.o;
    o.tcp.size = b.size;
    o.tcp.rank = b.rank;
    o.tcp.master_port = offered.port;
    o.tcp.token = offered.token.data();
    o.tcp.token_source = "a fork of the job's transport";
    o.tcp.local_rank = -1;
    o.tcp.local_size = 0;
    o.shm_spread_ranks = false;  // the lane's thread stays beside its rank's
    if (!o.test_hosts.empty()) {
      o.test_hosts.clear();
      for (int m : b.members) o.test_hosts.push_back(s.o.test_hosts[static_cast<std::size_t>(m)]);
    }
    if (tcp_side && b.rank != 0) {
      auto const first = static_cast<std::size_t>(b.members[0]);
      o.tcp.master_addr = s.side[first] == transport_path::tcp && s.tcp
                              ? s.tcp->peer_address(b.members[0])
                              : std::string(offered.local_address.data());
    }
    auto tcp_abort = s.tcp ? s.tcp->abort_state() : std::make_shared<detail::tcp_abort_state>();
    auto shm_abort = s.shm ? s.shm->group_state() : nullptr;
    return hybrid_transport(
        std::make_unique<state>(check(o), std::move(tcp_abort), std::move(shm_abort), fd));
  }
  int size() const noexcept { return s_->size; }
  /// The options this rank was formed with.
  hybrid_options const& config() const noexcept { return s_->o; }

  /// Which side carries the messages to and from `peer` (itself: shm if this rank has a host
  /// group, else TCP).
  transport_path path_to(int peer) const {
    check_peer(peer, "path_to");
    return s_->side[static_cast<std::size_t>(peer)];
  }
  /// The ranks of this rank's host group, in order (itself alone when it has none, or under
  /// GCL_TRANSPORT=tcp).
  std::vector<int> const& host_group() const noexcept { return s_->group_ranks; }
  /// The host of each rank, named by the lowest rank on it (0 for every rank under
  /// GCL_TRANSPORT=shm): from the host keys of the TCP rendezvous, the same on every rank.
  /// `gcl::hierarchical` and the default all_reduce ask it.
  std::vector<int> const& host_of_ranks() const noexcept { return s_->host_number; }
  /// Whether this rank holds a TCP side (it has a peer on another host, or GCL_TRANSPORT=tcp).
  bool has_tcp() const noexcept { return s_->tcp != nullptr; }
  /// n elements of T in this rank's pool on the shm side (`shm_transport::allocate`): a large
  /// message from there to a rank of this host is read where it lies. A rank with no peer on
  /// its host gets ordinary memory (nobody else could read it in place).
  template <class T>
  shm_buffer<T> allocate(std::size_t n) {
    return shm_buffer<T>::make(s_->shm ? s_->shm->pool() : nullptr, n);
  }

  /// Whether every peer is reached through shared memory (every rank on this host, and not
  /// GCL_TRANSPORT=tcp): the same answer on every rank.
  bool all_shm() const noexcept {
    return std::ranges::all_of(s_->side, [](transport_path p) { return p == transport_path::shm; });
  }

  /// Where the default all_reduce (`gcl::by_size`) switches algorithm: shm's thresholds when
  /// every peer is reached through shared memory, TCP's when none is, and `mixed_all_reduce`
  /// when some ranks share a host and some do not (a ring or a recursive doubling with a link
  /// over TCP runs at that link's speed). The same on every rank.
  all_reduce_thresholds all_reduce_sizes() const noexcept {
    if (all_shm()) return shm_transport::default_all_reduce;
    return s_->mixed ? mixed_all_reduce : tcp_transport::default_all_reduce;
  }
  /// Whether ranks of the job share cores, as by_size asks: every rank's answer, exchanged at
  /// the TCP rendezvous (`tcp_transport::ranks_share_cores`); for a job on one host, whether its
  /// ranks outnumber the host's CPUs (`shm_transport::ranks_share_cores`).
  bool ranks_share_cores() const noexcept {
    if (s_->tcp) return s_->tcp->any_shares_cores();
    return detail::ranks_outnumber_cpus(s_->size);
  }
  /// Whether some host of the job has more than two ranks per CPU, as by_size asks: where
  /// every peer is reached through shared memory, as `shm_transport::ranks_over_two_per_cpu`;
  /// else as the TCP rendezvous says (`tcp_transport::ranks_over_two_per_cpu`).
  bool ranks_over_two_per_cpu() const noexcept {
    if (all_shm()) return detail::ranks_outnumber_cpus(s_->size, 2);
    return s_->tcp && s_->tcp->any_over_two_per_cpu();
  }
  /// Whether the ranks crowd the cores (at least two per CPU), as by_size asks: where every
  /// peer is reached through shared memory, as `shm_transport::ranks_crowd_cores`; else as the
  /// TCP rendezvous says (`tcp_transport::ranks_crowd_cores`).
  bool ranks_crowd_cores() const noexcept {
    if (all_shm()) return detail::ranks_crowd_cpus(s_->size);
    return s_->tcp && s_->tcp->any_crowds_cores();
  }
  /// Whether this rank's waits on the shared memory of its host take the cores as shared
  /// (look once, yield from the first look: `shm_options::shares_cores`): as the TCP rendezvous
  /// judged the ranks of its machine, which may be more than its host group (two network
  /// namespaces of one machine are two hosts here, on the same cores). False without a shm side.
  bool shm_waits_share_cores() const noexcept { return s_->shm && s_->shm->cores_shared(); }
  /// How long this rank's waits on the shared memory of its host poll before they sleep: the
  /// options' `shm_spin`, else shm's default (`shm_options::spin`), or in a job over several
  /// hosts the TCP side's `tcp_options::spin` where that is longer (such a wait may be for a
  /// TCP message). Zero without a shm side.
  std::chrono::microseconds shm_spin() const noexcept {
    return s_->shm ? s_->shm->spin() : std::chrono::microseconds{0};
  }

  /// Which call the following messages belong to: told to both sides, so that a disagreement
  /// is found on the first message whichever path it takes.
  void set_call(call_info const& c) {
    auto& s = *s_;
    s.call = c;
    if (c.kind == call_kind::point_to_point) {  // never throws (ends a collective)
      if (s.poisoned) return;
      try {
        if (s.shm) s.shm->set_call(c);
        if (s.tcp) s.tcp->set_call(c);
      } catch (transport_error const& e) {
        s.poison(e);
      }
      return;
    }
    guarded("set_call", -1, [&] {
      if (s.shm) s.shm->set_call(c);
      if (s.tcp) s.tcp->set_call(c);
    });
  }

  /// A communicator of context `context` is gone from this rank: told to both sides.
  void end_context(std::uint32_t context) {
    auto& s = *s_;
    if (s.shm) s.shm->end_context(context);
    if (s.tcp) s.tcp->end_context(context);
  }

  /// Eager, as both sides' sends are.
  void send(int peer, tag tg, std::span<std::byte const> out) {
    check_peer(peer, "send to");
    guarded("send to", peer, [&] { send_now(peer, tg, out); });
  }

  /// Blocks until exactly `in.size()` bytes from `peer` with `tg` are in `in`, progressing the
  /// shm side meanwhile whichever side `peer` is on.
  void recv(int peer, tag tg, std::span<std::byte> in) {
    check_peer(peer, "recv from");
    guarded("recv from", peer, [&] { recv_now(peer, tg, in); });
  }

  /// shm's sendrecv when both peers are on this host; otherwise the (eager) send, then the
  /// receive.
  void sendrecv(int dst, tag send_tag, std::span<std::byte const> out, int src, tag recv_tag,
                std::span<std::byte> in) {
    check_peer(dst, "send to");
    check_peer(src, "recv from");
    guarded("send to", dst, [&] {
      auto& s = *s_;
      if (s.on_shm(dst) && s.on_shm(src))
        return s.shm->sendrecv(s.number_of(dst), send_tag, out, s.number_of(src), recv_tag, in);
      send_now(dst, send_tag, out);
      recv_now(src, recv_tag, in);
    });
  }

  /// shm's sendrecv_reduce when both peers are on this host; otherwise false (nothing sent),
  /// and the caller receives and reduces itself.
  bool sendrecv_reduce(int dst, tag send_tag, std::span<std::byte const> out, int src, tag recv_tag,
                       std::span<std::byte> acc, combiner const& c) {
    check_peer(dst, "send to");
    check_peer(src, "recv from");
    auto& s = *s_;
    if (!s.on_shm(dst) || !s.on_shm(src)) return false;
    bool combined = false;
    guarded("send to", dst, [&] {
      combined = s.shm->sendrecv_reduce(s.number_of(dst), send_tag, out, s.number_of(src), recv_tag,
                                        acc, c);
    });
    return combined;
  }

  /// shm's recv_reduce when `src` is on this host; otherwise false (nothing received).
  bool recv_reduce(int src, tag tg, std::span<std::byte> acc, combiner const& c) {
    check_peer(src, "recv from");
    auto& s = *s_;
    if (!s.on_shm(src)) return false;
    bool combined = false;
    guarded("recv from", src, [&] { combined = s.shm->recv_reduce(s.number_of(src), tg, acc, c); });
    return combined;
  }

  /// shm's reduce_and_forward when both peers are on this host; otherwise false (nothing sent
  /// or received), and the caller receives, reduces and sends itself.
  bool reduce_and_forward(int src, tag recv_tag, std::span<std::byte> acc, combiner const& c,
                          int dst, tag send_tag) {
    check_peer(src, "recv from");
    check_peer(dst, "send to");
    auto& s = *s_;
    if (!s.on_shm(dst) || !s.on_shm(src)) return false;
    bool forwarded = false;
    guarded("recv from", src, [&] {
      forwarded =
          s.shm->reduce_and_forward(s.number_of(src), recv_tag, acc, c, s.number_of(dst), send_tag);
    });
    return forwarded;
  }

  /// shm's `offers` when `dst` is on this host; a TCP send never waits for its receive.
  bool offers(int dst, std::span<std::byte const> out) const {
    auto const& s = *s_;
    return s.on_shm(dst) && s.shm->offers(s.number_of(dst), out);
  }

  hybrid_transport(hybrid_transport&&) noexcept = default;
  hybrid_transport& operator=(hybrid_transport&&) noexcept = default;

 private:
  struct state {
    hybrid_options o;
    int rank = 0, size = 1;
    std::unique_ptr<detail::tcp_impl> tcp;
    std::unique_ptr<detail::shm_impl> shm;
    std::vector<transport_path> side;  // side[peer]
    std::vector<int> number;           // number[peer]: its rank on that side
    std::vector<int> group_ranks;
    std::vector<int> host_number;  // host_of_ranks()
    // Some two ranks of the job share a host, and not all of them (the same on every rank).
    bool mixed = false;
    bool poisoned = false;
    std::string failure;
    call_info call{};

    bool on_shm(int peer) const {
      return side[static_cast<std::size_t>(peer)] == transport_path::shm;
    }
    int number_of(int peer) const { return number[static_cast<std::size_t>(peer)]; }

    state(hybrid_options const& opts, std::shared_ptr<detail::tcp_abort_state> tcp_abort,
          std::shared_ptr<detail::shm_group_state> shm_abort, int prebound_fd)
        : o(opts), rank(opts.tcp.rank), size(opts.tcp.size) {
      side.assign(static_cast<std::size_t>(size), transport_path::tcp);
      number.resize(static_cast<std::size_t>(size));
      for (int r = 0; r < size; ++r) number[static_cast<std::size_t>(r)] = r;
      if (o.mode == transport_mode::shm) {
        if (prebound_fd >= 0) ::close(prebound_fd);
        for (int r = 0; r < size; ++r) group_ranks.push_back(r);
        host_number.assign(static_cast<std::size_t>(size), 0);
        try {
          shm = std::make_unique<detail::shm_impl>(shm_side(o.tcp.token, -1), std::move(shm_abort));
        } catch (transport_error const& e) {
          // A rank elsewhere never joins: the others time out, or see one that gave up leave.
          throw transport_error(
              static_cast<errc>(e.code().value()),
              bare(e) +
                  " (under GCL_TRANSPORT=shm every rank must run on this host, in this network "
                  "namespace, as this user; GCL_TRANSPORT=auto reaches the others over TCP)");
        }
        side.assign(static_cast<std::size_t>(size), transport_path::shm);
        return;
      }
      auto key = o.test_hosts.empty()
                     ? detail::this_host_key()
                     : detail::test_host_key(o.test_hosts[static_cast<std::size_t>(rank)]);
      auto t = o.tcp;
      t.host_key = key;
      t.connect_same_host = o.mode == transport_mode::tcp;
      tcp = std::make_unique<detail::tcp_impl>(t, std::move(tcp_abort), prebound_fd);
      auto const& keys = tcp->host_keys();
      for (std::size_t r = 0; r < keys.size(); ++r)
        host_number.push_back(
            static_cast<int>(std::find(keys.begin(), keys.end(), keys[r]) - keys.begin()));
      for (int r = 0; r < size; ++r)
        if (o.mode == transport_mode::automatic ? keys[static_cast<std::size_t>(r)] == key
                                                : r == rank)
          group_ranks.push_back(r);
      if (o.mode == transport_mode::automatic)
        for (auto const& k : keys) {
          auto const on_its_host = std::count(keys.begin(), keys.end(), k);
          mixed = mixed || (on_its_host > 1 && on_its_host < size);
        }
      if (group_ranks.size() < 2) return;  // alone on its host: TCP to every peer
      for (std::size_t i = 0; i < group_ranks.size(); ++i) {
        side[static_cast<std::size_t>(group_ranks[i])] = transport_path::shm;
        number[static_cast<std::size_t>(group_ranks[i])] = static_cast<int>(i);
      }
      // The job's token is secret to its ranks; without one, rank 0's address names the job
      // (unique while it runs: rank 0 holds the port).
      auto token = o.tcp.token.empty()
                       ? "tcp:" + o.tcp.master_addr + ":" + std::to_string(o.tcp.master_port)
                       : o.tcp.token;
      try {
        shm = std::make_unique<detail::shm_impl>(
            shm_side(token + "/host-group-" + std::to_string(group_ranks.front()),
                     static_cast<int>(std::find(group_ranks.begin(), group_ranks.end(), rank) -
                                      group_ranks.begin())),
            std::move(shm_abort));
      } catch (transport_error const& e) {
        // The ranks of other hosts are connected and may wait for this one: tell them why
        // it will not come (and end the TCP side at once rather than wait for their byes).
        tcp->abort(static_cast<errc>(e.code().value()), bare(e));
        throw;
      }
      if (static_cast<int>(group_ranks.size()) == size) {
        tcp.reset();  // every rank is here: pure shm (the TCP side has no connection anyway)
        return;
      }
      auto* sh = shm.get();
      auto* tc = tcp.get();
      tcp->set_arrival_hook([sh] { sh->wake(); });
      shm->set_external_check([tc] { tc->throw_if_failed(); });
      shm->set_before_sleep([tc] { tc->caller_sleeps(); });
    }
    state(state const&) = delete;
    state& operator=(state const&) = delete;
    ~state() {
      if (tcp) tcp->set_arrival_hook({});  // before the shm side it rings goes
      if (shm) {                           // and the TCP side they call
        shm->set_external_check({});
        shm->set_before_sleep({});
      }
      tcp.reset();
      shm.reset();
    }

    // The shm options of this rank's host group (`me`: its number there; -1: the whole job).
    shm_options shm_side(std::string const& token, int me) const {
      shm_options so;
      so.rank = me < 0 ? rank : me;
      so.size = me < 0 ? size : static_cast<int>(group_ranks.size());
      so.token = token;
      so.token_source = o.tcp.token_source;
      so.timeout = o.tcp.timeout;
      so.spin = o.shm_spin;
      so.ring_bytes = o.shm_ring_bytes;
      so.offer_bytes = o.shm_offer_bytes;
      so.combine_bytes = o.shm_combine_bytes;
      so.cross_memory_attach = o.shm_cross_memory_attach;
      so.rewind_bytes = o.shm_rewind_bytes;
      so.pool_bytes = o.shm_pool_bytes;
      so.spread_ranks = o.shm_spread_ranks;
      if (me >= 0) so.global_ranks = group_ranks;
      // The machine's ranks against its CPUs, as the TCP rendezvous judged them (every rank of
      // the machine, whatever its network namespace), where there is a TCP side; the host
      // group's own count where that says more.
      if (tcp)
        so.shares_cores = tcp->options().shares_cores || detail::ranks_outnumber_cpus(so.size);
      // In a job over several hosts, a wait on the shm side is also the wait for a TCP message
      // (it drains the rings and polls the socket): unless told, it polls at least as long as
      // the TCP side would (tcp_options::spin, which from_env sets from the same judgement of
      // the machine). shm's own 50 us where ranks share cores gave up before most TCP messages
      // came, and each then cost a sleep and the I/O thread's wake-up: two namespaces of three
      // ranks on 2 cores, the tree at 64 KiB took 238-298 us, and 134-135 polling as TCP does;
      // four ranks each, the default 153-170 against 282-424 (benchmark/analysis.md, "Polling
      // in a mixed job"). Set only where longer: a spin the options give also keeps unmatched
      // offers uncopied that long (shm_options::spin), which the default holds to 50 us.
      if (tcp && !o.shm_spin && static_cast<int>(group_ranks.size()) < size &&
          tcp->options().spin > detail::default_spin(so.size))
        so.spin = tcp->options().spin;
      return so;
    }

    // The first error of either side ends the other too (the first error wins on each).
    void poison(transport_error const& e) noexcept {
      if (poisoned) return;
      poisoned = true;
      try {
        failure = e.what();
        if (shm) shm->fail_from_outside(e);
        if (tcp) tcp->abort(static_cast<errc>(e.code().value()), bare(e));
      } catch (...) {
      }
    }
  };

  explicit hybrid_transport(std::unique_ptr<state> s) : s_(std::move(s)) {}

  // An error's text without the ": <meaning of its code>" that std::system_error appends.
  static std::string bare(transport_error const& e) {
    std::string text = e.what();
    auto const tail = ": " + e.code().message();
    if (text.size() > tail.size() && text.ends_with(tail)) text.resize(text.size() - tail.size());
    return text;
  }

  // The loopback address of the family of `master` (an address or a host name).
  static boost::asio::ip::address loopback(std::string const& master) {
    if (master.find(':') != std::string::npos) return boost::asio::ip::address_v6::loopback();
    return boost::asio::ip::address_v4::loopback();
  }

  static hybrid_options const& check(hybrid_options const& o) {
    auto const& t = o.tcp;
    if (t.size < 1 || t.rank < 0 || t.rank >= t.size)
      throw usage_error("gcl: hybrid_options: rank " + std::to_string(t.rank) +
                        " is out of range for a job of size " + std::to_string(t.size));
    if (t.timeout.count() <= 0) throw usage_error("gcl: hybrid_options: timeout must be positive");
    if (o.mode != transport_mode::shm && t.size > 1 && t.master_port == 0)
      throw usage_error(
          "gcl: hybrid_options: master_port is 0; set the port rank 0 listens on "
          "(GCL_MASTER_PORT), or use hybrid_transport::group for a local job");
    if (o.mode == transport_mode::shm && t.size > 1 && t.token.empty())
      throw usage_error(
          "gcl: hybrid_options: GCL_TRANSPORT=shm needs a job token (set GCL_TOKEN): the ranks "
          "of a job find each other by it");
    if (!o.test_hosts.empty() && static_cast<int>(o.test_hosts.size()) != t.size)
      throw usage_error("gcl: hybrid_options: test_hosts has " +
                        std::to_string(o.test_hosts.size()) + " entries for " +
                        std::to_string(t.size) + " ranks");
    return o;
  }

  void check_peer(int peer, char const* what) const {
    if (peer < 0 || peer >= s_->size)
      throw usage_error(detail::rank_prefix(s_->rank) + what + " rank " + std::to_string(peer) +
                        ", but the world size is " + std::to_string(s_->size));
  }

  template <class F>
  void guarded(char const* what, int peer, F&& f) {
    auto& s = *s_;
    if (s.poisoned)
      throw transport_error(errc::aborted,
                            detail::rank_prefix(s.rank) + what +
                                (peer >= 0 ? " rank " + std::to_string(peer) : std::string()) +
                                ": this transport failed earlier: " + s.failure);
    try {
      f();
    } catch (transport_error const& e) {
      s.poison(e);
      throw;
    }
  }

  void send_now(int peer, tag tg, std::span<std::byte const> out) {
    auto& s = *s_;
    if (s.on_shm(peer))
      s.shm->send(s.number_of(peer), tg, out);
    else
      s.tcp->send(peer, tg, out);
  }

  void recv_now(int peer, tag tg, std::span<std::byte> in) {
    auto& s = *s_;
    if (s.on_shm(peer)) return s.shm->recv(s.number_of(peer), tg, in);
    if (!s.shm) return s.tcp->recv(peer, tg, in);  // nothing else to progress meanwhile
    // From another host, while the rings of this one keep moving: the shm engine waits (drains,
    // sleeps on this rank's futex, which the TCP I/O thread rings on every arrival) and looks
    // for the message between drains, reading the peer's socket itself while it polls, with the
    // receive posted so that the frame is read straight into `in`.
    detail::tcp_impl::polled_recv message(*s.tcp, peer, tg, in);
    bool got = false;
    auto ready = [&] { return got || (got = message.poll()); };
    if (ready()) return;
    s.tcp->set_waiting_for(peer);  // what this rank answers the peers' status queries
    struct reset {
      detail::tcp_impl& tcp;
      ~reset() { tcp.set_waiting_for(-1); }
    } waiting{*s.tcp};
    if (s.shm->wait_external(ready, std::chrono::steady_clock::now() + s.o.tcp.timeout)) return;
    throw transport_error(
        errc::timeout,
        detail::rank_prefix(s.rank) + "recv from rank " + std::to_string(peer) + " over TCP (" +
            std::to_string(in.size()) + " bytes, " + detail::tag_text(tg) + ", " +
            describe(s.call) + ") timed out after " +
            detail::format_duration(
                std::chrono::duration_cast<std::chrono::milliseconds>(s.o.tcp.timeout)) +
            ": that rank did not send it (it is stopped, hung, or waits for something else)");
  }

  std::unique_ptr<state> s_;
};

}  // namespace gcl
