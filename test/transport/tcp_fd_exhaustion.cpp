#define BOOST_TEST_MODULE transport_tcp_fd_exhaustion
#include <boost/test/unit_test.hpp>

// A job whose process has run out of file descriptors while strangers keep 300 connections
// per port waiting to be accepted: every accept fails (EMFILE) and the connection stays in the
// backlog. The accept loop must back off rather than retry at once (which took the CPU from
// the job), and the job's results must stay exact. A program of its own: it lowers
// RLIMIT_NOFILE, which is per process.

#include <gcl/gcl.hpp>
#include <gcl/transport/tcp.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <latch>
#include <string>
#include <thread>
#include <vector>

using gcl::tcp_transport;
using namespace std::chrono_literals;

namespace {

// The child process that holds the connections (its descriptors are not this process's):
// reads the ports from `in`, opens `per_port` connections to each, writes one byte to `out`
// ('k', or 'x' if it could not), and holds them until `in` closes.
[[noreturn]] void hold_connections(int in, int out, int count, int per_port) {
  std::vector<std::uint16_t> ports(static_cast<std::size_t>(count));
  auto* p = reinterpret_cast<char*>(ports.data());
  std::size_t want = ports.size() * sizeof(std::uint16_t), got = 0;
  while (got < want) {
    auto n = ::read(in, p + got, want - got);
    if (n <= 0) _exit(1);
    got += static_cast<std::size_t>(n);
  }
  char status = 'k';
  for (auto port : ports)
    for (int i = 0; i < per_port; ++i) {
      int s = ::socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_port = htons(port);
      a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      if (s < 0 || ::connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) status = 'x';
    }
  if (::write(out, &status, 1) != 1) _exit(1);
  char c;
  while (::read(in, &c, 1) > 0) {
  }
  _exit(0);
}

int highest_open_fd() {
  int top = 2;
  for (auto const& e : std::filesystem::directory_iterator("/proc/self/fd"))
    top = std::max(top, std::stoi(e.path().filename().string()));
  return top;
}

}  // namespace

BOOST_AUTO_TEST_CASE(exhausted_descriptors_do_not_spin_the_accept_loop) {
  constexpr int P = 3, per_port = 300, rounds = 200, headroom = 4;
  constexpr std::size_t n = 1000;

  // Fork first, while this process has no other thread.
  int to_child[2], from_child[2];
  BOOST_REQUIRE(::pipe(to_child) == 0 && ::pipe(from_child) == 0);
  pid_t child = ::fork();
  BOOST_REQUIRE(child >= 0);
  if (child == 0) {
    ::close(to_child[1]);
    ::close(from_child[0]);
    hold_connections(to_child[0], from_child[1], P, per_port);
  }
  ::close(to_child[0]);
  ::close(from_child[1]);

  gcl::tcp_options o;
  o.timeout = 60s;
  tcp_transport::group g(P, o);
  std::vector<std::uint16_t> ports(P);
  std::vector<std::string> errors(P);
  std::vector<int> wrong(P, 0);
  std::latch formed(P), go(1), finished(P), release(1);
  std::uint64_t failures = 0;
  double seconds = 0;
  rlimit old{};
  BOOST_REQUIRE(::getrlimit(RLIMIT_NOFILE, &old) == 0);
  {
    std::vector<std::jthread> ranks;
    for (int r = 0; r < P; ++r)
      ranks.emplace_back([&, r] {
        bool counted = false;
        try {
          gcl::communicator comm(g.connect(r));
          ports[r] = comm.transport().port();
          formed.count_down();
          counted = true;
          go.wait();
          for (int round = 0; round < rounds; ++round) {
            std::vector<std::int64_t> v(n);
            for (std::size_t i = 0; i < n; ++i) v[i] = r + round * 7 + static_cast<std::int64_t>(i);
            gcl::all_reduce(comm, v, gcl::sum{}, gcl::ring{});
            for (std::size_t i = 0; i < n; ++i)
              if (v[i] != P * (round * 7 + static_cast<std::int64_t>(i)) + P * (P - 1) / 2)
                ++wrong[r];
          }
          finished.count_down();
          release.wait();  // the transport, and its accept loop, live until the count is taken
        } catch (std::exception const& e) {
          errors[r] = e.what();
          if (!counted) formed.count_down();
          finished.count_down();
        }
      });
    formed.wait();
    bool all_formed = std::all_of(errors.begin(), errors.end(), [](auto& e) { return e.empty(); });

    // From here this process can open `headroom` more descriptors; the ranks' accepts take
    // them, and every further accept fails with EMFILE while 300 x P connections wait.
    rlimit low = old;
    low.rlim_cur = static_cast<rlim_t>(highest_open_fd() + 1 + headroom);
    BOOST_REQUIRE(::setrlimit(RLIMIT_NOFILE, &low) == 0);
    bool held = false;
    if (all_formed && ::write(to_child[1], ports.data(), ports.size() * sizeof ports[0]) ==
                          static_cast<ssize_t>(ports.size() * sizeof ports[0])) {
      pollfd pfd{from_child[0], POLLIN, 0};
      char status = 0;
      held =
          ::poll(&pfd, 1, 120000) == 1 && ::read(from_child[0], &status, 1) == 1 && status == 'k';
    }
    auto failures_before = gcl::detail::tcp_accept_failures.load();
    auto t0 = std::chrono::steady_clock::now();
    go.count_down();
    finished.wait();
    // A moment more with the descriptors exhausted: an accept loop that retries at once fails
    // thousands of times per second, one that backs off a few times.
    std::this_thread::sleep_for(1s);
    failures = gcl::detail::tcp_accept_failures.load() - failures_before;
    seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

    ::close(to_child[1]);  // the child closes its connections and exits
    int status = 0;
    ::waitpid(child, &status, 0);
    ::setrlimit(RLIMIT_NOFILE, &old);
    release.count_down();
    BOOST_TEST(held, "the child could not open its connections");
  }
  ::close(from_child[0]);

  for (int r = 0; r < P; ++r) {
    BOOST_TEST(errors[r].empty(), "rank " << r << ": " << errors[r]);
    BOOST_TEST(wrong[r] == 0, "rank " << r << ": " << wrong[r] << " wrong sums");
  }
  // Every rank's accept failed at least once (the test exhausted them), and far fewer times
  // than a busy loop would: with the back-off (10 ms doubling to 1 s, reset by a successful
  // accept) an acceptor fails at most ~8 times per streak plus once a second.
  BOOST_TEST_MESSAGE("accept failures while exhausted: " << failures << " in " << seconds << " s");
  BOOST_TEST(failures >= static_cast<std::uint64_t>(P), "accept failures: " << failures);
  auto bound = static_cast<std::uint64_t>(P * (10 + 4 * seconds) + 50);
  BOOST_TEST(failures <= bound, "accept failures: " << failures << " in " << seconds
                                                    << " s (at most " << bound
                                                    << " with a back-off)");
}
