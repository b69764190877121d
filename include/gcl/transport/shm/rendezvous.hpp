#pragma once
// How the ranks of one shm job find each other: rank 0 listens on a Unix socket in the
// abstract namespace (no file, gone when rank 0 closes it or dies) named from a hash of the job
// token, so that jobs with different tokens never meet; every other rank connects and says
// hello (the token's check hash, its rank, the job size, the protocol version). Rank 0 admits a
// hello only from the same user (SO_PEERCRED), with the right token, a free rank and the same
// size, and refuses anything else with a reason (logged, the job goes on). Once all have come,
// it creates the segment and sends each rank its memfd, and one end of a socket pair per other
// rank (SCM_RIGHTS). These sockets carry nothing afterwards: each one's hang-up is how a rank
// learns that a peer's process is gone, whatever killed it.

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "../../detail/error_text.hpp"
#include "../../error.hpp"
#include "../../log.hpp"
#include "options.hpp"
#include "segment.hpp"

namespace gcl::detail {

// FNV-1a with a salt: the socket's name and the hello's check are different hashes of the
// token, so that reading the name (in /proc/net/unix) does not give the check.
inline std::uint64_t shm_token_hash(std::string_view salt, std::string_view token) noexcept {
  std::uint64_t h = 14695981039346656037ull;
  auto mix = [&](std::string_view s) {
    for (char c : s) {
      h ^= static_cast<unsigned char>(c);
      h *= 1099511628211ull;
    }
  };
  mix(salt);
  mix(token);
  return h;
}

struct shm_hello {
  std::uint64_t magic = shm_magic;
  std::uint32_t version = shm_version;
  std::int32_t rank = 0;
  std::int32_t size = 0;
  std::uint32_t reserved = 0;
  std::uint64_t token_check = 0;
};
// `accepted` of a welcome: 1, a segment descriptor comes with it; 0, this process is refused
// (`why`); 2, the job's setup failed (`why`: a rank that had joined is gone).
inline constexpr std::uint32_t shm_refused = 0, shm_accepted = 1, shm_setup_failed = 2;
struct shm_welcome {
  std::uint64_t magic = shm_magic;
  std::uint32_t accepted = shm_refused;
  std::uint32_t descriptors = 0;  // socket ends that follow, one message each
  char why[240] = {};             // when refused
};

// A descriptor that closes itself.
class unique_fd {
 public:
  unique_fd() = default;
  explicit unique_fd(int fd) noexcept : fd_(fd) {}
  unique_fd(unique_fd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  unique_fd& operator=(unique_fd&& o) noexcept {
    if (this != &o) {
      reset();
      fd_ = std::exchange(o.fd_, -1);
    }
    return *this;
  }
  ~unique_fd() { reset(); }
  void reset() noexcept {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  int get() const noexcept { return fd_; }
  explicit operator bool() const noexcept { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

// What a rank takes away from the rendezvous.
struct shm_joined {
  int segment_fd = -1;           // closed by the caller once mapped
  std::vector<unique_fd> peers;  // peers[r]: the socket whose hang-up says r is gone

  unique_fd& peer(int r) { return peers[static_cast<std::size_t>(r)]; }
  unique_fd const& peer(int r) const { return peers[static_cast<std::size_t>(r)]; }
};

class shm_rendezvous {
 public:
  using clock = std::chrono::steady_clock;

  // The number of rank r in messages: its number in the whole job under hybrid_transport.
  int name_of(int r) const noexcept {
    return o_.global_ranks.empty() ? r : o_.global_ranks[static_cast<std::size_t>(r)];
  }
  // "rank 0": the rank that leads the rendezvous, as messages name it.
  std::string leader() const { return std::to_string(name_of(0)); }

  shm_rendezvous(shm_options const& o, clock::time_point deadline)
      : o_(o), deadline_(deadline), prefix_(rank_prefix(name_of(o.rank))) {}

  // The job's socket name: "gcl-shm-" and the token's hash, in the abstract namespace.
  static sockaddr_un address(shm_options const& o, socklen_t& length) {
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    char name[64];
    int n = std::snprintf(name, sizeof name, "gcl-shm-%016llx-%u",
                          static_cast<unsigned long long>(shm_token_hash("gcl-shm-name:", o.token)),
                          static_cast<unsigned>(::getuid()));
    std::memcpy(a.sun_path + 1, name, static_cast<std::size_t>(n));  // sun_path[0] = 0: abstract
    length =
        static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + static_cast<std::size_t>(n));
    return a;
  }

  // Rank 0: waits for the others, creates the segment (in `segment`), hands it out.
  shm_joined lead(std::shared_ptr<shm_segment>& segment) {
    shm_joined out;
    out.peers.resize(static_cast<std::size_t>(o_.size));
    if (o_.size == 1) {
      out.segment_fd = create(segment);
      return out;
    }
    unique_fd listener(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
    if (!listener) fail(errc::protocol, "cannot create a Unix socket: " + last_error());
    socklen_t len = 0;
    auto addr = address(o_, len);
    if (::bind(listener.get(), reinterpret_cast<sockaddr*>(&addr), len) != 0) {
      if (errno == EADDRINUSE)
        fail(errc::protocol, "another shm job on this host uses the same job token (from " +
                                 o_.token_origin() +
                                 "): each job needs its own (tools/gcl-launch picks a random one)");
      fail(errc::protocol, "cannot bind the job's Unix socket: " + last_error());
    }
    if (::listen(listener.get(), 128) != 0)
      fail(errc::protocol, "cannot listen on the job's Unix socket: " + last_error());

    // A rank that has joined sends nothing more: its socket becoming readable (end of file) or
    // hanging up means that its process is gone, and the job cannot form. Watched beside the
    // listener, so that the others learn it at once and not from the setup timeout.
    std::vector<pid_t> pids(static_cast<std::size_t>(o_.size), 0);
    std::vector<pollfd> fds;
    std::vector<int> who;
    int joined = 1;
    while (joined < o_.size) {
      auto left = remaining();
      if (left <= 0) {
        std::string missing;
        for (int r = 1; r < o_.size; ++r)
          if (!out.peer(r)) missing += (missing.empty() ? "" : ", ") + std::to_string(name_of(r));
        fail(errc::timeout, "shm rendezvous timed out after " + format_duration(o_.timeout) +
                                ": rank(s) " + missing + " of " + std::to_string(o_.size) +
                                " did not join (job token from " + o_.token_origin() + ")");
      }
      fds.assign(1, pollfd{listener.get(), POLLIN, 0});
      who.assign(1, 0);
      for (int r = 1; r < o_.size; ++r)
        if (out.peer(r)) {
          fds.push_back({out.peer(r).get(), POLLIN, 0});
          who.push_back(r);
        }
      if (::poll(fds.data(), fds.size(), static_cast<int>(std::min<long long>(left, 100))) <= 0)
        continue;
      for (std::size_t i = 1; i < fds.size(); ++i)
        if ((fds[i].revents & (POLLIN | POLLHUP | POLLERR)) != 0)
          setup_failed(out, "rank " + std::to_string(name_of(who[i])) + " (pid " +
                                std::to_string(pids[static_cast<std::size_t>(who[i])]) +
                                ") died during the setup: its process ended after it joined, "
                                "before every rank had");
      if ((fds[0].revents & POLLIN) == 0) continue;
      unique_fd c(::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
      if (!c) continue;
      pid_t pid = 0;
      int r = admit(c.get(), out, pid);
      if (r > 0) {
        out.peer(r) = std::move(c);
        pids[static_cast<std::size_t>(r)] = pid;
        ++joined;
      }
    }
    listener.reset();  // nobody else may join: the name is free again

    int fd = create(segment);
    out.segment_fd = fd;
    // One socket pair per pair of ranks other than 0 (rank 0's are the connections themselves).
    std::vector<std::vector<unique_fd>> ends(static_cast<std::size_t>(o_.size));
    for (auto& e : ends) e.resize(static_cast<std::size_t>(o_.size));
    for (std::size_t i = 1; i < ends.size(); ++i)
      for (std::size_t j = i + 1; j < ends.size(); ++j) {
        int sv[2];
        if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
          fail(errc::protocol, "cannot create a socket pair: " + last_error());
        ends[i][j] = unique_fd(sv[0]);
        ends[j][i] = unique_fd(sv[1]);
      }
    for (int k = 1; k < o_.size; ++k) {
      shm_welcome w;
      w.accepted = shm_accepted;
      w.descriptors = static_cast<std::uint32_t>(o_.size - 2);
      send_with_fd(out.peer(k).get(), &w, sizeof w, fd, k);
      auto const& mine = ends[static_cast<std::size_t>(k)];
      for (int j = 1; j < o_.size; ++j)
        if (j != k) {
          std::int32_t other = j;
          send_with_fd(out.peer(k).get(), &other, sizeof other,
                       mine[static_cast<std::size_t>(j)].get(), k);
        }
    }
    return out;
  }

  // Rank r > 0: joins rank 0's job and maps its segment.
  shm_joined join() {
    shm_joined out;
    out.peers.resize(static_cast<std::size_t>(o_.size));
    unique_fd c;
    socklen_t len = 0;
    auto addr = address(o_, len);
    // Rank 0 may not be listening yet: try again until the deadline.
    for (auto pause = std::chrono::milliseconds{1};;
         pause = std::min(pause * 2, std::chrono::milliseconds{50})) {
      c = unique_fd(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
      if (!c) fail(errc::protocol, "cannot create a Unix socket: " + last_error());
      if (::connect(c.get(), reinterpret_cast<sockaddr*>(&addr), len) == 0) break;
      if (errno != ECONNREFUSED && errno != ENOENT && errno != EAGAIN)
        fail(errc::connection_refused,
             "cannot reach rank " + leader() + "'s Unix socket: " + last_error());
      if (remaining() <= 0)
        fail(errc::timeout, "shm rendezvous timed out after " + format_duration(o_.timeout) +
                                ": rank " + leader() + " of a job with this token (from " +
                                o_.token_origin() + ") is not listening on this host");
      std::this_thread::sleep_for(pause);
    }
    shm_hello h;
    h.rank = o_.rank;
    h.size = o_.size;
    h.token_check = shm_token_hash("gcl-shm-check:", o_.token);
    if (::send(c.get(), &h, sizeof h, MSG_NOSIGNAL) != static_cast<ssize_t>(sizeof h))
      fail(errc::connection_refused, "cannot say hello to rank " + leader() + ": " + last_error());
    shm_welcome w;
    int fd = receive_with_fd(c.get(), &w, sizeof w);
    unique_fd segment_fd(fd);
    if (w.magic == shm_magic && w.accepted == shm_setup_failed) {
      w.why[sizeof w.why - 1] = '\0';
      fail(errc::peer_closed, std::string("the shm job's setup failed: ") + w.why);
    }
    if (w.magic != shm_magic || w.accepted != shm_accepted || fd < 0) {
      w.why[sizeof w.why - 1] = '\0';
      fail(errc::connection_refused, "rank " + leader() + " refused this rank: " +
                                         (w.why[0] != '\0' ? w.why : "no reason given"));
    }
    if (w.descriptors != static_cast<std::uint32_t>(o_.size - 2))
      fail(errc::protocol, "rank " + leader() + " sent a welcome for another job size");
    for (std::uint32_t i = 0; i < w.descriptors; ++i) {
      std::int32_t who = -1;
      unique_fd end(receive_with_fd(c.get(), &who, sizeof who));
      if (!end || who < 1 || who >= o_.size || who == o_.rank || out.peer(who))
        fail(errc::protocol, "rank " + leader() + " sent a malformed peer socket");
      out.peer(who) = std::move(end);
    }
    out.peers[0] = std::move(c);
    out.segment_fd = ::dup(segment_fd.get());
    return out;
  }

 private:
  int create(std::shared_ptr<shm_segment>& segment) const {
    segment = std::make_shared<shm_segment>();
    int fd = segment->create(o_.size, o_.ring_size(), round_page(o_.pool_bytes), prefix_);
    shm_segment::enroll(fd, segment);
    return fd;
  }
  long long remaining() const {
    return std::chrono::duration_cast<std::chrono::milliseconds>(deadline_ - clock::now()).count();
  }
  static std::string last_error() { return std::strerror(errno); }
  [[noreturn]] void fail(errc code, std::string const& what) const {
    throw transport_error(code, prefix_ + what);
  }

  // A rank that had joined is gone before the job formed: every other rank that has joined is
  // told why (a welcome that says the setup failed), and rank 0 throws with it.
  [[noreturn]] void setup_failed(shm_joined& out, std::string const& why) const {
    shm_welcome w;
    w.accepted = shm_setup_failed;
    std::snprintf(w.why, sizeof w.why, "%s", why.c_str());
    for (auto& c : out.peers)
      if (c) (void)::send(c.get(), &w, sizeof w, MSG_NOSIGNAL);
    fail(errc::peer_closed, why);
  }

  // Reads a hello from a new connection; returns the rank it is admitted as (and its pid in
  // `pid`), or -1 after refusing it (with a reason, to it and to the log).
  int admit(int fd, shm_joined const& so_far, pid_t& pid) {
    ucred cred{};
    socklen_t cl = sizeof cred;
    std::string why;
    shm_hello h;
    pollfd p{fd, POLLIN, 0};
    auto wait_ms = static_cast<int>(std::clamp<long long>(remaining(), 1, 2000));
    if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) != 0)
      why = "its credentials cannot be read";
    else if (cred.uid != ::getuid())
      why = "it runs as user " + std::to_string(cred.uid) + ", this job as " +
            std::to_string(::getuid());
    else if (::poll(&p, 1, wait_ms) <= 0 ||
             ::recv(fd, &h, sizeof h, 0) != static_cast<ssize_t>(sizeof h))
      why = "it sent no hello";
    else if (h.magic != shm_magic || h.version != shm_version)
      why = "it is not gcl's shm protocol of this version";
    else if (h.token_check != shm_token_hash("gcl-shm-check:", o_.token))
      why = "it did not present this job's token";
    else if (h.size != o_.size)
      why = "it belongs to a job of " + std::to_string(h.size) + " ranks, this one has " +
            std::to_string(o_.size);
    else if (h.rank < 1 || h.rank >= o_.size)
      why = "its rank " + std::to_string(h.rank) + " is out of range";
    else if (so_far.peer(h.rank))
      why = "rank " + std::to_string(name_of(h.rank)) + " has already joined";
    pid = cred.pid;
    if (why.empty()) return h.rank;
    log(log_level::warning, prefix_ + "refused a process (pid " + std::to_string(cred.pid) +
                                ") that tried to join this shm job: " + why);
    shm_welcome w;
    std::snprintf(w.why, sizeof w.why, "%s", why.c_str());
    (void)::send(fd, &w, sizeof w, MSG_NOSIGNAL);
    return -1;
  }

  void send_with_fd(int socket, void const* data, std::size_t n, int fd, int to) const {
    iovec iov{const_cast<void*>(data), n};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
    msghdr m{};
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    m.msg_control = control;
    m.msg_controllen = sizeof control;
    auto* c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &fd, sizeof fd);
    if (::sendmsg(socket, &m, MSG_NOSIGNAL) != static_cast<ssize_t>(n))
      fail(errc::peer_closed, "cannot hand the shared segment to rank " +
                                  std::to_string(name_of(to)) + ": " + last_error());
  }

  // One message of exactly n bytes, and the descriptor that came with it (or -1).
  int receive_with_fd(int socket, void* data, std::size_t n) const {
    iovec iov{data, n};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
    msghdr m{};
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    m.msg_control = control;
    m.msg_controllen = sizeof control;
    pollfd p{socket, POLLIN, 0};
    for (;;) {
      auto left = remaining();
      if (left <= 0)
        fail(errc::timeout, "shm rendezvous timed out after " + format_duration(o_.timeout) +
                                " waiting for rank " + leader() +
                                " to hand out the segment (every rank must "
                                "join first)");
      int rc = ::poll(&p, 1, static_cast<int>(std::min<long long>(left, 100)));
      if (rc > 0) break;
    }
    ssize_t got = ::recvmsg(socket, &m, MSG_CMSG_CLOEXEC);
    int fd = -1;
    for (auto* c = CMSG_FIRSTHDR(&m); c != nullptr; c = CMSG_NXTHDR(&m, c))
      if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
        std::memcpy(&fd, CMSG_DATA(c), sizeof fd);
    if (got != static_cast<ssize_t>(n)) {
      if (fd >= 0) ::close(fd);
      if (got == 0)
        fail(errc::peer_closed,
             "rank " + leader() +
                 " died or left during the setup: it closed the rendezvous before handing out "
                 "the segment");
      fail(errc::protocol, "rank " + leader() + " sent a malformed rendezvous message");
    }
    return fd;
  }

  shm_options const& o_;
  clock::time_point deadline_;
  std::string prefix_;
};

}  // namespace gcl::detail
