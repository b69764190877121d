#define BOOST_TEST_MODULE transport_shm_failures
#include <boost/test/unit_test.hpp>

// What a rank that is killed (SIGKILL) or stopped (SIGSTOP) does to a shm job of processes
// forked from this test, in an all_reduce loop: the others fail with an error that names it --
// a killed rank at once (its sockets hang up; the timeout, 60 s, is only a hang guard), a
// stopped one when their timeout (3 s) runs out -- and /dev/shm is as it was. A rank's error is
// checked for who it blames, never for how long it took; timing-dependent only in that a
// loaded machine must not hold a live rank up for 3 s (the stopped case is excluded from the
// sanitizer suites). And a rank killed during the setup, before the job has formed: the others
// learn it from its hang-up too, not from the setup timeout.

#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gcl/algorithm/ring.hpp>
#include <gcl/collective/all_reduce.hpp>
#include <gcl/transport/shm.hpp>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "shm_fork.hpp"

namespace {

using namespace std::chrono_literals;

// Starts a job of `size` ranks in an endless all_reduce loop of `count` floats; returns once
// every rank has finished its first one (it says so with a file).
std::vector<pid_t> start_loop(gcl_test::temp_dir const& dir, int size, std::size_t count,
                              std::chrono::milliseconds timeout) {
  gcl::shm_options o;
  o.size = size;
  o.timeout = timeout;
  o.token = gcl_test::random_token("failures");
  std::vector<pid_t> pids;
  for (int r = 0; r < size; ++r)
    pids.push_back(gcl_test::start_rank(dir, o, r, [&dir, count](auto& comm) {
      for (long it = 0;; ++it) {
        std::vector<float> v(count, 1.0f);
        gcl::all_reduce(comm, v, gcl::sum{}, gcl::ring{});
        if (v[0] != static_cast<float>(comm.size())) return std::string("wrong sum");
        if (it == 0) std::ofstream(dir.file(comm.rank(), ".started")) << "1";
      }
      return std::string();
    }));
  if (auto why = gcl_test::wait_until_started(dir, pids); !why.empty()) BOOST_FAIL(why);
  return pids;
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_killed_rank_is_named_by_every_other_and_leaves_nothing) {
  auto const before = gcl_test::dev_shm_names();
  struct round {
    int size, victim;
    std::size_t count;
  };
  // A rank in the middle, rank 0 (which created the segment), at a small and a large size.
  for (auto [size, victim, count] : {round{4, 2, 1000}, round{3, 0, 100000}, round{5, 4, 64}}) {
    gcl_test::temp_dir dir;
    auto pids = start_loop(dir, size, count, 60s);
    ::kill(pids[victim], SIGKILL);
    for (int r = 0; r < size; ++r) {
      auto out = gcl_test::finish_rank(dir, pids[r], r);
      if (r == victim) {
        BOOST_TEST((WIFSIGNALED(out.status) && WTERMSIG(out.status) == SIGKILL));
        continue;
      }
      // A context, not BOOST_TEST_INFO (which goes with the next check only): whichever check
      // fails prints what the rank said.
      BOOST_TEST_CONTEXT("P=" << size << ", rank " << victim << " killed: rank " << r
                              << " said: " << out.error) {
        BOOST_TEST(out.exited_with(1));
        BOOST_TEST(out.error.find("rank " + std::to_string(victim)) != std::string::npos);
        BOOST_TEST(out.error.find("timed out") == std::string::npos);
      }
      BOOST_TEST_MESSAGE("rank " << r << ": " << out.error.substr(0, 200));
    }
  }
  BOOST_TEST(gcl_test::dev_shm_names() == before, "a killed job left something in /dev/shm");
}

BOOST_AUTO_TEST_CASE(a_stopped_rank_is_named_when_the_others_time_out) {
  for (std::size_t count : {std::size_t{64}, std::size_t{262144}}) {
    gcl_test::temp_dir dir;
    auto pids = start_loop(dir, 4, count, 3s);
    ::kill(pids[2], SIGSTOP);
    for (int r = 0; r < 4; ++r) {
      if (r == 2) continue;
      auto out = gcl_test::finish_rank(dir, pids[r], r);
      BOOST_TEST_CONTEXT("rank 2 stopped, " << count << " floats: rank " << r
                                            << " said: " << out.error) {
        BOOST_TEST(out.exited_with(1));
        BOOST_TEST(out.error.find("rank 2 does not answer") != std::string::npos);
      }
      BOOST_TEST_MESSAGE("rank " << r << ": " << out.error.substr(0, 300));
    }
    ::kill(pids[2], SIGKILL);
    (void)gcl_test::finish_rank(dir, pids[2], 2);
  }
}

// ---- a rank killed during the setup, before the job has formed ----------------------------
//
// The rank that is killed is a stand-in speaking the rendezvous protocol (rendezvous.hpp): the
// test then knows exactly when it has joined, and kills it there; the ranks that must notice are
// real. They have a 60 s timeout: an error that says "timed out" fails the test, one that names
// the dead rank passes, however long either took.

namespace {

namespace gd = gcl::detail;

gcl::shm_options setup_options(int size) {
  gcl::shm_options o;
  o.size = size;
  o.timeout = 60s;
  o.token = gcl_test::random_token("setup");
  return o;
}

// A child process that runs `body(report)`, where `report` is a pipe's write end to the test;
// returns its pid and the read end.
template <class Body>
std::pair<pid_t, int> child(Body body) {
  int p[2];
  BOOST_TEST_REQUIRE(::pipe(p) == 0);
  std::fflush(nullptr);
  pid_t pid = ::fork();
  if (pid == 0) {
    ::close(p[0]);
    body(p[1]);
    ::_exit(0);
  }
  ::close(p[1]);
  return {pid, p[0]};
}

// Everything the child wrote to the pipe until it closed it.
std::string read_all(int fd) {
  std::string s;
  char buf[512];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) != 0;)
    if (n > 0)
      s.append(buf, static_cast<std::size_t>(n));
    else if (errno != EINTR)
      break;
  ::close(fd);
  return s;
}

// Waits for one byte from the child: it has done what it says it has.
void await_byte(int fd) {
  char c = 0;
  ssize_t n;
  while ((n = ::read(fd, &c, 1)) < 0 && errno == EINTR) {
  }
  BOOST_TEST_REQUIRE(n == 1, "the child process ended before it was ready");
}

// Joins the job of `o` as `rank` as shm_transport does (connect to rank 0's socket, retrying
// until it listens, and say hello); returns the connection.
int join_as(gcl::shm_options const& o, int rank) {
  socklen_t len = 0;
  auto addr = gd::shm_rendezvous::address(o, len);
  for (;;) {
    int fd = ::socket(AF_UNIX, SOCK_SEQPACKET, 0);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), len) == 0) {
      gd::shm_hello h;
      h.rank = rank;
      h.size = o.size;
      h.token_check = gd::shm_token_hash("gcl-shm-check:", o.token);
      if (::send(fd, &h, sizeof h, 0) != static_cast<ssize_t>(sizeof h)) ::_exit(3);
      return fd;
    }
    ::close(fd);
    std::this_thread::sleep_for(1ms);
  }
}

}  // namespace

// Rank 0 (real) waits for a job of 4; ranks 1 and 2 (stand-ins) join, then rank 2 is killed and
// rank 3 never comes. Rank 0 notices rank 2's socket hang up, fails naming it, and tells rank 1,
// which has joined and waits for the segment, why the job cannot form.
BOOST_AUTO_TEST_CASE(a_rank_killed_during_the_setup_is_noticed_by_its_hang_up) {
  gcl_test::temp_dir dir;
  auto const o = setup_options(4);
  pid_t rank0 = gcl_test::start_rank(dir, o, 0, [](auto&) { return std::string("formed"); });
  // Rank 1 joins first (rank 0 accepts in order of connection, so it is admitted before rank
  // 2), then reports the welcome it gets.
  auto [rank1, from1] = child([&](int report) {
    int fd = join_as(o, 1);
    (void)!::write(report, "j", 1);
    gd::shm_welcome w;
    ssize_t n = ::recv(fd, &w, sizeof w, 0);
    w.why[sizeof w.why - 1] = '\0';
    std::string got = n == static_cast<ssize_t>(sizeof w)
                          ? "accepted=" + std::to_string(w.accepted) + " why=" + w.why
                          : "no welcome (" + std::to_string(n) + ")";
    (void)!::write(report, got.data(), got.size());
  });
  await_byte(from1);
  auto [rank2, from2] = child([&](int report) {
    (void)join_as(o, 2);
    (void)!::write(report, "j", 1);
    for (;;) ::pause();
  });
  await_byte(from2);
  ::kill(rank2, SIGKILL);
  ::waitpid(rank2, nullptr, 0);
  ::close(from2);

  auto out0 = gcl_test::finish_rank(dir, rank0, 0);
  BOOST_TEST_INFO("rank 0 said: " << out0.error);
  BOOST_TEST(out0.exited_with(1));
  BOOST_TEST(out0.error.find("rank 2 (pid " + std::to_string(rank2) + ") died during the setup") !=
             std::string::npos);
  BOOST_TEST(out0.error.find("timed out") == std::string::npos);
  auto welcome1 = read_all(from1);
  ::waitpid(rank1, nullptr, 0);
  BOOST_TEST_INFO("rank 1 was told: " << welcome1);
  BOOST_TEST(welcome1.find("accepted=2 why=rank 2 (pid") != std::string::npos);
  BOOST_TEST_MESSAGE("rank 0: " << out0.error);
}

// Rank 1 (real) joins rank 0 (a stand-in), which is killed before it hands out the segment:
// rank 1 notices the hang-up and says so. And when rank 0 says that the setup failed (another
// rank died), rank 1 fails with that reason.
BOOST_AUTO_TEST_CASE(rank_0_killed_during_the_setup_is_noticed_by_its_hang_up) {
  for (bool killed : {true, false}) {
    gcl_test::temp_dir dir;
    auto const o = setup_options(3);
    auto [leader, from0] = child([&](int report) {
      socklen_t len = 0;
      auto addr = gd::shm_rendezvous::address(o, len);
      int l = ::socket(AF_UNIX, SOCK_SEQPACKET, 0);
      if (::bind(l, reinterpret_cast<sockaddr*>(&addr), len) != 0 || ::listen(l, 8) != 0)
        ::_exit(3);
      int c = ::accept(l, nullptr, nullptr);
      gd::shm_hello h;
      if (::recv(c, &h, sizeof h, 0) != static_cast<ssize_t>(sizeof h) || h.rank != 1) ::_exit(4);
      if (!killed) {
        gd::shm_welcome w;
        w.accepted = gd::shm_setup_failed;
        std::snprintf(w.why, sizeof w.why, "rank 2 (pid 12345) died during the setup");
        (void)::send(c, &w, sizeof w, 0);
      }
      (void)!::write(report, "j", 1);
      for (;;) ::pause();
    });
    pid_t rank1 = gcl_test::start_rank(dir, o, 1, [](auto&) { return std::string("formed"); });
    await_byte(from0);
    if (killed) ::kill(leader, SIGKILL);
    auto out1 = gcl_test::finish_rank(dir, rank1, 1);
    ::kill(leader, SIGKILL);
    ::waitpid(leader, nullptr, 0);
    ::close(from0);
    BOOST_TEST_INFO((killed ? "rank 0 killed" : "rank 0 says rank 2 died")
                    << ": rank 1 said: " << out1.error);
    BOOST_TEST(out1.exited_with(1));
    BOOST_TEST(out1.error.find(killed ? "rank 0 died or left during the setup"
                                      : "the shm job's setup failed: rank 2 (pid 12345) died") !=
               std::string::npos);
    BOOST_TEST(out1.error.find("timed out") == std::string::npos);
    BOOST_TEST_MESSAGE("rank 1: " << out1.error);
  }
}
