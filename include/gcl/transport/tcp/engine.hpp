#pragma once
// The engine of tcp_transport (see transport/tcp.hpp for what it promises): one I/O thread per
// rank running Boost.Asio for what happens while nobody waits, the caller's own writes and its
// own reads of the socket it waits on, per-(source, tag) queues, the direct read into a posted
// receive, early large frames left in the socket for it (park_threshold), bye and abort
// frames, poisoning. Kept apart so that transport/tcp.hpp stays a short read; the state it
// keeps per connection is connection.hpp, its message buffers buffer_pool.hpp.

#include "asio.hpp"

#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "../../call_info.hpp"
#include "../../detail/awake_time.hpp"
#include "../../detail/call_progress.hpp"
#include "../../detail/error_text.hpp"
#include "../../detail/host_cpus.hpp"
#include "../../error.hpp"
#include "../../log.hpp"
#include "abort_state.hpp"
#include "buffer_pool.hpp"
#include "congestion.hpp"
#include "connection.hpp"
#include "options.hpp"
#include "rendezvous.hpp"
#include "wire.hpp"

namespace gcl {

namespace detail {

// A data frame that arrives before its receive is posted, with a payload larger than this, is
// left in the socket (that connection is not read further for a while) rather than read into a
// pooled buffer and copied out later: once its receive is posted, it is read straight into the
// receiver's buffer, so an early large message costs no more than a late one (at 64 MiB the
// copy doubled the time of back-to-back calls). Smaller payloads are queued as they come: a
// copy of 64 KiB costs less than holding up that peer's later frames behind it.
inline constexpr std::uint64_t park_threshold = std::uint64_t{64} << 10;
// How long a parked frame waits while this rank's caller is outside any collective before it
// is read into a pooled buffer anyway (sends are eager, whatever the caller does next). Long
// enough for the caller to begin its next collective of back-to-back calls and post the receive.
inline constexpr std::chrono::milliseconds park_grace{1};

// A new listening socket on `address`, on a port of the kernel's choice (for a fork's
// rendezvous): its descriptor and port.
inline std::pair<int, std::uint16_t> listen_on(asio::ip::address const& address,
                                               std::string const& prefix) {
  asio::io_context io;
  asio::ip::tcp::acceptor a(io);
  asio::ip::tcp::endpoint const ep(address, 0);
  boost::system::error_code ec;
  a.open(ep.protocol(), ec);
  if (!ec) a.bind(ep, ec);
  if (!ec) a.listen(asio::socket_base::max_listen_connections, ec);
  if (ec)
    throw transport_error(
        errc::connection_refused,
        prefix + "cannot listen on " + endpoint_text(ep) + " for a fork: " + ec.message());
  auto const port = a.local_endpoint().port();
  return {a.release(), port};
}

class tcp_impl {
 public:
  tcp_impl(tcp_options o, std::shared_ptr<tcp_abort_state> abort, int prebound_fd)
      : o_(std::move(o)),
        abort_(std::move(abort)),
        acceptor_(io_),
        drain_timer_(io_),
        peers_(static_cast<std::size_t>(o_.size)),
        addresses_(static_cast<std::size_t>(o_.size)) {
    {
      std::lock_guard lock(abort_->mutex);
      abort_->members.emplace_back(this, [this] {
        std::lock_guard l(mutex_);
        notify();
      });
    }
    try {
      // A name the kernel refuses fails every rank here, before any waits for it.
      if (!o_.same_host_congestion_control.empty())
        check_congestion_control(o_.same_host_congestion_control);
      rendezvous_ = std::make_shared<tcp_rendezvous>(io_, acceptor_, o_, abort_);
      rendezvous_->run(prebound_fd);
      take_connections();
    } catch (...) {
      leave_group();
      throw;
    }
    io_.restart();  // the rendezvous may have run it out of work
    for (int r = 0; r < o_.size; ++r)
      if (peer_at(r).socket) post_io([this, r] { start_reading(r); });
    guard_.emplace(io_.get_executor());
    thread_ = std::thread([this] {
      // Where ranks share cores, a caller that polls reads its own messages; this thread's
      // work (other peers' frames, status, queued writes) can wait until the caller yields or
      // sleeps, and must not preempt it (or the rank it waits for) mid-poll. Linux gives each
      // thread its own nice value; raising it needs no privilege. Best effort: without it the
      // transport only polls less well. Not where each rank has a core of its own: there this
      // thread runs only when its caller sleeps (it rests while the caller polls), and it
      // reads for the sleeping caller; at nice 19 another program that keeps the core busy
      // would hold it off for a scheduler tick per message (4 ms a call at P = 2 beside two
      // busy loops, against 0.09-0.2 at nice 0).
      if (o_.spin.count() > 0 && !own_core_)
        (void)::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), 19);
      run_io();
    });
  }

  tcp_impl(tcp_impl const&) = delete;
  tcp_impl& operator=(tcp_impl const&) = delete;

  ~tcp_impl() {
    shut_down();
    leave_group();
  }

  int rank() const noexcept { return o_.rank; }
  std::uint16_t port() const { return acceptor_.local_endpoint().port(); }

  // ---- for tcp_transport::fork --------------------------------------------------------------

  std::shared_ptr<tcp_abort_state> const& abort_state() const noexcept { return abort_; }
  // Where this rank reached rank r (the address a fork's ranks connect to when r listens).
  std::string const& peer_address(int r) const { return addresses_[static_cast<std::size_t>(r)]; }
  // A new listening socket on the address this rank listens on, on a port of the kernel's
  // choice: its descriptor and port.
  std::pair<int, std::uint16_t> listen_anew() const {
    return listen_on(acceptor_.local_endpoint().address(), prefix());
  }
  // The address this rank listens on ("0.0.0.0" or "::" when it listens on all of them).
  std::string listen_address() const { return acceptor_.local_endpoint().address().to_string(); }
  int size() const noexcept { return o_.size; }
  tcp_options const& options() const noexcept { return o_; }
  // The congestion control of the connection to rank r ("" for none, or where unknown).
  std::string congestion_control(int r) const {
    return peer_at(r).fd < 0 ? std::string{} : congestion_control_of(peer_at(r).fd);
  }
  // Every rank's host key, from the rendezvous (all zero where the ranks gave none).
  std::vector<host_key> const& host_keys() const noexcept { return keys_; }
  // Whether any rank of the job shares a core (tcp_options::shares_cores), from the rendezvous:
  // the same on every rank.
  bool any_shares_cores() const noexcept { return any_shares_cores_; }
  // Whether any rank's host has more than two ranks per CPU (tcp_options::over_two_per_cpu),
  // from the rendezvous: the same on every rank.
  bool any_over_two_per_cpu() const noexcept { return any_over_two_per_cpu_; }
  // Whether any rank's host has at least two ranks per CPU (tcp_options::crowds_cores), from
  // the rendezvous: the same on every rank.
  bool any_crowds_cores() const noexcept { return any_crowds_cores_; }

  // ---- for hybrid_transport, whose caller waits on something else than this transport -------

  // `hook` runs (on whichever thread, under this transport's lock: it must be quick and must not
  // call back) whenever something a caller may wait for happens: a message queued, a failure,
  // a peer's bye. From then on, no frame is left in its socket for a later receive (parking):
  // a caller that waits elsewhere posts no receive that would take it, so every frame is read
  // as it comes, and those already parked are read now (a peer with nothing else to set up may
  // have sent one before the hook came). Empty: no hook (set so before what it calls goes away).
  void set_arrival_hook(std::function<void()> hook) {
    std::lock_guard lock(mutex_);
    arrival_hook_ = std::move(hook);
    parking_ = false;
    if (parked_count_ > 0) post_io([this] { drain_parked(); });
  }

  // A receive whose caller waits elsewhere and polls it (hybrid_transport, inside its shm
  // engine's wait): posted as recv() posts one, so that whichever thread reads the peer's
  // socket reads the matching frame's payload straight into `in`, with no pooled buffer and
  // no copy; and each poll reads the socket on the caller's thread when no other thread is,
  // while the I/O thread rests (rest_io): the message is taken the moment it is there, with no
  // wake-up of the I/O thread and then of the caller (tens of microseconds each where the
  // cores are busy). Ends unposted; if the caller gives up on a frame half read into `in` (a
  // timeout, another failure), the connection ends, as a recv's would.
  class polled_recv {
   public:
    polled_recv(tcp_impl& t, int peer, tag tg, std::span<std::byte> in)
        : t_(t), pr_{peer, static_cast<std::uint32_t>(tg), in, {}} {
      t.check_peer(peer, "recv from");
      std::lock_guard lock(t.mutex_);
      pr_.call = t.call_;
    }
    polled_recv(polled_recv const&) = delete;
    polled_recv& operator=(polled_recv const&) = delete;
    ~polled_recv() {
      std::unique_lock lock(t_.mutex_);
      t_.unpost(lock, pr_);
    }
    // True once the message is in `in`. Throws as recv does.
    bool poll() { return t_.poll(pr_); }

   private:
    tcp_impl& t_;
    tcp_posted_recv pr_;
  };

  // The caller that polled a polled_recv is about to sleep elsewhere: the I/O thread reads from
  // now on (its rest ends), and the arrival hook tells the caller what came.
  void caller_sleeps() { end_rest(); }

  // Which rank this rank's caller waits for (-1: none), for the answers to peers' status
  // queries, while it waits elsewhere than in recv().
  void set_waiting_for(int peer) {
    std::lock_guard lock(mutex_);
    waiting_for_ = peer;
  }

  // Throws what a call would throw now if this transport has failed or been aborted.
  void throw_if_failed() {
    std::lock_guard lock(mutex_);
    if (poisoned_) throw transport_error(poison_code_, poison_what_);
    if (abort_->aborted) {
      if (abort_->code == errc::mismatch)
        throw transport_error(errc::mismatch, prefix() + abort_->why());
      throw transport_error(errc::aborted,
                            prefix() + "in " + describe(call_) + " aborted: " + abort_->why());
    }
  }

  // Fails the job with an error met outside this transport: poisoned with it, and abort
  // frames carry it to every connected peer (the first failure wins).
  void abort(errc code, std::string const& what) {
    std::lock_guard lock(mutex_);
    poison(code, what, true);
  }

  // The I/O thread checks arriving frames against progress_, hence the lock.
  void end_context(std::uint32_t context) {
    std::lock_guard lock(mutex_);
    progress_.forget(context);
  }

  // A collective begins (or ends): messages of it that peers sent ahead, queued here before
  // this rank got to it, are checked now.
  void set_call(call_info const& c) {
    std::unique_lock lock(mutex_);
    call_ = c;
    progress_.set(c);
    if (c.kind == call_kind::point_to_point) {
      // Out of the collective: frames parked for its successor wait at most park_grace.
      if (parked_count_ > 0) post_io([this] { arm_drain_timer(); });
      return;
    }
    for (int r = 0; r < o_.size; ++r)
      if (auto what = ended_disagreement(r); !what.empty()) {
        poison(errc::mismatch, what, true);
        throw transport_error(errc::mismatch, what);
      }
    for (auto const& [k, queue] : inbox_)
      for (auto const& m : queue) check_arrived(static_cast<int>(k >> 32), m.call);
    for (int r = 0; r < o_.size; ++r)
      if (peer_at(r).stage == tcp_peer::rx_stage::parked) check_arrived(r, peer_at(r).rx.call);
  }

  // Under mutex_, for set_call: a frame from rank r that arrived ahead of this rank's collective.
  void check_arrived(int r, call_info const& theirs) {
    auto v = progress_.check(theirs);
    if (v != call_progress::verdict::conflict && v != call_progress::verdict::stale) return;
    auto what = prefix() + progress_.disagreement(o_.rank, r, theirs);
    poison(errc::mismatch, what, true);
    throw transport_error(errc::mismatch, what);
  }

  void send(int peer, tag tg, std::span<std::byte const> out) {
    check_peer(peer, "send to");
    std::unique_lock lock(mutex_);
    own_write o{peer};
    if (start_send(lock, o, tg, out)) finish_send(lock, o);
  }

  // send(dst) and recv(src) at once. A frame larger than the socket's buffer is written on,
  // while the receive waits, by this thread (wait_sockets) or, once the peer stops taking it,
  // by the I/O thread. So neither side's send waits for the other's receive, and the incoming
  // frame is read straight into `in` (its receive is posted while the send is under way): a
  // rank whose send() waits sleeps, and a sleeping rank's large frames are drained into pooled
  // buffers and copied, which at 32 MiB per direction cost as much as the transfer itself.
  void sendrecv(int dst, tag send_tag, std::span<std::byte const> out, int src, tag recv_tag,
                std::span<std::byte> in) {
    check_peer(dst, "send to");
    check_peer(src, "recv from");
    own_write o{dst};
    std::unique_lock lock(mutex_);
    bool const sending = start_send(lock, o, send_tag, out);
    lock.unlock();
    if (!sending) return recv(src, recv_tag, in);
    try {
      receive(src, recv_tag, in, &o);
    } catch (...) {
      lock.lock();
      abandon_send(lock, o);
      throw;
    }
    lock.lock();
    finish_send(lock, o);
  }

  // A receive that finds nothing queued posts itself; whichever thread reads the peer's socket
  // next (this one, polling it while it waits, or the I/O thread once it sleeps) reads a
  // matching frame's payload straight into `in` (no intermediate buffer, no copy). Anything
  // else (another size or call: a mismatch) is queued as usual and reported from the queue.
  void recv(int peer, tag tg, std::span<std::byte> in) { receive(peer, tg, in, nullptr); }

 private:
  // A data frame of the caller's on its way out (send, sendrecv). `held`: the caller holds
  // the peer's writer role and writes the frame itself; otherwise the I/O thread writes it.
  struct own_write {
    explicit own_write(int to) : peer(to) {}
    int peer;
    tcp_write w;
    bool held = false;
    std::chrono::steady_clock::time_point progressed;  // when the kernel last took some of it
  };

  // How long the caller goes on moving a large frame itself (writing its own, reading the one
  // it waits for) while its socket takes or gives nothing, before it leaves the frame to the
  // I/O thread and waits as for anything else: a peer that is there moves more within
  // microseconds, and one that is not may be waiting for a frame of its own, parked here,
  // which only a waiting caller's drain releases (sleep_until).
  static constexpr std::chrono::milliseconds drive_patience{2};

  // recv(), and the receiving half of sendrecv: `own`, if not null, is the frame the caller is
  // sending meanwhile, written on by this thread while it holds the writer role.
  void receive(int peer, tag tg, std::span<std::byte> in, own_write* own) {
    check_peer(peer, "recv from");
    std::unique_lock lock(mutex_);
    auto const start = std::chrono::steady_clock::now();
    auto const deadline = start + o_.timeout;
    auto const spin_until = start + o_.spin;
    // While it waits inside a collective, the rank asks its peers where they are, first after
    // 100 ms and then at doubling intervals up to 5 s: ranks that only wait in calls they
    // disagree about (different roots of a reduce) exchange no message that could show it.
    auto query_interval = std::chrono::milliseconds(100);
    auto next_query = start + query_interval;
    tcp_posted_recv pr{peer, static_cast<std::uint32_t>(tg), in, call_};
    auto progressed = start;  // when a large frame in or out last moved (drive_patience)
    waiting_for_ = peer;
    struct reset_waiting {
      int& w;
      ~reset_waiting() { w = -1; }
    } reset{waiting_for_};
    bool timed_out_quietly = false;  // the last wait ended at its time limit, with no event
    for (;;) {
      // Every event from here on ends the wait below at once: what the checks that follow
      // miss (a frame this thread's own pump queues, a failure another peer reports while it
      // reads) is news to it, even if it came before the wait began.
      auto const seen = events_.load(std::memory_order_relaxed);
      if (pr.st == tcp_posted_recv::done) return;
      if (pr.st != tcp_posted_recv::claimed) {
        if (auto* queue = queued_or_post(lock, pr)) {
          // Queued before a wait that no event ended: the wait slept though the message was
          // there, until its time limit (the status queries' timer or the deadline). A bug of
          // this transport's, which cost a zero-byte message up to 100 ms until 2026-12-06 (the
          // first barrier of nearly every job); said, so that it cannot come back unseen.
          if (timed_out_quietly)
            detail::log(log_level::warning,
                        prefix() + "recv from " + peer_at(peer).where + " (" + tag_text(tg) + ", " +
                            describe(call_) +
                            "): slept though its message had arrived, until a timer woke it "
                            "(a missed wake-up in gcl's TCP transport: please report it)");
          take_queued(lock, *queue, peer, tg, in);
          return;
        }
      }
      // Whatever that peer sent is read here, by the thread that waits for it, when no other
      // thread is reading that socket: into `in` if it is the posted receive's frame (also on,
      // once it is claimed: this thread reads the rest of a large frame as it comes).
      if (peer != o_.rank && take_reader(peer)) {
        lock.unlock();
        bool const got = pump(peer) > 0;
        finish_reading(peer);
        lock.lock();
        if (pr.st == tcp_posted_recv::done) return;
        if (got) progressed = std::chrono::steady_clock::now();
      }
      if (own != nullptr && own->held && write_more(lock, *own)) {
        progressed = std::chrono::steady_clock::now();
        continue;  // the frame's peer is reading it: maybe ours is done, or more has come
      }
      auto now = std::chrono::steady_clock::now();
      if (now < deadline) {
        if (now >= next_query) {
          if (call_.kind != call_kind::point_to_point) request_status();
          query_interval = std::min(query_interval * 2, std::chrono::milliseconds(5000));
          next_query = now + query_interval;
        }
        bool const writing = own != nullptr && own->held;
        bool const reading = pr.st == tcp_posted_recv::claimed && caller_may_read(peer);
        if ((writing || reading) && now - progressed < drive_patience) {
          // A large frame on the move, in or out: this thread sleeps on its sockets, woken
          // the moment either can go on, with no hop through the I/O thread.
          rest_io(now);
          wait_sockets(lock, writing ? own : nullptr, peer,
                       std::min({deadline, next_query, progressed + drive_patience}));
          continue;
        }
        if (writing) hand_over(*own);
        if (now < spin_until && peer != o_.rank) {
          // Polls the socket itself (above) rather than the I/O thread's news: the message is
          // read the moment it is there, with no wake-up of either thread (rest_io).
          rest_io(now);
          bool const io_reads = peer_at(peer).reading;  // then it needs a core: yield it
          lock.unlock();
          between_looks(io_reads);
          while (!lock.try_lock()) std::this_thread::yield();
          continue;
        }
        timed_out_quietly = !await(lock, spin_until, std::min(deadline, next_query), seen);
        continue;  // re-checks everything above
      }
      auto stall = stall_report(lock);
      if (pr.st == tcp_posted_recv::done) return;  // arrived while the peers answered
      if (unusable()) {
        // A failure came in while the peers answered: a peer's abort (it timed out first, and
        // has named the cause) or a disagreement its answer showed. The first failure wins, as
        // everywhere: this rank's own report would come second, and could blame ranks that
        // did not answer only because that failure had ended them.
        unpost(lock, pr);
        throw_if_unusable(lock, "recv from", peer);
      }
      auto what = timeout_text(
          prefix(), call_,
          "recv from " + (peer == o_.rank ? std::string("itself") : peer_at(peer).where) + " (" +
              std::to_string(in.size()) + " bytes, " + tag_text(tg) +
              (pr.st == tcp_posted_recv::claimed ? ", in the middle of the message" : "") + ")",
          format_duration(o_.timeout), stall, unread_report() + reader_report(peer));
      poison(errc::timeout, what, true);
      unpost(lock, pr);
      throw transport_error(errc::timeout, what);
    }
  }

  // Under mutex_, on the caller's thread: begins sending `out` to `o.peer` as `o.w`, which must
  // stay where it is until it is done. False if it is done already (the common case: the
  // kernel took all of it); true if some is left, which the caller goes on writing (`o.held`)
  // unless the I/O thread was writing to that peer already (finish_send waits for it).
  bool start_send(std::unique_lock<std::mutex>& lock, own_write& o, tag tg,
                  std::span<std::byte const> out) {
    int const peer = o.peer;
    auto& w = o.w;
    throw_if_unusable(lock, "send to", peer);
    if (peer == o_.rank) {
      auto m = pool_.take(out.size());
      m.call = call_;
      m.queued = std::chrono::steady_clock::now();
      if (!out.empty()) std::memcpy(m.data.get(), out.data(), out.size());
      inbox_[key(peer, tg)].push_back(std::move(m));
      return false;
    }
    if (auto what = ended_disagreement(peer); !what.empty()) {
      poison(errc::mismatch, what, true);
      throw transport_error(errc::mismatch, what);
    }
    if (peer_at(peer).finished)
      throw transport_error(errc::peer_closed, prefix() + "send to " + peer_at(peer).where + " (" +
                                                   describe(call_) +
                                                   "): that rank has already closed its transport");
    frame_header h;
    h.tag = static_cast<std::uint32_t>(tg);
    h.source = o_.rank;
    h.call = call_;
    h.length = out.size();
    h.encode(w.header.data());
    w.payload = out;
    auto& p = peer_at(peer);
    if (p.writing) {
      // The I/O thread is writing to this peer (our frame goes after its frames).
      p.writes.push_back(&w);
      return true;
    }
    // Nobody writes to this peer: write the frame from this thread, as far as the kernel takes
    // it without blocking. All of it (the common case): done, no other thread involved.
    p.writing = p.caller_writes = o.held = true;
    // The clock is read only for a frame the kernel did not take whole (not per small send).
    if (!write_more(lock, o) && o.held) o.progressed = std::chrono::steady_clock::now();
    if (w.ec) {
      throw_if_unusable(lock, "send to", peer);
      throw transport_error(errc::peer_closed,
                            prefix() + "send to " + p.where + " failed: " + w.ec.message());
    }
    return !w.done;
  }

  // Under mutex_ (released while it writes), on the caller's thread holding o's writer role:
  // as much of the frame as the kernel takes now. The role is given up when the frame is out,
  // or has failed (which poisons the transport; `o.w.ec` says why). True if some went out
  // (`o.progressed` says when, while some is left).
  bool write_more(std::unique_lock<std::mutex>& lock, own_write& o) {
    auto const before = o.w.sent;
    lock.unlock();
    auto ec = write_now(peer_at(o.peer), o.w);
    lock.lock();
    if (ec || o.w.sent == o.w.size()) {
      o.held = false;
      release_writer(o.peer);
      o.w.ec = ec;
      o.w.done = true;
      if (ec) write_failed(o.peer, ec);
    }
    if (o.w.sent == before) return false;
    if (o.held) o.progressed = std::chrono::steady_clock::now();
    return true;
  }

  // Under mutex_, holding o's writer role: the I/O thread writes the rest of the frame (it
  // takes the role over); the caller waits for `o.w.done`.
  void hand_over(own_write& o) {
    o.held = false;
    peer_at(o.peer).caller_writes = false;
    peer_at(o.peer).writes.push_front(&o.w);
    post_io([this, peer = o.peer] { start_write(peer); });
  }

  // Under mutex_: whether the caller may read peer r's socket now (nobody else reads it, and
  // it is being read at all).
  bool caller_may_read(int r) const {
    return r != o_.rank && !peer_at(r).reading && reads_on(peer_at(r));
  }

  // Under mutex_ (released while it sleeps), on the caller's thread: sleeps in poll() until the
  // socket of `o` (if not null: the caller holds its writer role) takes more, or peer
  // `reader`'s socket (-1: none) has something the caller may read, or until `until`. Anything
  // else the caller waits for (a failure, a frame read by the I/O thread) is seen when it looks
  // again, at `until` at the latest: its loops bound that by drive_patience.
  void wait_sockets(std::unique_lock<std::mutex>& lock, own_write const* o, int reader,
                    std::chrono::steady_clock::time_point until) {
    auto fd_of = [](tcp_peer& p) {
      std::lock_guard fd_lock(p.fd_mutex);
      return p.fd;
    };
    std::array<pollfd, 2> fds{};
    nfds_t n = 0;
    auto watch = [&](int fd, short events) {
      if (fd < 0) return;  // closed: the next read or write says so
      if (n == 1 && fds[0].fd == fd)
        fds[0].events = static_cast<short>(fds[0].events | events);
      else
        fds[n++] = {fd, events, 0};
    };
    if (o != nullptr) watch(fd_of(peer_at(o->peer)), POLLOUT);
    if (reader >= 0 && caller_may_read(reader)) watch(fd_of(peer_at(reader)), POLLIN);
    auto const left =
        std::chrono::ceil<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
    if (n == 0 || left.count() <= 0) return;
    lock.unlock();
    ::poll(fds.data(), n, static_cast<int>(left.count()));  // a wake-up only: the loops look
    lock.lock();
  }

  // Under mutex_, on the caller's thread: waits (within the timeout) until frame `o.w`, begun
  // by start_send, is out; throws if it cannot be.
  void finish_send(std::unique_lock<std::mutex>& lock, own_write& o) {
    int const peer = o.peer;
    auto& p = peer_at(peer);
    auto& w = o.w;
    auto const now = std::chrono::steady_clock::now();
    auto const deadline = now + o_.timeout, spin_until = now + o_.spin;
    while (o.held && !unusable()) {  // written on by this thread while the peer takes it
      auto const at = std::chrono::steady_clock::now();
      if (at >= deadline || at - o.progressed >= drive_patience) break;
      if (write_more(lock, o) || !o.held) continue;
      rest_io(at);  // this thread waits on its socket: the I/O thread need not watch them
      wait_sockets(lock, &o, -1, std::min(deadline, o.progressed + drive_patience));
    }
    if (o.held) hand_over(o);
    while (!w.done && !unusable() && std::chrono::steady_clock::now() < deadline)
      await(lock, spin_until, deadline);
    bool const in_time = w.done || unusable();
    if (!w.done) {
      if (!in_time) {
        auto stall = stall_report(lock);
        auto what = timeout_text(prefix(), call_,
                                 "send to " + p.where + " (" + std::to_string(w.payload.size()) +
                                     " bytes: the peer does not read)",
                                 format_duration(o_.timeout), stall, unread_report());
        poison(errc::timeout, what, true);
      }
      // The frame may be half-written from our caller's buffer: close the socket and wait for
      // the write to be cancelled before the buffer can go away.
      post_io([this, peer] { close_peer(peer); });
      sleep(lock, [&] { return w.done; });
    }
    if (w.ec) {
      throw_if_unusable(lock, "send to", peer);
      throw transport_error(errc::peer_closed,
                            prefix() + "send to " + p.where + " failed: " + w.ec.message());
    }
  }

  // Under mutex_, on the caller's thread, after sendrecv's receive failed: frame `o.w` (begun by
  // start_send) gets the peer's short answer window to go out; if it does not, its connection
  // is closed and the write cancelled, before `w` and the caller's buffer go away.
  void abandon_send(std::unique_lock<std::mutex>& lock, own_write& o) {
    if (o.held) hand_over(o);
    if (sleep_awake(lock, answer_window(), [&] { return o.w.done; })) return;
    post_io([this, peer = o.peer] { close_peer(peer); });
    sleep(lock, [&] { return o.w.done; });
  }

  // How long a rank gives its peers' I/O threads for what only they can do (answer a status
  // query, read an abort frame or what is left of a frame): a second, or the timeout if shorter.
  std::chrono::milliseconds answer_window() const {
    return std::min<std::chrono::milliseconds>(o_.timeout, std::chrono::seconds(1));
  }

  // Takes the first message of `queue` (peer, tg's) into `in` and gives its buffer back to the
  // pool. One of another size or call stays queued, poisons the transport, and throws mismatch.
  void take_queued(std::unique_lock<std::mutex>& lock, std::deque<tcp_message>& queue, int peer,
                   tag tg, std::span<std::byte> in) {
    tcp_message m = std::move(queue.front());
    if (m.size != in.size() || !(m.call == call_)) {
      auto what = prefix() + "expected " + std::to_string(in.size()) + " bytes for " +
                  describe(call_) + " from " + peer_at(peer).where + " (" + tag_text(tg) +
                  "), but rank " + std::to_string(peer) + " sent " + std::to_string(m.size) +
                  " bytes for " + describe(m.call);
      queue.front() = std::move(m);
      poison(errc::mismatch, what, true);
      throw transport_error(errc::mismatch, what);
    }
    queue.pop_front();
    lock.unlock();
    if (!in.empty()) std::memcpy(in.data(), m.data.get(), in.size());
    lock.lock();
    pool_.give(std::move(m));
  }

  static std::uint64_t key(int peer, tag tg) {
    return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(peer)) << 32) |
           static_cast<std::uint32_t>(tg);
  }
  std::string prefix() const { return rank_prefix(o_.rank); }

  void check_peer(int peer, char const* what) const {
    if (peer < 0 || peer >= o_.size)
      throw usage_error(prefix() + what + " rank " + std::to_string(peer) +
                        ", but the world size is " + std::to_string(o_.size));
  }

  bool unusable() const { return poisoned_ || abort_->aborted; }

  // Under mutex_: something the caller may wait for has happened. Counted in events_, so that
  // a caller that polls (await) sees it without sleeping on changed_.
  void notify() {
    events_.fetch_add(1, std::memory_order_release);
    changed_.notify_all();
    if (arrival_hook_) arrival_hook_();
  }

  // On the caller's thread, between two looks of its polling. Where ranks share cores: yields
  // the core, to a rank that shares it (maybe the sender it waits for) or to this rank's own
  // I/O thread. Where each rank of the job has a core of its own: a pause, no system call, as
  // Open MPI polls there; nobody of the job needs the core (the I/O thread rests while the
  // caller polls, rest_io), and a yield hands whatever else is runnable on the core (a data
  // loader, a compiler) the rest of its time slice, milliseconds, while the message that
  // arrives meanwhile wakes no one. Measured on 2 cores, P = 2 under gcl-launch, all_reduce
  // beside two busy loops (medians of 20,000 calls back to back, means in brackets): 4 B 8.5
  // us (21) with 2 ms of pauses, against 39.5 (121) with the yields of before and their rule
  // (50 us of polling, none for 100 ms after a yield that came back late) and 3,700 (1,400)
  // with 2 ms of yields and no rule; Open MPI TCP 5.9 (21). Alone on the cores, level
  // (doc/tcp.md, "Polling"). `yield`: the I/O thread has work the caller waits
  // for (it holds the awaited socket's reader role), and may need this very core.
  void between_looks(bool yield = false) {
    if (own_core_ && !yield) {
      for (int i = 0; i < 16; ++i) detail::cpu_relax();
      return;
    }
    std::this_thread::yield();
  }

  // Under mutex_, on the caller's thread: returns once events_ differs from `seen` (the count
  // the caller read before its last look at what it waits for: at once if it already
  // differs), or at `until`. Waking a sleeping thread costs tens of microseconds (a futex call
  // and a reschedule), more than a small message's whole trip, so until `spin_until` it polls
  // events_ without the lock instead, yielding the core on every round (a rank that shares
  // the core, or this rank's own I/O thread, gets to run), as inproc_transport does. Every
  // event is counted under the lock, so one that happens before the sleep is never missed.
  // True if an event ended it (or a spurious wake-up of the sleep), false if `until` did.
  bool await(std::unique_lock<std::mutex>& lock, std::chrono::steady_clock::time_point spin_until,
             std::chrono::steady_clock::time_point until, std::uint32_t seen) {
    if (events_.load(std::memory_order_relaxed) != seen) return true;
    auto const poll_until = std::min(spin_until, until);
    if (std::chrono::steady_clock::now() < poll_until) {
      lock.unlock();
      bool news = false;
      while (!(news = events_.load(std::memory_order_acquire) != seen) &&
             std::chrono::steady_clock::now() < poll_until) {
        between_looks();
      }
      // Not lock(): the notifier may still hold the mutex, and a contended std::mutex sleeps in
      // the kernel at once, which costs the very wake-up that polling is here to avoid.
      while (!lock.try_lock()) std::this_thread::yield();
      if (news || events_.load(std::memory_order_relaxed) != seen) return true;
    }
    sleep_until(lock, until);
    return events_.load(std::memory_order_relaxed) != seen ||
           std::chrono::steady_clock::now() < until;
  }
  void await(std::unique_lock<std::mutex>& lock, std::chrono::steady_clock::time_point spin_until,
             std::chrono::steady_clock::time_point until) {
    await(lock, spin_until, until, events_.load(std::memory_order_relaxed));
  }

  // Under mutex_, on the caller's thread: changed_.wait_until. A sleeping caller posts no
  // receive, and what it waits for may depend on what a peer sends after a parked frame (that
  // peer's send of it may not even complete before this rank reads it), so every parked frame
  // is drained first (read into a pooled buffer), and none is parked while it sleeps.
  void sleep_until(std::unique_lock<std::mutex>& lock,
                   std::chrono::steady_clock::time_point until) {
    caller_sleeping_ = true;
    end_rest();  // the I/O thread reads for a caller that sleeps
    if (parked_count_ > 0) post_io([this] { drain_parked(); });
    changed_.wait_until(lock, until);
    caller_sleeping_ = false;
  }
  template <class Done>
  bool sleep_until(std::unique_lock<std::mutex>& lock, std::chrono::steady_clock::time_point until,
                   Done done) {
    while (!done()) {
      if (std::chrono::steady_clock::now() >= until) return done();
      sleep_until(lock, until);
    }
    return true;
  }
  // Under mutex_, on the caller's thread: sleep_until(done) for `window` of time in which this
  // process, and its I/O thread, were seen to run (awake_time.hpp: a wait for what peers send,
  // which the I/O thread reads, or for what the I/O thread writes, is no wait while either is
  // frozen), looking every slice; and for ten windows of wall time at most, for a process that
  // is hardly ever let run. The I/O thread shows it runs by counting a beat posted each slice
  // (none when `done` holds at once: the usual shutdown posts nothing).
  template <class Done>
  bool sleep_awake(std::unique_lock<std::mutex>& lock, std::chrono::steady_clock::duration window,
                   Done done) {
    auto const slice = std::chrono::milliseconds(50);
    auto const start = std::chrono::steady_clock::now(), give_up = start + 10 * window;
    awake_time awake(start, 2 * slice);  // woken a slice late or more: it was not running
    for (;;) {
      if (done()) return true;
      auto const now = std::chrono::steady_clock::now();
      if (awake.counted() >= window || now >= give_up) return false;
      // Handlers run in order: the count reaches `asked` once this beat has run.
      auto const asked = io_beats_asked_.fetch_add(1, std::memory_order_relaxed) + 1;
      post_io([this] { io_beats_.fetch_add(1, std::memory_order_release); });
      sleep_until(lock, std::min({now + slice, now + (window - awake.counted()), give_up}), done);
      awake.look(std::chrono::steady_clock::now(),
                 io_beats_.load(std::memory_order_acquire) >= asked);
    }
  }
  template <class Done>
  void sleep(std::unique_lock<std::mutex>& lock, Done done) {
    while (!done()) sleep_until(lock, std::chrono::steady_clock::now() + std::chrono::hours(1));
  }

  // Under mutex_: the disagreement that rank r's bye shows (it ended its job before a
  // collective this rank has begun, or after another call of the same number), or "".
  std::string ended_disagreement(int r) const {
    if (r == o_.rank || !peer_at(r).finished) return {};
    auto what = progress_.ended_disagreement(o_.rank, r, peer_at(r).last_call);
    return what.empty() ? what : prefix() + what;
  }

  void throw_if_unusable(std::unique_lock<std::mutex>&, char const* what, int peer) {
    if (poisoned_) {
      unreported_ = false;
      throw transport_error(poison_code_, poison_what_);
    }
    if (abort_->aborted) {
      if (abort_->code == errc::mismatch)  // concerns every rank: say it as it is
        throw transport_error(errc::mismatch, prefix() + abort_->why());
      throw transport_error(errc::aborted, prefix() + what + " rank " + std::to_string(peer) +
                                               " in " + describe(call_) +
                                               " aborted: " + abort_->why());
    }
  }

  // Under mutex_, on the I/O thread: ranks disagree about a call, found while no wait of this
  // rank's caller may be there to report it. The caller's next call throws it (every call
  // checks for poison); if there is none, shut_down() reports it.
  void found_mismatch(std::string const& what) {
    if (poisoned_) return;
    poison(errc::mismatch, what, true);
    unreported_ = true;
  }

  // Under mutex_: asks every connected peer's I/O thread where its rank is. The answers land in
  // peer_at(r).status (record_status), and one that shows a disagreement poisons at once. Each
  // query has a new number, which its answer echoes: an answer to an earlier query that comes
  // in after this one (a peer slow to answer, then stopped) does not pass for this one's.
  void request_status() {
    for (int r = 0; r < o_.size; ++r) {
      peer_at(r).status = {};
      peer_at(r).status.rank = r;
    }
    if (++status_query_ == 0) status_query_ = 1;  // 0: no query, which no answer may match
    post_io([this, query = status_query_] {
      for (int r = 0; r < o_.size; ++r) {
        auto& p = peer_at(r);
        if (!p.socket || !p.socket->is_open() || said_bye(r)) continue;
        auto* w = new tcp_write;
        frame_header h;
        h.type = frame_type::status_query;
        h.query = query;
        h.source = o_.rank;
        h.encode(w->header.data());
        w->owned = true;
        enqueue(r, w);
      }
    });
  }

  // On the I/O thread, without mutex_: whether peer r has said bye (`finished` is set under
  // mutex_ by whichever thread reads that frame, the caller's as well).
  bool said_bye(int r) {
    std::lock_guard lock(mutex_);
    return peer_at(r).finished;
  }

  bool all_answered() const {
    for (int r = 0; r < o_.size; ++r)
      if (r != o_.rank && !peer_at(r).status.answered && !peer_at(r).ended && !peer_at(r).finished)
        return false;
    return true;
  }

  // Under mutex_ (released while it waits up to a second for the peers' answers): "rank 2 has
  // not started all_reduce #10 ...; ranks 0, 1 and 3 are waiting in it" -- for a timeout. A
  // failure that comes in meanwhile ends the wait: the caller reports that one instead.
  std::string stall_report(std::unique_lock<std::mutex>& lock) {
    request_status();
    sleep_awake(lock, answer_window(), [&] { return all_answered() || unusable(); });
    std::vector<rank_status> all;
    for (int r = 0; r < o_.size; ++r) {
      if (r != o_.rank) {
        all.push_back(peer_at(r).status);
        continue;
      }
      rank_status self{r, true, progress_.started(), progress_.in_call(), waiting_for_, {}};
      if (auto const* c = progress_.recall(self.started)) self.call = *c;
      all.push_back(self);
    }
    return describe_stall(call_, all);
  }

  // Under mutex_: ". Received here but not read: 8 bytes from rank 3 (..., here for 2.9 s)",
  // or nothing. How long each has waited tells a message that came too late (a slow or stuck
  // sender) from one that was here and not taken (a bug of this transport's).
  std::string unread_report() const {
    std::string out;
    int unread = 0;
    auto const now = std::chrono::steady_clock::now();
    for (auto const& [k, queue] : inbox_)
      for (auto const& m : queue)
        if (unread++ < 4)
          out += std::string(unread == 1 ? ". Received here but not read: " : ", ") +
                 std::to_string(m.size) + " bytes from rank " + std::to_string(k >> 32) + " (" +
                 tag_text(tag{static_cast<std::uint32_t>(k)}) + ", " + describe(m.call) +
                 ", here for " + time_since(m.queued, now) + ")";
    for (int r = 0; r < o_.size; ++r)
      if (peer_at(r).stage == tcp_peer::rx_stage::parked && unread++ < 4)
        out += std::string(unread == 1 ? ". Received here but not read: " : ", ") +
               std::to_string(peer_at(r).rx.length) + " bytes from rank " + std::to_string(r) +
               " (" + tag_text(tag{peer_at(r).rx.tag}) + ", " + describe(peer_at(r).rx.call) +
               ", still in the socket)";
    if (unread > 4) out += ", ...";
    return out;
  }

  // Under mutex_, on the caller's thread once its wait for peer r has run out: whether this
  // rank's I/O thread is reading r's socket (and since when), or a frame from r is half-read,
  // or nothing. The caller reads that socket itself while nobody else does; a frame that the
  // I/O thread holds half-read, only the I/O thread reads on.
  std::string reader_report(int r) const {
    if (r == o_.rank) return {};
    auto const& p = peer_at(r);
    bool const half_read = reads_on(p) && p.stage != tcp_peer::rx_stage::header;
    if (!p.reading && !half_read) return {};
    std::string out = ". From rank " + std::to_string(r) + ": ";
    out += half_read ? "a frame half-read" : "a frame's header being read";
    if (p.reading)
      out += ", by this rank's I/O thread for " +
             time_since(p.io_reading_since, std::chrono::steady_clock::now());
    return out;
  }

  // "2.9 s": how long from `then` to `now`, for reports.
  static std::string time_since(std::chrono::steady_clock::time_point then,
                                std::chrono::steady_clock::time_point now) {
    return format_duration(std::chrono::duration_cast<std::chrono::milliseconds>(now - then));
  }

  // On the I/O thread: tells rank r where this rank is, in answer to its query number `query`.
  void answer_status(int r, std::uint8_t query) {
    frame_header h;
    h.type = frame_type::status_reply;
    h.query = query;
    h.source = o_.rank;
    {
      std::lock_guard lock(mutex_);
      if (auto const* c = progress_.recall(progress_.started())) h.call = *c;
      h.tag = encode_status_tag({progress_.in_call(), waiting_for_});
    }
    auto* w = new tcp_write;
    h.encode(w->header.data());
    w->owned = true;
    enqueue(r, w);
  }

  // On the I/O thread: rank r's answer. It is taken for the answer to the last query only if it
  // echoes that query's number; an older one is still checked for a disagreement: a peer that
  // called another collective under a number this rank remembers disagrees with it, whether or
  // not either is still waiting, and whenever it said so.
  void record_status(int r, frame_header const& h) {
    std::lock_guard lock(mutex_);
    auto const fields = decode_status(h, o_.size).value;  // on_header refused a bad one
    if (h.query == status_query_) {
      peer_at(r).status = {r, true, h.call.sequence, fields.in_call, fields.waiting_for, h.call};
      notify();
    }
    if (h.call.kind == call_kind::point_to_point) return;
    if (auto const* mine = progress_.recall(h.call.sequence); mine && !(*mine == h.call))
      found_mismatch(prefix() + two_calls(r, h.call, o_.rank, *mine));
  }

  // Under mutex_: the receive of `bytes` from `peer` with `tg` finds that peer's transport
  // ended without sending it: a disagreement about the calls if the peer's last frames show
  // one, else the peer closed too early.
  [[noreturn]] void throw_never_sent(int peer, tag tg, std::size_t bytes) {
    if (auto what = ended_disagreement(peer); !what.empty()) {
      poison(errc::mismatch, what, true);
      throw transport_error(errc::mismatch, what);
    }
    throw transport_error(errc::peer_closed,
                          prefix() + "recv from " + peer_at(peer).where + " (" +
                              std::to_string(bytes) + " bytes, " + tag_text(tg) + ", " +
                              describe(call_) +
                              "): that rank closed its transport without sending it");
  }

  // Under mutex_: `pr` (idle, for a peer, not empty) becomes the receive that the next frame
  // from its peer with its tag is read into.
  void post_receive(tcp_posted_recv& pr) {
    pr.st = tcp_posted_recv::posted;
    posted_ = &pr;
    auto& from = peer_at(pr.source);
    if (from.stage == tcp_peer::rx_stage::parked && from.rx.tag == pr.tg) {
      // Its frame waits in the socket: read it now, into `in` (or find it wrong).
      --parked_count_;
      from.stage = tcp_peer::rx_stage::placing;
      if (from.reading) from.recheck = true;
    }
  }

  // Under mutex_, for receive() and poll(), with `pr` not claimed: throws what its receive
  // meets (a failure, its peer ended without sending it); if its message has arrived, unposts
  // `pr` and returns the queue that holds it; else posts `pr` (if it is idle, for a peer, and
  // not empty) and returns null.
  std::deque<tcp_message>* queued_or_post(std::unique_lock<std::mutex>& lock, tcp_posted_recv& pr) {
    int const peer = pr.source;
    if (unusable()) {
      unpost(lock, pr);
      throw_if_unusable(lock, "recv from", peer);
    }
    auto it = inbox_.find(key(peer, tag{pr.tg}));
    if (it != inbox_.end() && !it->second.empty()) {
      unpost(lock, pr);
      return &it->second;
    }
    if (peer != o_.rank && peer_at(peer).finished) {
      unpost(lock, pr);
      throw_never_sent(peer, tag{pr.tg}, pr.in.size());
    }
    if (peer != o_.rank && pr.st == tcp_posted_recv::idle && !pr.in.empty()) post_receive(pr);
    return nullptr;
  }

  // polled_recv::poll: one look, as receive() takes in its loop, without waiting.
  bool poll(tcp_posted_recv& pr) {
    int const peer = pr.source;
    tag const tg{pr.tg};
    std::unique_lock lock(mutex_);
    if (pr.st == tcp_posted_recv::done) return true;
    if (pr.st != tcp_posted_recv::claimed) {
      if (auto* queue = queued_or_post(lock, pr)) {
        take_queued(lock, *queue, peer, tg, pr.in);
        pr.st = tcp_posted_recv::done;
        return true;
      }
    }
    rest_io(std::chrono::steady_clock::now(), true);
    if (peer != o_.rank && take_reader(peer)) {
      lock.unlock();
      pump(peer);
      finish_reading(peer);
      lock.lock();
    }
    return pr.st == tcp_posted_recv::done;
  }

  // Under mutex_: withdraws a posted receive. If part of a frame has been read into it, the
  // connection is closed (the transport is failing anyway: the rest of that frame has nowhere
  // to go); if the I/O thread is reading into it now, we wait for the read to stop, because
  // the buffer belongs to our caller.
  void unpost(std::unique_lock<std::mutex>& lock, tcp_posted_recv& pr) {
    if (pr.st == tcp_posted_recv::claimed) {
      auto& p = peer_at(pr.source);
      post_io([this, r = pr.source] { close_peer(r); });
      if (!p.reading) {
        p.stage = tcp_peer::rx_stage::stopped;
        p.rx_direct = false;
        p.ended = true;
        pr.st = tcp_posted_recv::failed;
      }
      sleep(lock, [&] { return pr.st != tcp_posted_recv::claimed; });
    }
    if (posted_ == &pr) posted_ = nullptr;
    if (pr.st == tcp_posted_recv::posted) pr.st = tcp_posted_recv::idle;
  }

  // Under mutex_. The first failure wins; later ones are usually its consequences. `tell`:
  // also send the reason to every peer, so that ranks waiting on us fail now, not at timeout.
  void poison(errc code, std::string const& what, bool tell) {
    if (poisoned_) return;
    // After the group's abort (spawn: a rank threw), peers close their connections as they
    // fail: a lost peer is then a consequence, and the abort, which every call reports, is the
    // cause.
    if (code == errc::peer_closed && abort_->aborted.load(std::memory_order_acquire)) return;
    poisoned_ = true;
    poison_code_ = code;
    poison_what_ = what;
    notify();
    if (!tell || abort_->aborted) return;
    ++owned_writes_;  // until the frames are queued, so shut_down() waits for them
    post_io([this, code, what] {
      for (int r = 0; r < o_.size; ++r) {
        if (!peer_at(r).socket || said_bye(r)) continue;
        auto* w = new tcp_write;
        frame_header h;
        h.type = frame_type::abort;
        h.tag = static_cast<std::uint32_t>(code);
        h.source = o_.rank;
        h.length = what.size();
        h.encode(w->header.data());
        w->owned = true;
        w->owned_payload = what;
        w->payload = std::as_bytes(std::span(w->owned_payload));
        enqueue(r, w);
      }
      std::lock_guard lock(mutex_);
      --owned_writes_;
      notify();
    });
  }

  // ---- I/O thread ----

  // Every handler reaches the I/O thread through here: a rest (rest_io) ends first, so that the
  // handler runs now. Posted under rest_mutex_, as a rest is: a handler queued behind a rest
  // always finds that rest told to end.
  template <class F>
  void post_io(F&& f) {
    std::lock_guard r(rest_mutex_);
    tell_rest_to_end();
    asio::post(io_, std::forward<F>(f));
  }

  // Under mutex_, on the caller's thread, while it polls the socket it waits on: keeps the I/O
  // thread out of epoll_wait until the caller stops polling. Asio's reactor watches every
  // socket (edge-triggered) whether or not an operation waits on it, so a thread blocked in
  // epoll_wait is woken by every frame that arrives, including the ones the caller reads
  // itself: on the sender's core a wake-up (an inter-processor interrupt), on this one a switch
  // to the I/O thread and back, per message (`perf record` of a 4-byte all_reduce at P = 2:
  // the sender's sock_def_readable -> try_to_wake_up, and epoll_wait, among the top entries).
  // Resting, the I/O thread waits on a condition variable instead, which no arrival touches;
  // posted once, it lasts for as long as the caller keeps polling (call after call), and ends
  // at rest_window after the last poll, when the caller sleeps (sleep_until), when anything is
  // posted to the I/O thread (post_io), or while the I/O thread has a write to finish.
  //
  // Under hybrid_transport (an arrival hook) only while its caller polls a polled_recv
  // (`reads_itself`): otherwise it waits elsewhere, for frames that only the I/O thread reads,
  // and a caller that sleeps says so first (caller_sleeps).
  void rest_io(std::chrono::steady_clock::time_point now, bool reads_itself = false) {
    if (arrival_hook_ && !reads_itself) return;
    caller_polled_at_.store(now.time_since_epoch().count(), std::memory_order_relaxed);
    if (resting_.load(std::memory_order_relaxed)) return;
    std::lock_guard r(rest_mutex_);
    resting_.store(true, std::memory_order_relaxed);
    rest_end_ = false;
    asio::post(io_, [this] { rest(); });
  }

  // Ends a rest now (or makes a rest that is posted but not begun end at once).
  void end_rest() {
    if (!resting_.load(std::memory_order_relaxed)) return;
    std::lock_guard r(rest_mutex_);
    tell_rest_to_end();
  }
  void tell_rest_to_end() {  // under rest_mutex_
    if (!resting_.load(std::memory_order_relaxed)) return;
    rest_end_ = true;
    rest_cv_.notify_one();
  }

  // On the I/O thread: the rest itself. Waits in slices of rest_window while the caller polls
  // and the I/O thread has nothing of its own to do.
  void rest() {
    auto finish = [this] {
      std::lock_guard r(rest_mutex_);
      rest_end_ = false;
      resting_.store(false, std::memory_order_relaxed);
    };
    for (;;) {
      {
        std::lock_guard lock(mutex_);
        auto const polled = std::chrono::steady_clock::time_point(
            std::chrono::steady_clock::duration(caller_polled_at_.load(std::memory_order_relaxed)));
        bool stop = caller_sleeping_ || closing_ || leaving_ || poisoned_ || abort_->aborted ||
                    std::chrono::steady_clock::now() - polled > rest_window;
        for (auto const& p : peers_)  // a write it may have to finish (not one of the caller's)
          stop = stop || (p.writing && !p.caller_writes);
        if (stop) return finish();
      }
      std::unique_lock r(rest_mutex_);
      if (!rest_end_) rest_cv_.wait_for(r, rest_window);
      if (rest_end_) {
        r.unlock();
        return finish();
      }
    }
  }

  void run_io() {
    for (;;) {
      try {
        io_.run();
        return;
      } catch (std::exception const& e) {
        std::lock_guard lock(mutex_);
        poison(errc::protocol, prefix() + "I/O thread failed: " + e.what(), true);
      }
    }
  }

  // Every owned frame is counted from here until complete(), whichever way it completes, so
  // that shut_down() waits for exactly the frames still on their way out.
  void enqueue(int r, tcp_write* w) {
    auto& p = peer_at(r);
    {
      std::lock_guard lock(mutex_);
      if (w->owned) ++owned_writes_;
      p.writes.push_back(w);
      if (p.writing) return;  // the writer (this thread's chain, or the caller) takes it next
      p.writing = true;
    }
    start_write(r);
  }

  // On the I/O thread, holding peer r's writer role: writes the front frame of its queue from
  // where it stands, then the next, until the queue is empty (then gives the role up) or the
  // socket's buffer is full (then goes on once it has room). Written as the caller writes
  // (write_now: sendmsg without blocking), and not with asio::async_write, whose reactor stops
  // trying a socket at once after a write that was short or failed and waits for the next
  // edge of readiness instead: after a bye has shut a connection's sending side, the write of
  // a status reply fails, and the next one waited for an edge that a closed connection never
  // gives, so shut_down() waited out the whole timeout for it (found under ThreadSanitizer, P = 4,
  // 1 MiB: 9 jobs in 80 took 43-48 s, not 1-5). async_wait re-arms the socket's watch each time
  // (epoll_ctl), which reports a socket that has room, or has failed, at once.
  void start_write(int r) {
    auto& p = peer_at(r);
    for (;;) {
      tcp_write* w = next_write(p);
      if (w == nullptr) return;
      auto ec = write_now(p, *w);
      if (!ec && w->sent < w->size()) {
        std::lock_guard fd_lock(p.fd_mutex);
        if (p.fd >= 0) {
          p.socket->async_wait(tcp::socket::wait_write,
                               [this, r](boost::system::error_code) { start_write(r); });
          return;
        }
        ec = asio::error::not_connected;  // closed meanwhile (close_peer)
      }
      {
        std::lock_guard lock(mutex_);
        p.writes.pop_front();
      }
      if (!ec && w->shutdown_after) {
        std::lock_guard fd_lock(p.fd_mutex);
        if (p.fd >= 0) p.socket->shutdown(tcp::socket::shutdown_send, ec);
      }
      if (ec) {
        std::lock_guard lock(mutex_);
        write_failed(r, ec);
      }
      complete(w, ec);
    }
  }

  // On the I/O thread, holding peer p's writer role: the front frame of its queue, or null
  // with the role given up when the queue is empty.
  tcp_write* next_write(tcp_peer& p) {
    std::lock_guard lock(mutex_);
    if (p.writes.empty()) {
      p.writing = false;
      return nullptr;
    }
    return p.writes.front();
  }

  // Under mutex_, on the caller's thread, which holds peer r's writer role and is done with its
  // own frame: frames queued meanwhile go to the I/O thread with the role, else it is free.
  void release_writer(int r) {
    peer_at(r).caller_writes = false;
    if (peer_at(r).writes.empty())
      peer_at(r).writing = false;
    else
      post_io([this, r] { start_write(r); });
  }

  // Under mutex_: a write to peer r failed (the caller's or the I/O thread's).
  void write_failed(int r, boost::system::error_code ec) {
    if (closing_ || leaving_) return;
    poison(errc::peer_closed,
           prefix() + "send to " + peer_at(r).where + " failed: " + ec.message() +
               " (did that rank exit or get killed?)",
           true);
  }

  // Holding peer p's writer role (the caller or the I/O thread): as much of `w` as the kernel
  // takes now, without blocking (MSG_DONTWAIT) and without SIGPIPE from a dead peer
  // (MSG_NOSIGNAL).
  // Returns the socket's error, if any; `w.sent` says how far it got.
  static boost::system::error_code write_now(tcp_peer& p, tcp_write& w) {
    std::lock_guard fd_lock(p.fd_mutex);
    if (p.fd < 0) return asio::error::not_connected;
    for (;;) {
      auto rest = w.rest();
      std::array<iovec, 2> iov{};
      msghdr msg{};
      msg.msg_iov = iov.data();
      for (auto const& [data, len] : rest)
        if (len != 0)
          iov[msg.msg_iovlen++] = {const_cast<std::byte*>(data),
                                   len};  // NOLINT: iovec is not const
      ssize_t n = ::sendmsg(p.fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n >= 0) {
        // Less than all: the socket's buffer is full (trying again now would say EAGAIN).
        w.sent += static_cast<std::size_t>(n);
        return {};
      }
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return {};
      return {errno, asio::error::get_system_category()};
    }
  }

  void complete(tcp_write* w, boost::system::error_code ec) {
    std::lock_guard lock(mutex_);
    if (w->owned) {
      delete w;
      --owned_writes_;
      notify();
      return;
    }
    // After this, `w` (on the sender's stack) may be gone.
    w->ec = ec;
    w->done = true;
    notify();
  }

  // On the I/O thread. Not during a write of the caller's (fd_mutex), so that the caller never
  // writes on a descriptor number that has been closed and reused.
  void close_peer(int r) {
    auto& p = peer_at(r);
    std::lock_guard fd_lock(p.fd_mutex);
    p.fd = -1;
    boost::system::error_code ec;
    if (p.socket) p.socket->close(ec);
  }

  // ---- Reading, by whoever holds a peer's reader role (tcp_peer::reading) ----
  //
  // Each socket is read without blocking (recv with MSG_DONTWAIT) by the thread holding its
  // reader role: the caller, for the peer its recv() waits on, or the I/O thread, when Asio says
  // the socket is readable. The holder reads until the socket is empty, then lets go, leaving an
  // async_wait armed on the I/O thread whenever more may come. The stage of the frame being
  // read (tcp_peer::stage) changes only under mutex_; the other rx fields belong to the holder.

  static bool reads_on(tcp_peer const& p) {
    return p.stage == tcp_peer::rx_stage::header || p.stage == tcp_peer::rx_stage::placing ||
           p.stage == tcp_peer::rx_stage::payload || p.stage == tcp_peer::rx_stage::dropping;
  }

  // Under mutex_, on the I/O thread, which has found nobody holding p's reader role: takes it,
  // noting since when (reader_report).
  static void io_takes_reader(tcp_peer& p) {
    p.reading = true;
    p.io_reading_since = std::chrono::steady_clock::now();
  }

  // Under mutex_, on the caller's thread: takes peer r's reader role if nobody holds it and the
  // socket is being read at all (not parked, not stopped).
  bool take_reader(int r) {
    auto& p = peer_at(r);
    if (p.reading || !reads_on(p)) return false;
    p.reading = true;
    return true;
  }

  // Holding peer r's reader role, without mutex_: reads what its socket holds, frame by frame,
  // until the socket is empty or the connection is parked, stopped or lost. Returns how many
  // bytes it read.
  std::size_t pump(int r) {
    auto& p = peer_at(r);
    std::size_t got = 0;
    // Up to `len` bytes into `into`: how many arrived, 0 when this pump is over (the socket
    // holds nothing now, or the connection failed and read_failed has run).
    auto read = [&](std::byte* into, std::size_t len) {
      boost::system::error_code ec;
      auto n = read_some(p, into, len, ec);
      got += n;
      if (ec) read_failed(r, ec);
      return n;
    };
    for (;;) {
      tcp_peer::rx_stage stage;
      {
        std::lock_guard lock(mutex_);
        stage = p.stage;
      }
      switch (stage) {
        case tcp_peer::rx_stage::header: {
          auto n = read(p.rx_header.data() + p.rx_header_got, p.rx_header.size() - p.rx_header_got);
          if (n == 0) return got;
          p.rx_header_got += n;
          if (p.rx_header_got == p.rx_header.size()) {
            p.rx_header_got = 0;
            on_header(r);
          }
          break;
        }
        case tcp_peer::rx_stage::placing:
          place_payload(r, false);
          break;
        case tcp_peer::rx_stage::payload: {
          if (!p.rx_direct && p.rx_received == p.rx_message.capacity && !grow_rx_message(r))
            return got;
          std::byte* into = p.rx_direct ? p.rx_into : p.rx_message.data.get();
          auto const end = p.rx_direct ? static_cast<std::size_t>(p.rx.length)
                                       : std::min(p.rx_message.size, p.rx_message.capacity);
          auto n = read(into + p.rx_received, end - p.rx_received);
          if (n == 0) return got;
          p.rx_received += n;
          if (p.rx_received == p.rx.length) on_payload(r);
          break;
        }
        case tcp_peer::rx_stage::dropping: {
          std::array<std::byte, 16 * 1024> sink;
          auto const left = static_cast<std::size_t>(p.rx.length) - p.rx_received;
          auto n = read(sink.data(), std::min(sink.size(), left));
          if (n == 0) return got;
          p.rx_received += n;
          if (p.rx_received == p.rx.length) {
            std::lock_guard lock(mutex_);
            if (p.stage == tcp_peer::rx_stage::dropping) p.stage = tcp_peer::rx_stage::header;
          }
          break;
        }
        case tcp_peer::rx_stage::parked:
        case tcp_peer::rx_stage::stopped:
          return got;
      }
    }
  }

  // As much of `len` bytes as the socket holds now, without blocking; 0 when it holds nothing
  // (or with `ec` set: the connection failed or the peer closed it, eof).
  static std::size_t read_some(tcp_peer& p, std::byte* into, std::size_t len,
                               boost::system::error_code& ec) {
    std::lock_guard fd_lock(p.fd_mutex);  // close_peer waits: the number is not reused under us
    if (p.fd < 0) {
      ec = asio::error::not_connected;
      return 0;
    }
    for (;;) {
      ssize_t n = ::recv(p.fd, into, len, MSG_DONTWAIT);
      if (n > 0) return static_cast<std::size_t>(n);
      if (n == 0) {
        ec = asio::error::eof;
        return 0;
      }
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return 0;
      ec = {errno, asio::error::get_system_category()};
      return 0;
    }
  }

  // Holding peer r's reader role, without mutex_, after pump(): lets go of the role, leaving
  // the socket watched whenever more may come. If the I/O thread was told the socket is
  // readable while this thread held the role, this one reads once more first (recheck): what
  // woke the I/O thread may have come after its last look.
  void finish_reading(int r) {
    auto& p = peer_at(r);
    for (;;) {
      {
        std::lock_guard lock(mutex_);
        bool const more = reads_on(p);
        if (!more || !p.recheck) {
          if (more && !p.wait_armed) arm_wait(r);
          p.reading = false;
          return;
        }
        p.recheck = false;
      }
      pump(r);
    }
  }

  // Under mutex_, holding peer r's reader role after the socket said it holds nothing more:
  // on_readable runs on the I/O thread once it has something to read (or is closed). Armed
  // only then, never while unread bytes wait: Asio's reactor re-checks readiness when a wait
  // begins (epoll_ctl), so a wait armed on a readable socket fires at once, and would fire
  // again and again while the reader is still at work. Started from whichever thread holds the
  // role (Asio's reactor takes its own lock), under fd_mutex so that the socket is not closed
  // meanwhile.
  void arm_wait(int r) {
    auto& p = peer_at(r);
    std::lock_guard fd_lock(p.fd_mutex);
    if (p.fd < 0) return;  // closed: its reader has stopped or is about to
    p.wait_armed = true;
    p.socket->async_wait(tcp::socket::wait_read,
                         [this, r](boost::system::error_code ec) { on_readable(r, ec); });
  }

  // On the I/O thread, when the transport starts: reads what each socket already holds (which
  // arms its wait).
  void start_reading(int r) {
    auto& p = peer_at(r);
    {
      std::lock_guard lock(mutex_);
      if (p.reading) {
        p.recheck = true;
        return;
      }
      if (!reads_on(p)) return;
      io_takes_reader(p);
    }
    pump(r);
    finish_reading(r);
  }

  // On the I/O thread: peer r's socket is readable, or closed (ec).
  void on_readable(int r, boost::system::error_code ec) {
    auto& p = peer_at(r);
    {
      std::lock_guard lock(mutex_);
      p.wait_armed = false;
      if (p.reading) {  // the caller is reading it: it looks once more, and arms the next wait
        p.recheck = true;
        return;
      }
      if (!reads_on(p)) return;
      io_takes_reader(p);
    }
    if (ec)
      read_failed(r, ec);
    else
      pump(r);
    finish_reading(r);
  }

  // Holding peer r's reader role: a complete header is in rx_header.
  void on_header(int r) {
    auto& p = peer_at(r);
    auto header = decode_frame_header(p.rx_header);
    std::string problem = header.error;
    if (problem.empty() && header.value.source != r)
      problem = "a frame that claims to come from rank " + std::to_string(header.value.source);
    if (problem.empty()) problem = frame_problem(header.value, o_.size);
    if (!problem.empty()) {
      // Nothing of the frame is allocated or read: the connection is closed.
      std::lock_guard lock(mutex_);
      p.stage = tcp_peer::rx_stage::stopped;
      poison(errc::protocol,
             prefix() + "protocol error on the connection with " + p.where + ": " + problem +
                 "; closed the connection",
             true);
      post_io([this, r] { close_peer(r); });
      return;
    }
    p.rx = header.value;
    if (p.rx.type == frame_type::bye) {
      std::lock_guard lock(mutex_);
      p.finished = true;
      p.last_call = p.rx.call;
      // A rank that ended before this rank's current collective will never take part in it.
      if (auto what = ended_disagreement(r); !what.empty()) found_mismatch(what);
      notify();
      return;  // read on, until EOF
    }
    if (p.rx.type == frame_type::status_query) {
      // A write: the I/O thread's.
      post_io([this, r, query = p.rx.query] { answer_status(r, query); });
      return;
    }
    if (p.rx.type == frame_type::status_reply) return record_status(r, p.rx);
    place_payload(r, true);
  }

  // Holding peer r's reader role: the payload of the frame whose header is in rx goes straight
  // into the posted receive if it is that frame's, else into a pooled buffer of the queue; or,
  // if `may_park` and the frame is large (park_threshold), it stays in the socket for now.
  void place_payload(int r, bool may_park) {
    auto& p = peer_at(r);
    {
      std::lock_guard lock(mutex_);
      if (poisoned_ && p.rx.type == frame_type::data) {
        // The transport has failed: every call throws, and nothing will read this frame.
        drop_payload(p);
        return;
      }
      auto* pr = posted_;
      bool next_for_posted = p.rx.type == frame_type::data && pr != nullptr &&
                             pr->st == tcp_posted_recv::posted && pr->source == r &&
                             pr->tg == p.rx.tag;
      if (next_for_posted) {
        auto it = inbox_.find(key(r, tag{p.rx.tag}));
        next_for_posted = it == inbox_.end() || it->second.empty();  // FIFO: never overtake
      }
      if (next_for_posted && pr->in.size() != p.rx.length) {
        // The posted receive takes this frame next, and its length is not what it expects:
        // the mismatch recv() would report from the queue, reported now, before allocating
        // whatever the header claims (a collective's disagreement, if it is one, in the words
        // on_payload would use). The payload is read and dropped (it may be huge, and nothing
        // will take it): so the peer's send of it ends, and the frames behind it (the peer's
        // own abort frame) are read. Left unread, they would stall the peer's send until this
        // rank closes the connection, and the reset of a connection closed with unread bytes
        // can discard the abort frame this rank sent before the peer has read it: the peer
        // would report a lost connection instead of the mismatch. Another call of the same
        // length is queued and reported as usual.
        std::string what;
        auto v = progress_.check(p.rx.call);
        if (v == call_progress::verdict::conflict || v == call_progress::verdict::stale)
          what = prefix() + progress_.disagreement(o_.rank, r, p.rx.call);
        else
          what = prefix() + "expected " + std::to_string(pr->in.size()) + " bytes for " +
                 describe(pr->call) + " from " + p.where + " (" + tag_text(tag{pr->tg}) +
                 "), but rank " + std::to_string(r) + " sent " + std::to_string(p.rx.length) +
                 " bytes for " + describe(p.rx.call);
        drop_payload(p);
        poison(errc::mismatch, what, true);
        return;
      }
      next_for_posted = next_for_posted && pr->call == p.rx.call;
      p.rx_direct = next_for_posted;
      p.rx_received = 0;
      if (p.rx_direct) {
        pr->st = tcp_posted_recv::claimed;
        p.rx_into = pr->in.data();
      } else if (may_park && may_park_now(p.rx)) {
        p.stage = tcp_peer::rx_stage::parked;
        ++parked_count_;
        if (!progress_.in_call()) post_io([this] { arm_drain_timer(); });
        return;
      } else {
        // At most receive_step now; more as the bytes arrive (grow_rx_message): a header's
        // length is only a claim.
        p.rx_message = pool_.take(
            static_cast<std::size_t>(std::min<std::uint64_t>(p.rx.length, receive_step)));
        p.rx_message.size = static_cast<std::size_t>(p.rx.length);
        p.rx_message.call = p.rx.call;
      }
      p.stage = tcp_peer::rx_stage::payload;
    }
    if (p.rx.length == 0) on_payload(r);
  }

  // Under mutex_, holding peer p's reader role: the payload of the frame whose header is in rx
  // is read and dropped (tcp_peer::rx_stage::dropping).
  static void drop_payload(tcp_peer& p) {
    p.rx_direct = false;
    p.rx_received = 0;
    p.stage = p.rx.length == 0 ? tcp_peer::rx_stage::header : tcp_peer::rx_stage::dropping;
  }

  // Under mutex_: whether a frame whose receive is not posted may stay in the socket. Not while
  // the caller sleeps (see sleep_until), nor after a failure; and a frame that shows the ranks
  // disagree is read and reported as usual (on_payload).
  bool may_park_now(frame_header const& h) const {
    if (!parking_ || h.type != frame_type::data || h.length <= park_threshold) return false;
    if (caller_sleeping_ || poisoned_ || leaving_ || closing_ || abort_->aborted) return false;
    auto v = progress_.check(h.call);
    return v != call_progress::verdict::conflict && v != call_progress::verdict::stale;
  }

  // On the I/O thread: every parked frame is read on into a pooled buffer (or into its receive,
  // if that was posted meanwhile).
  void drain_parked() {
    for (int r = 0; r < o_.size; ++r) {
      auto& p = peer_at(r);
      {
        std::lock_guard lock(mutex_);
        if (p.stage != tcp_peer::rx_stage::parked) continue;
        --parked_count_;
        p.stage = tcp_peer::rx_stage::placing;
        if (p.reading) {  // it is being unparked by its reader: read on there
          p.recheck = true;
          continue;
        }
        io_takes_reader(p);
      }
      pump(r);
      finish_reading(r);
    }
  }

  // On the I/O thread: in park_grace, drains the parked frames unless the caller is then inside
  // a collective (which posts their receives, or sleeps, or ends and arms this again).
  void arm_drain_timer() {
    drain_timer_.expires_after(park_grace);
    drain_timer_.async_wait([this](boost::system::error_code ec) {
      if (ec) return;
      {
        std::lock_guard lock(mutex_);
        if (progress_.in_call() && !caller_sleeping_) return;
      }
      drain_parked();
    });
  }

  // Holding peer r's reader role: a queued payload's buffer is full, and more is coming. It
  // grows by receive_step (a buffer from the pool may already hold more than the message), so
  // memory follows the bytes that actually arrived. False if memory ran out (the connection is
  // then closed).
  bool grow_rx_message(int r) {
    auto& p = peer_at(r);
    auto& m = p.rx_message;
    try {
      grow(m, std::min(m.size, p.rx_received + receive_step));
      return true;
    } catch (std::bad_alloc const&) {
      std::lock_guard lock(mutex_);
      p.stage = tcp_peer::rx_stage::stopped;
      poison(errc::protocol,
             prefix() + "out of memory after " + std::to_string(p.rx_received) + " of the " +
                 std::to_string(m.size) + " bytes " + p.where + " is sending (" + describe(m.call) +
                 "); closed the connection",
             true);
      post_io([this, r] { close_peer(r); });
      return false;
    }
  }

  // Holding peer r's reader role: the payload of the frame in rx is complete.
  void on_payload(int r) {
    auto& p = peer_at(r);
    std::lock_guard lock(mutex_);
    p.stage = tcp_peer::rx_stage::header;
    if (p.rx_direct) {
      p.rx_direct = false;
      posted_->st = tcp_posted_recv::done;
      posted_ = nullptr;
      notify();
      return;
    }
    if (p.rx.type == frame_type::abort) {
      p.stage = tcp_peer::rx_stage::stopped;  // nothing follows it
      std::string text(reinterpret_cast<char const*>(p.rx_message.data.get()), p.rx.length);
      auto code = static_cast<errc>(p.rx.tag) == errc::mismatch ? errc::mismatch : errc::aborted;
      bool const first = !poisoned_;
      poison(code, prefix() + p.where + " failed, so this job is over. Its error: " + text,
             true);  // passed on: a rank that only hears of it from us (we exit next) still learns
                     // the cause
      // Ranks disagreeing about a call concern every rank, even one whose calls all returned.
      if (first && code == errc::mismatch) unreported_ = true;
      return;
    }
    // Checked on arrival against this rank's own view of that call, whether or not this rank is
    // about to read it: a message this rank will never read is a disagreement found now.
    auto v = progress_.check(p.rx_message.call);
    std::string wrong;
    if (v == call_progress::verdict::conflict || v == call_progress::verdict::stale)
      wrong = prefix() + progress_.disagreement(o_.rank, r, p.rx_message.call);
    p.rx_message.queued = std::chrono::steady_clock::now();
    inbox_[key(r, tag{p.rx.tag})].push_back(std::move(p.rx_message));  // nothing lost
    if (!wrong.empty()) found_mismatch(wrong);
    notify();
  }

  // Holding peer r's reader role: reading its socket failed, or it was closed.
  void read_failed(int r, boost::system::error_code ec) {
    auto& p = peer_at(r);
    std::lock_guard lock(mutex_);
    p.stage = tcp_peer::rx_stage::stopped;
    if (p.rx_direct) {  // the posted receive is not filled
      p.rx_direct = false;
      posted_->st = tcp_posted_recv::failed;
      posted_ = nullptr;
    }
    p.ended = true;
    notify();
    if (closing_ || leaving_ || ec == asio::error::operation_aborted) return;
    if (p.finished) return;  // the EOF after its bye
    poison(errc::peer_closed,
           prefix() + "lost " + p.where + ": " +
               (ec == asio::error::eof ? std::string("connection closed") : ec.message()) +
               " before it finished (the process exited, crashed or was killed)",
           true);  // ranks that wait on us, not on the lost rank, learn which rank was lost
  }

  // Says bye to every peer (after any queued frames) and waits for theirs, so that every
  // message a peer sent is checked against this rank's calls before this rank calls its job a
  // success; then closes. A rank ends within a second of an error (its abort frames are small).
  void shut_down() {
    if (!thread_.joinable()) return;
    bool graceful;
    {
      std::lock_guard lock(mutex_);
      graceful = !poisoned_ && !abort_->aborted;
      // Destroyed by an exception on its way out of this rank: the peers must not take that
      // for a clean finish (they would report a missing message); tell them this rank failed.
      if (graceful && std::uncaught_exceptions() > 0) {
        poison(errc::aborted,
               prefix() +
                   "left the job because an exception is propagating "
                   "through it (see that rank's error)",
               true);
        graceful = false;
      }
    }
    if (graceful) {
      call_info last;
      {
        std::lock_guard lock(mutex_);
        last = progress_.last();
        ++owned_writes_;  // until the byes are queued
        // From here, a peer that closes first (its bye crossing ours) is no failure: nothing
        // may poison us and tell the others, who may still be reading our last messages.
        leaving_ = true;
      }
      post_io([this, last] {
        for (int r = 0; r < o_.size; ++r) {
          if (!peer_at(r).socket || !peer_at(r).socket->is_open() || said_bye(r)) continue;
          auto* w = new tcp_write;
          frame_header h;
          h.type = frame_type::bye;
          h.source = o_.rank;
          h.call = last;  // so that a peer still in a later collective knows it is alone
          h.encode(w->header.data());
          w->owned = true;
          w->shutdown_after = true;
          enqueue(r, w);
        }
        std::lock_guard lock(mutex_);
        --owned_writes_;
        notify();
      });
    }
    {
      std::unique_lock lock(mutex_);
      if (graceful) {
        // Until every peer has said bye (or is gone): like MPI_Finalize, the end of a job is
        // collective. Bounded by the timeout; an error (a disagreement found in a peer's last
        // messages, an abort frame) ends the wait.
        // Under mutex_: a peer whose bye (or end of connection) this rank still waits for.
        auto awaited = [&](int r) {
          return r != o_.rank && peer_at(r).socket && !peer_at(r).finished && !peer_at(r).ended;
        };
        bool const ended = sleep_until(lock, std::chrono::steady_clock::now() + o_.timeout, [&] {
          if (poisoned_ || abort_->aborted) return true;
          if (owned_writes_ != 0) return false;
          for (int r = 0; r < o_.size; ++r)
            if (awaited(r)) return false;
          return true;
        });
        // Not an error of the job (every call returned), but a rank that waits out the whole
        // timeout here costs its job that long at exit: said, with what it waited for.
        if (!ended) {
          std::string open;
          for (int r = 0; r < o_.size; ++r)
            if (awaited(r)) open += (open.empty() ? "" : ", ") + std::to_string(r);
          detail::log(log_level::warning,
                      prefix() + "closed its transport after waiting the whole timeout (" +
                          format_duration(o_.timeout) + ") for " +
                          (open.empty() ? std::string("its own last frames to go out")
                                        : "the bye of rank(s) " + open) +
                          (owned_writes_ != 0 ? " (" + std::to_string(owned_writes_) +
                                                    " of its frames not written)"
                                              : std::string()));
        }
      }
      // Abort frames to peers (poisoned) or byes must reach the kernel before we close: small
      // frames behind no data (every send completed before returning), so this is quick unless
      // a peer stopped reading. Closing earlier would make peers report a lost rank instead of
      // the error that the abort frame carries.
      sleep_awake(lock, answer_window(), [&] { return owned_writes_ == 0; });
      if (!graceful) linger(lock);
      closing_ = true;
    }
    post_io([this] {
      boost::system::error_code ec;
      acceptor_.close(ec);
      for (int r = 0; r < o_.size; ++r) close_peer(r);
      io_.stop();
    });
    guard_.reset();
    thread_.join();
    // io_.stop() can leave frames queued whose write handlers never ran (a status query posted
    // just before the closes): nothing will run again, so free the owned ones here.
    for (auto& p : peers_) {
      for (auto* w : p.writes)
        if (w->owned) delete w;
      p.writes.clear();
    }
    report_unreported();
  }

  // Under mutex_, in shut_down() after a failure, the abort frames written: says to every peer
  // that nothing more comes (the FIN behind the abort frame) and reads on, dropping the data,
  // until each has closed too, for at most the answer window. Closing a connection that still
  // holds unread bytes, or that more bytes reach, makes the kernel reset it, and a reset can
  // throw away what the peer has not read yet: the abort frame that says why this job failed,
  // which the peer would then report as a lost connection (a rank that found a mismatch in a
  // peer's frame while that peer still sent it).
  void linger(std::unique_lock<std::mutex>& lock) {
    post_io([this] {
      for (int r = 0; r < o_.size; ++r) {
        auto& p = peer_at(r);
        if (!p.socket || !p.socket->is_open()) continue;
        boost::system::error_code ec;  // a peer that has closed already: nothing to say
        p.socket->shutdown(tcp::socket::shutdown_send, ec);
      }
      drain_parked();  // a parked frame is read, and dropped, too
    });
    sleep_awake(lock, answer_window(), [&] {
      for (int r = 0; r < o_.size; ++r) {
        auto const& p = peer_at(r);
        if (r != o_.rank && p.socket && !p.ended && !p.finished &&
            p.stage != tcp_peer::rx_stage::stopped)
          return false;
      }
      return true;
    });
  }

  // Ranks disagreed about a call, found after this rank's last call, so no call of this rank
  // threw it: never a success. In a group (spawn), spawn rethrows it; a rank that is a process
  // of its own ends that process, as torch.distributed's watchdog does with an asynchronous
  // error, after saying why.
  void report_unreported() {
    std::string what;
    errc code;
    {
      std::lock_guard lock(mutex_);
      if (!unreported_) return;
      unreported_ = false;
      what = poison_what_;
      code = poison_code_;
    }
    if (abort_->group) return abort_->abort(what, code);
    // Logged as the error a call would have thrown (its text ends with the errc's meaning).
    detail::log(log_level::error,
                std::string(transport_error(code, what).what()) + "\ngcl: rank " +
                    std::to_string(o_.rank) +
                    ": this was found after the rank's last call, so no call could report it; "
                    "ending the process");
    std::abort();
  }

  // The rendezvous's connections, one per peer, become this rank's (with the congestion
  // control of same-host ones set, before any data: only the rendezvous's few bytes have
  // crossed them; congestion.hpp).
  void take_connections() {
    keys_ = rendezvous_->keys();
    any_shares_cores_ = rendezvous_->any_shares_cores();
    any_over_two_per_cpu_ = rendezvous_->any_over_two_per_cpu();
    any_crowds_cores_ = rendezvous_->any_crowds_cores();
    // What rank 0 judged from the CPUs of this rank's machine, in place of the rank's guess
    // (options() then says it, and a fork carries it: tcp_transport::fork), and the polling
    // from_env would have chosen from it (before the I/O thread starts: its priority depends
    // on it).
    if (auto const cores = rendezvous_->own_cores()) {
      o_.shares_cores = cores->shares_cores;
      o_.over_two_per_cpu = cores->over_two_per_cpu;
      o_.crowds_cores = cores->crowds_cores;
      if (o_.spin_follows_cores)
        o_.spin = tcp_options::spin_for_cores(cores->shares_cores, cores->over_two_per_cpu);
    }
    // A group's ranks are all threads of this process: they share cores where they outnumber
    // the CPUs, whatever the options say.
    own_core_ = !o_.shares_cores && !(abort_->group && ranks_outnumber_cpus(o_.size));
    for (int r = 0; r < o_.size; ++r) {
      peer_at(r).socket = std::move(rendezvous_->peers()[static_cast<std::size_t>(r)]);
      peer_at(r).where = rendezvous_->where()[static_cast<std::size_t>(r)];
      if (peer_at(r).socket) {
        peer_at(r).fd = peer_at(r).socket->native_handle();
        boost::system::error_code ec;
        if (auto ep = peer_at(r).socket->remote_endpoint(ec); !ec)
          addresses_[static_cast<std::size_t>(r)] = ep.address().to_string();
        if (!o_.same_host_congestion_control.empty() && same_host(*peer_at(r).socket))
          use_congestion_control(peer_at(r).fd, o_.same_host_congestion_control, peer_at(r).where);
      } else
        peer_at(r).stage = tcp_peer::rx_stage::stopped;
    }
  }

  // peers_[r]: the connection to rank r and its state.
  tcp_peer& peer_at(int r) { return peers_[static_cast<std::size_t>(r)]; }
  tcp_peer const& peer_at(int r) const { return peers_[static_cast<std::size_t>(r)]; }

  void leave_group() {
    std::lock_guard lock(abort_->mutex);
    std::erase_if(abort_->members, [this](auto const& m) { return m.first == this; });
  }

  tcp_options o_;
  std::shared_ptr<tcp_abort_state> abort_;
  asio::io_context io_;  // first: destroyed after every socket and handler that uses it
  tcp::acceptor acceptor_;
  asio::steady_timer drain_timer_;              // park_grace
  std::shared_ptr<tcp_rendezvous> rendezvous_;  // keeps refusing strangers after the rendezvous
  std::vector<tcp_peer> peers_;
  std::vector<std::string> addresses_;  // [r]: rank r's address on its connection to this rank
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> guard_;
  std::thread thread_;

  std::mutex mutex_;
  std::condition_variable changed_;
  std::atomic<std::uint32_t> events_{0};  // notify()s so far, for a caller that polls (await)
  std::unordered_map<std::uint64_t, std::deque<tcp_message>> inbox_;
  tcp_buffer_pool pool_;
  tcp_posted_recv* posted_ = nullptr;  // at most one: recv blocks its only caller
  int parked_count_ = 0;               // peers whose connection is parked
  bool caller_sleeping_ = false;       // the caller sleeps on changed_ (sleep_until)
  int owned_writes_ = 0;
  bool poisoned_ = false, closing_ = false, leaving_ = false;
  bool unreported_ = false;  // poisoned by a disagreement that no call has thrown yet
  call_progress progress_;   // this rank's collectives, which arriving messages are checked against
  int waiting_for_ = -1;     // the rank recv() is blocked on, for status answers
  std::uint8_t status_query_ = 0;  // the number of this rank's last status query (request_status)
  errc poison_code_{};
  std::string poison_what_;
  call_info call_{};
  std::vector<host_key> keys_;         // host_keys()
  bool any_shares_cores_ = false;      // any_shares_cores()
  bool any_over_two_per_cpu_ = false;  // any_over_two_per_cpu()
  bool any_crowds_cores_ = false;      // any_crowds_cores()
  // between_looks: whether no rank of the job shares this rank's core.
  bool own_core_ = false;
  std::function<void()> arrival_hook_;  // set_arrival_hook
  bool parking_ = true;                 // false once a hook is set

  // rest_io: whether a rest is posted or under way (written under rest_mutex_); when the caller
  // last polled (steady_clock ticks); the request to end it (under rest_mutex_, which is taken
  // after mutex_, never before).
  static constexpr std::chrono::microseconds rest_window{500};
  std::atomic<bool> resting_{false};
  std::atomic<std::uint64_t> io_beats_asked_{0}, io_beats_{0};  // sleep_awake's sign of life
  std::atomic<std::chrono::steady_clock::rep> caller_polled_at_{0};
  std::mutex rest_mutex_;
  std::condition_variable rest_cv_;
  bool rest_end_ = false;
};

}  // namespace detail

}  // namespace gcl
