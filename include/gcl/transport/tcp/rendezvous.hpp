#pragma once
// How tcp_transport's ranks find each other and connect, one socket per pair.
//
// Every rank listens on its own port (rank 0 on the master port). Ranks 1..P-1 connect to rank
// 0 and "join" with their rank, job size, token hash and listening address; when all have
// joined, rank 0 answers each with the address table. The join connection becomes the data
// connection between rank 0 and that rank. Then rank r connects to ranks 1..r-1 (the higher
// rank always connects, so each pair has exactly one connection and nobody waits for a connect
// it would have to make itself) and accepts ranks r+1..P-1. Every step is asynchronous on one
// io_context, driven by the caller's thread in short slices, so the rendezvous is bounded by
// the timeout and notices an abort. Anything that does not present the right hello (wrong
// magic, version, token, size, rank, or nothing at all) is logged (log.hpp: a warning, on stderr
// unless the program set a handler) and closed without affecting the job; the accept loop keeps
// running after the rendezvous, so the same holds for the whole life of the transport.

#include "asio.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "../../detail/boot_id.hpp"
#include "../../detail/error_text.hpp"
#include "../../error.hpp"
#include "../../log.hpp"
#include "abort_state.hpp"
#include "cores.hpp"
#include "interfaces.hpp"
#include "options.hpp"
#include "wire.hpp"

namespace gcl::detail {

// How many times an accept failed (out of descriptors, buffers or memory, ...) in this process,
// over all transports: for tests that check the accept loop backs off instead of spinning.
inline std::atomic<std::uint64_t> tcp_accept_failures{0};

inline std::string endpoint_text(tcp::endpoint const& e) {
  auto a = e.address().to_string();
  return (e.address().is_v6() ? "[" + a + "]" : a) + ":" + std::to_string(e.port());
}

class tcp_rendezvous : public std::enable_shared_from_this<tcp_rendezvous> {
 public:
  tcp_rendezvous(asio::io_context& io, tcp::acceptor& acceptor, tcp_options const& o,
                 std::shared_ptr<tcp_abort_state> abort)
      : io_(io),
        acceptor_(acceptor),
        o_(o),
        abort_(std::move(abort)),
        accept_timer_(io),
        peers_(static_cast<std::size_t>(o.size)),
        table_(static_cast<std::size_t>(o.size)),
        where_(static_cast<std::size_t>(o.size)),
        keys_(static_cast<std::size_t>(o.size)),
        flags_(static_cast<std::size_t>(o.size)),
        cpus_(static_cast<std::size_t>(o.size)),
        attempt_(static_cast<std::size_t>(o.size)),
        expected_(o.size - 1) {
    keys_[static_cast<std::size_t>(o.rank)] = o.host_key;
    flags_[static_cast<std::size_t>(o.rank)] =
        table_flags({o.shares_cores, o.over_two_per_cpu, o.crowds_cores});
    cpus_[static_cast<std::size_t>(o.rank)] = own_cpus();
  }

  std::vector<std::optional<tcp::socket>>& peers() { return peers_; }
  std::vector<std::string>& where() { return where_; }
  // Every rank's host key (wire.hpp), known once run() returns.
  std::vector<host_key> const& keys() const { return keys_; }
  // Whether any rank of the job shares a core (tcp_options::shares_cores), known once run()
  // returns: every rank has the same table, so every rank gives the same answer.
  bool any_shares_cores() const { return any_rank_has(table_shares_cores); }
  // Whether any rank's host has more than two ranks per CPU (tcp_options::over_two_per_cpu),
  // the same on every rank as any_shares_cores.
  bool any_over_two_per_cpu() const { return any_rank_has(table_over_two_per_cpu); }
  // Whether any rank's host has at least two ranks per CPU (tcp_options::crowds_cores), the
  // same on every rank as any_shares_cores.
  bool any_crowds_cores() const { return any_rank_has(table_crowds_cores); }
  // What rank 0 judged of this rank's cores from the CPUs of its machine's ranks (cores.hpp),
  // once run() returns; nothing where it could not judge.
  std::optional<cores_judgement> own_cores() const {
    auto const f = flags_[static_cast<std::size_t>(o_.rank)];
    if ((f & table_cores_judged) == 0) return std::nullopt;
    return cores_judgement{(f & table_shares_cores) != 0, (f & table_over_two_per_cpu) != 0,
                           (f & table_crowds_cores) != 0};
  }
  // Whether this rank and rank r share a host and so, with connect_same_host false, have no
  // data connection (only once rank 0's table has come, for a rank other than 0).
  bool apart(int r) const {
    if (o_.connect_same_host || r == o_.rank) return false;
    auto const& k = keys_[static_cast<std::size_t>(r)];
    return k == o_.host_key && std::any_of(k.begin(), k.end(), [](auto b) { return b != 0; });
  }
  std::string prefix() const { return rank_prefix(o_.rank); }  // error_text.hpp

  // Forms the job; `prebound_fd` >= 0 is rank 0's listening socket made by a group.
  void run(int prebound_fd) {
    deadline_ = std::chrono::steady_clock::now() + o_.timeout;
    resolve_master();
    listen(prebound_fd);
    port_ = acceptor_.local_endpoint().port();
    start_accept();
    if (o_.rank == 0) {
      where_[0] = "rank 0 at " + endpoint_text(acceptor_.local_endpoint());
      try {
        wait([&] { return joined_ == o_.size - 1; },
             [&] {
               return "waiting at " + endpoint_text(acceptor_.local_endpoint()) + " for " +
                      missing(0) + " to join (" + std::to_string(joined_) + " of " +
                      std::to_string(o_.size - 1) + " joined)";
             });
      } catch (transport_error const& e) {
        // The ranks that joined wait for the table; tell them why none will come, or all they
        // would see is the connection closing ("End of file").
        tell_joined(
            static_cast<errc>(e.code().value()),
            e.code() == errc::timeout ? "rank 0 timed out after " + format_duration(o_.timeout) +
                                            " waiting for " + missing(0) + " to join"
            : e.code() == errc::aborted ? "rank 0's rendezvous was aborted: " + abort_->why()
                                        : std::string(e.what()));
        throw;
      }
      judge_cores_of_machines();
      send_tables();
      wait([&] { return tables_sent_ == o_.size - 1; },
           [&] { return std::string("sending the address table to the ranks"); });
    } else {
      connect_to(0, master_);
      wait([&] { return connected_ == expected_; }, [&] { return waiting_text(); });
    }
    // The join connection of a rank on rank 0's host carried only the rendezvous.
    for (int r = 0; r < o_.size; ++r)
      if (apart(r)) peers_[static_cast<std::size_t>(r)].reset();
    finished_ = true;
  }

 private:
  // A rank's table flags (wire.hpp) from its options' facts about its cores.
  static std::uint8_t table_flags(cores_judgement const& j) {
    return static_cast<std::uint8_t>((j.shares_cores ? table_shares_cores : 0) |
                                     (j.over_two_per_cpu ? table_over_two_per_cpu : 0) |
                                     (j.crowds_cores ? table_crowds_cores : 0));
  }
  // This rank's machine and CPUs, as its join hello's sequel carries them (wire.hpp).
  hello_cpus own_cpus() const {
    hello_cpus h;
    h.machine = this_boot_id();
    h.cpus = cpu_bitmap(o_.cpus);
    return h;
  }
  // Rank 0, once every rank has joined: where it can judge from the CPUs of a machine's ranks
  // whether they share cores, the judgement replaces their own guesses in the table.
  void judge_cores_of_machines() {
    auto const judged = judge_cores(cpus_);
    for (std::size_t r = 0; r < judged.size(); ++r)
      if (judged[r])
        flags_[r] = static_cast<std::uint8_t>(table_flags(*judged[r]) | table_cores_judged);
  }
  // Whether any rank's flags_ have `flag`.
  bool any_rank_has(std::uint8_t flag) const {
    return std::any_of(flags_.begin(), flags_.end(),
                       [&](std::uint8_t f) { return (f & flag) != 0; });
  }

  struct conn {
    explicit conn(asio::io_context& io) : socket(io), timer(io) {}
    tcp::socket socket;
    asio::steady_timer timer;
    std::array<std::byte, reply_size> buf{};
    std::array<std::byte, hello_cpus_size> cpus{};  // what follows a join hello
    std::vector<std::byte> table;
  };

  // "ranks 2, 3": who of ranks `from`.. has not connected yet (the first 8), or "".
  std::string missing(int from) const {
    std::string s;
    int n = 0;
    for (int r = from; r < o_.size; ++r)
      if (r != o_.rank && !peers_[static_cast<std::size_t>(r)] && !apart(r) && n++ < 8)
        s += (s.empty() ? "" : ", ") + std::to_string(r);
    if (n == 0) return {};
    return (n == 1 ? "rank " : "ranks ") + s + (n > 8 ? ", ..." : "");
  }

  // What a rank other than 0 is waiting for now, from the state of each connection (not from
  // the last event, which may be long answered): its attempts to reach lower ranks that have
  // not answered yet, then the higher ranks that have not connected to it.
  std::string waiting_text() const {
    std::string s;
    auto add = [&](std::string const& t) {
      if (!t.empty()) s += (s.empty() ? "" : "; ") + t;
    };
    for (int r = 0; r < o_.rank; ++r) {
      auto const i = static_cast<std::size_t>(r);
      if (!peers_[i] && !apart(r))
        add(attempt_[i].empty() ? "waiting to connect to rank " + std::to_string(r) : attempt_[i]);
    }
    if (peers_[0]) {  // the table came: the higher ranks know where we are
      if (auto m = missing(o_.rank + 1); !m.empty())
        add("waiting for " + m + " to connect to this rank at port " + std::to_string(port_) +
            " (" + std::to_string(connected_) + " of " + std::to_string(expected_) + " connected)");
    }
    return s;
  }

  template <class Done, class Pending>
  void wait(Done done, Pending pending) {
    while (!done()) {
      if (failure_) std::rethrow_exception(failure_);
      if (abort_->aborted)
        throw transport_error(errc::aborted, prefix() + "rendezvous aborted: " + abort_->why());
      auto now = std::chrono::steady_clock::now();
      if (now >= deadline_)
        throw transport_error(errc::timeout, prefix() + "rendezvous timed out after " +
                                                 format_duration(o_.timeout) + ": " + pending());
      io_.restart();
      io_.run_for(std::min<std::chrono::steady_clock::duration>(std::chrono::milliseconds(20),
                                                                deadline_ - now));
    }
    if (failure_) std::rethrow_exception(failure_);
  }

  std::string interface_text() const {
    if (!o_.interface_name.empty()) return " via interface " + o_.interface_name;
    if (!o_.bind_address.empty()) return " from " + o_.bind_address;
    return "";
  }

  void resolve_master() {
    tcp::resolver resolver(io_);
    boost::system::error_code ec;
    auto results = resolver.resolve(o_.master_addr, std::to_string(o_.master_port),
                                    tcp::resolver::numeric_service, ec);
    if (!ec)
      for (auto const& r : results) {
        auto a = r.endpoint().address();
        if ((o_.family == address_family::v4 && !a.is_v4()) ||
            (o_.family == address_family::v6 && !a.is_v6()))
          continue;
        master_ = r.endpoint();
        return;
      }
    throw transport_error(errc::connection_refused,
                          prefix() + "cannot resolve the master address '" + o_.master_addr + "'" +
                              (o_.family == address_family::any  ? ""
                               : o_.family == address_family::v4 ? " as IPv4"
                                                                 : " as IPv6") +
                              (ec ? ": " + ec.message() : ""));
  }

  // The address to bind: the interface's, the bind address, or "any" of the master's family.
  asio::ip::address local_address() const {
    auto family = master_.address().is_v6() ? address_family::v6 : address_family::v4;
    if (!o_.interface_name.empty()) return interface_address(o_.interface_name, family);
    if (!o_.bind_address.empty()) {
      boost::system::error_code ec;
      auto a = asio::ip::make_address(o_.bind_address, ec);
      if (ec)
        throw usage_error(prefix() + "bind address '" + o_.bind_address +
                          "' is not an IP address (GCL_BIND_ADDR / tcp_options::bind_address)");
      return a;
    }
    if (master_.address().is_v6()) return asio::ip::address_v6::any();
    return asio::ip::address_v4::any();
  }

  void listen(int prebound_fd) {
    if (prebound_fd >= 0) {
      acceptor_.assign(master_.address().is_v6() ? tcp::v6() : tcp::v4(), prebound_fd);
      return;
    }
    tcp::endpoint ep(local_address(), o_.rank == 0 ? o_.master_port : 0);
    boost::system::error_code ec;
    acceptor_.open(ep.protocol(), ec);
    if (!ec) acceptor_.set_option(tcp::acceptor::reuse_address(true), ec);
    if (!ec) acceptor_.bind(ep, ec);
    if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
    if (ec)
      throw transport_error(errc::connection_refused,
                            prefix() + "cannot listen on " + endpoint_text(ep) + interface_text() +
                                (o_.rank == 0 ? " (the master port)" : "") + ": " + ec.message());
  }

  void refuse(tcp::endpoint const& from, std::string const& why) const {
    detail::log(log_level::warning, prefix() + "refused a connection from " + endpoint_text(from) +
                                        " on port " + std::to_string(static_cast<unsigned>(port_)) +
                                        ": " + why);
  }

  void start_accept() {
    acceptor_.async_accept(
        [self = shared_from_this()](boost::system::error_code ec, tcp::socket s) {
          if (ec == asio::error::operation_aborted || !self->acceptor_.is_open()) return;
          if (ec) return self->accept_failed(ec);
          self->accept_backoff_ = {};
          auto c = std::make_shared<conn>(self->io_);
          c->socket = std::move(s);
          self->incoming(c);
          self->start_accept();
        });
  }

  // Out of descriptors (EMFILE, ENFILE), buffers or memory, the pending connection stays in the
  // backlog: accepting again at once fails again at once, a busy loop that takes the CPU from
  // the job and keeps it from freeing anything. Wait, 10 ms doubling to 1 s, then try again;
  // a successful accept starts over at 10 ms.
  void accept_failed(boost::system::error_code ec) {
    tcp_accept_failures.fetch_add(1, std::memory_order_relaxed);
    if (accept_backoff_.count() == 0)  // once per streak of failures, not once per retry
      detail::log(log_level::warning, prefix() + "cannot accept connections on port " +
                                          std::to_string(static_cast<unsigned>(port_)) + ": " +
                                          ec.message() + "; retrying every 10 ms to 1 s");
    accept_backoff_ = accept_backoff_.count() == 0
                          ? std::chrono::milliseconds(10)
                          : std::min(accept_backoff_ * 2, std::chrono::milliseconds(1000));
    accept_timer_.expires_after(accept_backoff_);
    accept_timer_.async_wait([self = shared_from_this()](boost::system::error_code timer_ec) {
      if (timer_ec || !self->acceptor_.is_open()) return;
      self->start_accept();
    });
  }

  // Bounds the read of the handshake step that follows: unless the read completes first (its
  // handler cancels c->timer), `from` is refused with `what` and its connection closed. So a
  // stranger holds a connection for at most min(timeout, 10 s) per step.
  void limit_read(std::shared_ptr<conn> const& c, tcp::endpoint const& from, char const* what) {
    c->timer.expires_after(
        std::min<std::chrono::milliseconds>(o_.timeout, std::chrono::seconds(10)));
    c->timer.async_wait([self = shared_from_this(), c, from, what](boost::system::error_code ec) {
      if (ec) return;
      self->refuse(from, what);
      c->socket.close(ec);
    });
  }

  void incoming(std::shared_ptr<conn> c) {
    boost::system::error_code endpoint_ec;
    auto from = c->socket.remote_endpoint(endpoint_ec);
    limit_read(c, from, "no hello within the time limit");
    asio::async_read(
        c->socket, asio::buffer(c->buf.data(), hello_size),
        [self = shared_from_this(), c, from](boost::system::error_code ec, std::size_t n) {
          c->timer.cancel();
          if (ec == asio::error::operation_aborted) return;
          std::span<std::byte const> got(c->buf.data(), n);
          if (ec && n > 0 && !is_gcl_hello(got))
            return self->refuse(
                from, "sent " + std::to_string(n) + " bytes that are not a gcl hello, then closed");
          if (ec) return self->refuse(from, "closed before saying hello (" + ec.message() + ")");
          self->on_hello(c, from, got);
        });
  }

  // Whether a well-formed hello fits this job (decode_hello checked magic, version, kind and
  // address family).
  std::string check(hello const& h) const {
    if (h.token != token_hash(o_.token))
      return "wrong job token (GCL_TOKEN differs; this rank's token comes from " +
             o_.token_origin() + ")";
    if (h.size != o_.size)
      return "rank " + std::to_string(h.rank) + " says the job has " + std::to_string(h.size) +
             " ranks, this job has " + std::to_string(o_.size);
    // hybrid_transport's modes: tcp connects ranks of one host, auto does not. (Short: the
    // refused rank's reply holds 119 bytes of text.)
    if (((h.flags & hello_connects_same_host) != 0) != o_.connect_same_host)
      return "rank " + std::to_string(h.rank) +
             " runs GCL_TRANSPORT=" + (o_.connect_same_host ? "auto" : "tcp") + ", this rank " +
             (o_.connect_same_host ? "tcp" : "auto") + " (every rank needs the same)";
    if (finished_)
      return "the job is already formed; nobody may join now (it claims rank " +
             std::to_string(h.rank) + ")";
    bool join = h.kind == hello_kind::join;
    if (join != (o_.rank == 0) || (!join && h.kind != hello_kind::peer))
      return "unexpected hello kind for rank " + std::to_string(o_.rank);
    if (h.rank <= o_.rank || h.rank >= o_.size)
      return "claims rank " + std::to_string(h.rank) + ", but only ranks " +
             std::to_string(o_.rank + 1) + ".." + std::to_string(o_.size - 1) + " connect here";
    if (peers_[static_cast<std::size_t>(h.rank)] || claimed_.count(h.rank))
      return "claims rank " + std::to_string(h.rank) + ", which is already connected";
    return {};
  }

  void reply_and_close(std::shared_ptr<conn> c, errc code, std::string const& why) {
    c->buf = encode_reply(static_cast<std::uint32_t>(code), why);
    asio::async_write(c->socket, asio::buffer(c->buf.data(), reply_size),
                      [c](boost::system::error_code ec, std::size_t) { c->socket.close(ec); });
  }

  void on_hello(std::shared_ptr<conn> c, tcp::endpoint const& from,
                std::span<std::byte const> bytes) {
    auto decoded = decode_hello(bytes);
    if (decoded && decoded.value.kind == hello_kind::join) {
      // Its machine and CPUs follow (wire.hpp, hello_cpus), read before the hello is judged:
      // a refusal then closes a connection with nothing unread, where a close with bytes
      // unread resets it, and the refused rank might lose the reply that says why.
      limit_read(c, from, "sent no CPUs after its hello within the time limit");
      asio::async_read(c->socket, asio::buffer(c->cpus),
                       [self = shared_from_this(), c, from, h = decoded.value](
                           boost::system::error_code ec, std::size_t) {
                         c->timer.cancel();
                         if (ec == asio::error::operation_aborted) return;  // timed out
                         if (ec)
                           return self->refuse(
                               from, "closed before sending its CPUs (" + ec.message() + ")");
                         self->admit(c, from, h, hello_cpus::decode(c->cpus));
                       });
      return;
    }
    if (!decoded) {
      refuse(from, decoded.error);
      // A gcl peer (of any version) learns why; a stranger gets nothing.
      if (is_gcl_hello(bytes))
        reply_and_close(c, errc::protocol, prefix() + "refused: " + decoded.error);
      return;
    }
    admit(c, from, decoded.value, hello_cpus{});
  }

  // A well-formed hello (a join's with the CPUs that followed it): refused with the reason, or
  // the rank joins (rank 0) or connects.
  void admit(std::shared_ptr<conn> c, tcp::endpoint const& from, hello const& h,
             hello_cpus const& cpus) {
    if (auto why = check(h); !why.empty()) {
      refuse(from, why);
      reply_and_close(c, errc::protocol, prefix() + "refused: " + why);
      return;
    }
    c->socket.set_option(tcp::no_delay(true));
    if (h.kind == hello_kind::join) return joined(c, from, h, cpus);
    claimed_.insert(h.rank);
    c->buf = encode_reply(0, "");
    asio::async_write(c->socket, asio::buffer(c->buf.data(), reply_size),
                      [self = shared_from_this(), c, r = h.rank, from](boost::system::error_code ec,
                                                                       std::size_t) {
                        self->claimed_.erase(r);
                        if (ec) return self->refuse(from, "went away during the handshake");
                        auto const i = static_cast<std::size_t>(r);
                        self->where_[i] =
                            "rank " + std::to_string(r) + " at " + endpoint_text(from);
                        self->peers_[i].emplace(std::move(c->socket));
                        ++self->connected_;
                      });
  }

  // Rank 0: rank h.rank has joined with its hello and its CPUs.
  void joined(std::shared_ptr<conn> c, tcp::endpoint const& from, hello const& h,
              hello_cpus const& cpus) {
    asio::ip::address a = from.address();
    if (std::any_of(h.address.begin(), h.address.end(), [](auto b) { return b != 0; })) {
      if (h.family == 6)
        a = asio::ip::address_v6(h.address);
      else
        a = asio::ip::address_v4({h.address[0], h.address[1], h.address[2], h.address[3]});
    }
    auto const i = static_cast<std::size_t>(h.rank);
    table_[i] = tcp::endpoint(a, h.port);
    keys_[i] = h.key;
    flags_[i] =
        table_flags({(h.flags & hello_shares_cores) != 0, (h.flags & hello_over_two_per_cpu) != 0,
                     (h.flags & hello_crowds_cores) != 0});
    cpus_[i] = cpus;
    where_[i] = "rank " + std::to_string(h.rank) + " at " + endpoint_text(from);
    peers_[i].emplace(std::move(c->socket));
    ++joined_;
  }

  // Rank 0, when the rendezvous fails before the tables went out: a refusal to every rank
  // that joined, saying why. Bounded: 128 bytes on a connection that has carried only a hello
  // fit in any socket buffer, so this takes no time unless the network is gone.
  void tell_joined(errc code, std::string const& why) {
    auto out = std::make_shared<std::array<std::byte, reply_size>>();
    *out = encode_reply(static_cast<std::uint32_t>(code), why);
    auto pending = std::make_shared<int>(0);
    for (std::size_t r = 1; r < peers_.size(); ++r) {
      if (!peers_[r]) continue;
      ++*pending;
      asio::async_write(*peers_[r], asio::buffer(*out),
                        [out, pending](boost::system::error_code, std::size_t) { --*pending; });
    }
    auto until = std::chrono::steady_clock::now() +
                 std::min<std::chrono::steady_clock::duration>(o_.timeout, std::chrono::seconds(1));
    for (auto now = std::chrono::steady_clock::now(); *pending > 0 && now < until;
         now = std::chrono::steady_clock::now()) {
      io_.restart();
      io_.run_for(std::min<std::chrono::steady_clock::duration>(std::chrono::milliseconds(20),
                                                                until - now));
    }
  }

  void send_tables() {
    std::vector<table_entry> entries(static_cast<std::size_t>(o_.size));
    for (std::size_t r = 0; r < entries.size(); ++r) {
      auto a = table_[r].address();
      auto& e = entries[r];
      e.family = a.is_v6() ? 6 : 4;
      e.port = table_[r].port();
      e.key = keys_[r];
      e.flags = flags_[r];
      if (a.is_v6()) {
        e.address = a.to_v6().to_bytes();
      } else {
        auto b = a.to_v4().to_bytes();
        std::copy(b.begin(), b.end(), e.address.begin());
      }
    }
    auto bytes = std::make_shared<std::vector<std::byte>>(
        reply_size + table_entry_size * static_cast<std::size_t>(o_.size));
    std::ranges::copy(encode_reply(0, ""), bytes->begin());
    encode_table(bytes->data() + reply_size, entries);
    for (std::size_t r = 1; r < peers_.size(); ++r)
      asio::async_write(
          *peers_[r], asio::buffer(*bytes),
          [self = shared_from_this(), bytes, r](boost::system::error_code ec, std::size_t) {
            if (ec && !self->failure_)
              self->failure_ = std::make_exception_ptr(transport_error(
                  errc::peer_closed, self->prefix() + self->where_[r] +
                                         " left during the rendezvous: " + ec.message()));
            ++self->tables_sent_;
          });
  }

  void connect_to(int r, tcp::endpoint ep) {
    auto c = std::make_shared<conn>(io_);
    boost::system::error_code open_ec;
    c->socket.open(ep.protocol(), open_ec);
    if (!open_ec && (!o_.interface_name.empty() || !o_.bind_address.empty()))
      c->socket.bind(tcp::endpoint(local_address(), 0), open_ec);
    if (open_ec)
      throw transport_error(errc::connection_refused, prefix() + "cannot open a socket to rank " +
                                                          std::to_string(r) + " at " +
                                                          endpoint_text(ep) + interface_text() +
                                                          ": " + open_ec.message());
    auto const i = static_cast<std::size_t>(r);
    if (attempt_[i].empty())  // a retry keeps the last error until it has news
      attempt_[i] =
          "connecting to rank " + std::to_string(r) + " at " + endpoint_text(ep) + interface_text();
    c->socket.async_connect(
        ep, [self = shared_from_this(), c, r, i, ep](boost::system::error_code ec) {
          if (ec) {
            // Rank 0 may not be listening yet: retry until the deadline (reported by wait()).
            self->attempt_[i] = "could not connect to rank " + std::to_string(r) + " at " +
                                endpoint_text(ep) + self->interface_text() + ": " + ec.message();
            c->timer.expires_after(std::chrono::milliseconds(100));
            c->timer.async_wait([self, c, r, ep](boost::system::error_code timer_ec) {
              if (!timer_ec) self->connect_to(r, ep);
            });
            return;
          }
          self->attempt_[i] = "connected to rank " + std::to_string(r) + " at " +
                              endpoint_text(ep) + ", waiting for its answer";
          self->handshake(c, r, ep);
        });
  }

  void handshake(std::shared_ptr<conn> c, int r, tcp::endpoint ep) {
    c->socket.set_option(tcp::no_delay(true));
    hello h;
    h.kind = r == 0 ? hello_kind::join : hello_kind::peer;
    h.rank = o_.rank;
    h.size = o_.size;
    h.token = token_hash(o_.token);
    h.port = acceptor_.local_endpoint().port();
    h.key = o_.host_key;
    h.flags = static_cast<std::uint8_t>((o_.connect_same_host ? hello_connects_same_host : 0) |
                                        (o_.shares_cores ? hello_shares_cores : 0) |
                                        (o_.over_two_per_cpu ? hello_over_two_per_cpu : 0) |
                                        (o_.crowds_cores ? hello_crowds_cores : 0));
    boost::system::error_code endpoint_ec;
    auto local = !o_.interface_name.empty() || !o_.bind_address.empty()
                     ? local_address()
                     : c->socket.local_endpoint(endpoint_ec).address();
    h.family = local.is_v6() ? 6 : 4;
    if (local.is_v6())
      h.address = local.to_v6().to_bytes();
    else {
      auto b = local.to_v4().to_bytes();
      std::copy(b.begin(), b.end(), h.address.begin());
    }
    // Joining rank 0, the hello and this rank's CPUs in one write.
    auto out = std::make_shared<std::vector<std::byte>>(
        hello_size + (h.kind == hello_kind::join ? hello_cpus_size : 0));
    h.encode(out->data());
    if (h.kind == hello_kind::join)
      cpus_[static_cast<std::size_t>(o_.rank)].encode(out->data() + hello_size);
    asio::async_write(c->socket, asio::buffer(*out),
                      [out](boost::system::error_code, std::size_t) {});
    c->table.resize(reply_size +
                    (r == 0 ? table_entry_size * static_cast<std::size_t>(o_.size) : 0));
    asio::async_read(
        c->socket, asio::buffer(c->table),
        [self = shared_from_this(), c, r, ep](boost::system::error_code ec, std::size_t n) {
          self->on_answer(c, r, ep, ec, n);
        });
  }

  void fail(errc code, std::string const& what) {
    if (!failure_) failure_ = std::make_exception_ptr(transport_error(code, prefix() + what));
  }

  // `n` bytes of the answer arrived, then `ec`: a refusal is a reply and the connection's end;
  // an acceptance is a reply, and from rank 0 the address table.
  void on_answer(std::shared_ptr<conn> c, int r, tcp::endpoint ep, boost::system::error_code ec,
                 std::size_t n) {
    auto who = "rank " + std::to_string(r) + " at " + endpoint_text(ep);
    std::span<std::byte const> got(c->table.data(), n);
    auto answer = decode_reply(got.first(std::min(n, reply_size)));
    if (!answer) {
      if (n == 0 && ec)
        return fail(errc::peer_closed, who + " did not accept the connection: " + ec.message());
      return fail(errc::protocol, who + " did not answer as a gcl rank: " + answer.error +
                                      (ec ? " (then: " + ec.message() + ")" : ""));
    }
    if (auto status = answer.value.status; status != 0)
      return fail(static_cast<errc>(status),
                  who + " refused the connection: " +
                      (answer.value.text.empty() ? "(no reason given)" : answer.value.text));
    if (ec)
      return fail(errc::peer_closed, who + " accepted the connection, then closed it before " +
                                         (r == 0 ? "sending the address table: " : "") +
                                         ec.message());
    decoded<std::vector<table_entry>> table;
    if (r == 0) {
      table = decode_table(got.subspan(reply_size), o_.size);
      if (!table) return fail(errc::protocol, who + " sent a bad address table: " + table.error);
    }
    where_[static_cast<std::size_t>(r)] = who;
    peers_[static_cast<std::size_t>(r)].emplace(std::move(c->socket));
    attempt_[static_cast<std::size_t>(r)].clear();
    ++connected_;
    if (r != 0) return;
    for (int i = 0; i < o_.size; ++i) {
      auto const at = static_cast<std::size_t>(i);
      auto const& e = table.value[at];
      asio::ip::address a;
      if (e.family == 6)
        a = asio::ip::address_v6(e.address);
      else
        a = asio::ip::address_v4({e.address[0], e.address[1], e.address[2], e.address[3]});
      table_[at] = tcp::endpoint(a, e.port);
      keys_[at] = e.key;
      flags_[at] =
          static_cast<std::uint8_t>(e.flags & (table_shares_cores | table_over_two_per_cpu |
                                               table_crowds_cores | table_cores_judged));
      if (i > o_.rank)
        where_[at] = "rank " + std::to_string(i) + " at " + endpoint_text(table_[at]);
    }
    // A rank on this host is reached through its memory, not connected to (connect_same_host).
    for (int i = 1; i < o_.size; ++i)
      if (i != o_.rank && apart(i)) --expected_;
    for (int i = 1; i < o_.rank; ++i)
      if (!apart(i)) connect_to(i, table_[static_cast<std::size_t>(i)]);
  }

  asio::io_context& io_;
  tcp::acceptor& acceptor_;
  tcp_options o_;
  std::shared_ptr<tcp_abort_state> abort_;
  std::chrono::steady_clock::time_point deadline_;
  tcp::endpoint master_;
  std::uint16_t port_ = 0;
  asio::steady_timer accept_timer_;
  std::chrono::milliseconds accept_backoff_{0};  // 0: the last accept succeeded
  std::vector<std::optional<tcp::socket>> peers_;
  std::vector<tcp::endpoint> table_;
  std::vector<std::string> where_;
  std::set<int> claimed_;
  int joined_ = 0, tables_sent_ = 0, connected_ = 0;
  bool finished_ = false;
  std::vector<host_key> keys_;  // keys_[r]: rank r's host key (from its hello, or the table)
  // flags_[r]: rank r's tcp_options::shares_cores, over_two_per_cpu and crowds_cores, as the
  // table's bits (table_shares_cores, ...), from its hello or the table as keys_, or
  // what rank 0 judged from its machine's CPUs instead (then with table_cores_judged)
  std::vector<std::uint8_t> flags_;
  // cpus_[r]: rank r's machine and CPUs: this rank's own (own_cpus), and at rank 0 every
  // rank's from its join, for judge_cores_of_machines
  std::vector<hello_cpus> cpus_;
  std::vector<std::string> attempt_;  // the state of this rank's connection to each lower rank
  int expected_;                      // connections a rank other than 0 waits for
  std::exception_ptr failure_;
};

}  // namespace gcl::detail
