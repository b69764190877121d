#define BOOST_TEST_MODULE transport_shm_failures
#include <boost/test/unit_test.hpp>

// What a rank that is killed (SIGKILL) or stopped (SIGSTOP) does to a shm job of processes
// forked from this test, in an all_reduce loop: the others fail with an error that names it --
// a killed rank at once (its sockets hang up; the timeout, 60 s, is only a hang guard), a
// stopped one when their timeout (3 s) runs out -- and /dev/shm is as it was. A rank's error is
// checked for who it blames, never for how long it took; timing-dependent only in that a
// loaded machine must not hold a live rank up for 3 s (excluded from the sanitizer suites).

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gcl/algorithm/ring.hpp>
#include <gcl/collective/all_reduce.hpp>
#include <gcl/transport/shm.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
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
  for (int r = 0; r < size; ++r)
    while (!std::filesystem::exists(dir.file(r, ".started"))) {
      int status = 0;
      if (::waitpid(pids[r], &status, WNOHANG) == pids[r])
        BOOST_FAIL("rank " << r << " ended before it started: " << gcl_test::read_file(dir.file(r, ".err")));
      std::this_thread::sleep_for(10ms);
    }
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
      BOOST_TEST_INFO("P=" << size << ", rank " << victim << " killed: rank " << r << " said: " << out.error);
      BOOST_TEST(out.exited_with(1));
      BOOST_TEST(out.error.find("rank " + std::to_string(victim)) != std::string::npos);
      BOOST_TEST(out.error.find("timed out") == std::string::npos);
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
      BOOST_TEST_INFO("rank 2 stopped, " << count << " floats: rank " << r << " said: " << out.error);
      BOOST_TEST(out.exited_with(1));
      BOOST_TEST(out.error.find("rank 2 does not answer") != std::string::npos);
      BOOST_TEST_MESSAGE("rank " << r << ": " << out.error.substr(0, 300));
    }
    ::kill(pids[2], SIGKILL);
    (void)gcl_test::finish_rank(dir, pids[2], 2);
  }
}
