#define BOOST_TEST_MODULE spread_over_cpus
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

// Ranks that outnumber the CPUs start spread over them, and ranks that do not start on CPUs of
// their own (detail/spread_over_cpus.hpp): the choice of CPU, the off switch, and that it is a
// placement and never a binding (each rank's thread may run on every CPU it could before),
// through spawn and through shm's setup.

#include <sched.h>
#include <stdlib.h>

#include <gcl/collective/all_reduce.hpp>
#include <gcl/detail/spread_over_cpus.hpp>
#include <gcl/spawn.hpp>
#include <gcl/transport/inproc.hpp>
#include <gcl/transport/shm.hpp>

#include <chrono>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "support/error_of.hpp"

namespace {

cpu_set_t allowed_cpus() {
  cpu_set_t s;
  CPU_ZERO(&s);
  BOOST_TEST_REQUIRE(sched_getaffinity(0, sizeof s, &s) == 0);
  return s;
}

std::vector<int> cpu_list(cpu_set_t const& s) {
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &s)) cpus.push_back(c);
  return cpus;
}

// Runs `f` on a thread of its own, so that what it does to its affinity stays there.
template <class F>
void on_a_thread(F f) {
  std::thread t(f);
  t.join();
}

using gcl_test::error_of;

}  // namespace

BOOST_AUTO_TEST_CASE(gcl_spread_is_0_or_1_and_on_by_default) {
  BOOST_TEST(gcl::detail::spread_ranks_from(nullptr));
  BOOST_TEST(gcl::detail::spread_ranks_from(""));
  BOOST_TEST(gcl::detail::spread_ranks_from("1"));
  BOOST_TEST(!gcl::detail::spread_ranks_from("0"));
  for (char const* bad : {"yes", "2", " 0", "off"}) {
    auto what = error_of([&] { (void)gcl::detail::spread_ranks_from(bad); });
    BOOST_TEST(what.find("GCL_SPREAD='" + std::string(bad) + "'") != std::string::npos, what);
  }
}

BOOST_AUTO_TEST_CASE(rank_i_starts_on_the_i_mod_n_th_allowed_cpu_and_stays_free) {
  auto const before = allowed_cpus();
  auto const cpus = cpu_list(before);
  if (cpus.size() < 2) {
    BOOST_TEST_MESSAGE("one CPU: nothing to spread over");
    BOOST_TEST(gcl::detail::spread_over_cpus(0, 8) == -1);
    return;
  }
  int const n = static_cast<int>(cpus.size());
  for (int count : {n + 1, 2 * n, 4 * n + 3})
    for (int i = 0; i < count; ++i)
      on_a_thread([&] {
        BOOST_TEST(gcl::detail::spread_over_cpus(i, count) ==
                   cpus[static_cast<std::size_t>(i % n)]);
        auto after = allowed_cpus();
        BOOST_TEST(CPU_EQUAL(&after, &before), "rank " << i << " of " << count << " was bound");
      });
  // No more ranks than CPUs: nothing is done here (move_apart keeps those apart).
  for (int count : {1, n})
    on_a_thread([&] {
      BOOST_TEST(gcl::detail::spread_over_cpus(count - 1, count) == -1);
      auto after = allowed_cpus();
      BOOST_TEST(CPU_EQUAL(&after, &before));
    });
  // A thread bound to one CPU (by a launcher, or by its user) stays where it is.
  on_a_thread([&] {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpus.back(), &one);
    BOOST_TEST_REQUIRE(sched_setaffinity(0, sizeof one, &one) == 0);
    BOOST_TEST(gcl::detail::spread_over_cpus(0, 4 * n) == -1);
    auto after = allowed_cpus();
    BOOST_TEST(CPU_EQUAL(&after, &one));
  });
}

// No more ranks than CPUs: the lowest rank on a CPU stays, the others on it take, in rank order,
// the CPUs no rank is on; with none left, or where is unknown, or one CPU allowed, they stay.
BOOST_AUTO_TEST_CASE(ranks_that_share_a_cpu_move_apart_to_free_ones) {
  using gcl::detail::cpu_apart;
  auto apart = [](std::vector<int> where, std::vector<int> allowed) {
    std::vector<int> to;
    for (int r = 0; r < static_cast<int>(where.size()); ++r)
      to.push_back(cpu_apart(r, where, allowed));
    return to;
  };
  using v = std::vector<int>;
  BOOST_TEST(apart({0, 0}, {0, 1}) == v({-1, 1}), boost::test_tools::per_element());
  BOOST_TEST(apart({1, 1}, {0, 1}) == v({-1, 0}), boost::test_tools::per_element());
  BOOST_TEST(apart({0, 1}, {0, 1}) == v({-1, -1}), boost::test_tools::per_element());
  BOOST_TEST(apart({3, 3, 3, 5}, {2, 3, 4, 5, 6}) == v({-1, 2, 4, -1}),
             boost::test_tools::per_element());
  BOOST_TEST(apart({1, 2, 1, 2}, {0, 1, 2, 3}) == v({-1, -1, 0, 3}),
             boost::test_tools::per_element());
  // A CPU outside the allowed ones (the mask changed meanwhile) is a CPU like another.
  BOOST_TEST(apart({7, 7}, {0, 1}) == v({-1, 0}), boost::test_tools::per_element());
  // No free CPU left: the third stays where it is.
  BOOST_TEST(apart({0, 1, 1}, {0, 1}) == v({-1, -1, -1}), boost::test_tools::per_element());
  BOOST_TEST(apart({0, 0, 0}, {0, 1}) == v({-1, 1, -1}), boost::test_tools::per_element());
  // Unknown CPUs (-1) share nothing.
  BOOST_TEST(apart({-1, -1}, {0, 1}) == v({-1, -1}), boost::test_tools::per_element());
  // A rank bound to one CPU stays.
  BOOST_TEST(apart({0, 0}, {0}) == v({-1, -1}), boost::test_tools::per_element());
  BOOST_TEST(cpu_apart(2, std::vector<int>{0, 0}, std::vector<int>{0, 1}) == -1);
}

// A thread that moves apart lands on the CPU cpu_apart named and keeps every CPU it had.
BOOST_AUTO_TEST_CASE(moving_apart_is_a_placement) {
  auto const before = allowed_cpus();
  auto const cpus = cpu_list(before);
  if (cpus.size() < 2) {
    BOOST_TEST_MESSAGE("one CPU: nowhere to move");
    return;
  }
  on_a_thread([&] {
    // Both "ranks" on the first CPU: rank 1 moves to the second.
    std::vector<int> where{cpus[0], cpus[0]};
    BOOST_TEST(gcl::detail::move_apart(0, where) == -1);
    BOOST_TEST(gcl::detail::move_apart(1, where) == cpus[1]);
    auto after = allowed_cpus();
    BOOST_TEST(CPU_EQUAL(&after, &before), "the thread was left bound");
  });
}

// More rank threads than CPUs, and as many, through spawn (inproc) and through shm's own setup
// (a group of threads, each with the transport a process would have): every rank computes the
// right sum, and its thread may still run on every CPU the process may.
BOOST_DATA_TEST_CASE(spawned_and_shm_ranks_are_placed_not_bound,
                     boost::unit_test::data::make({0, 1}), crowded) {
  auto const process = allowed_cpus();
  auto const cpus = static_cast<int>(cpu_list(process).size());
  int const p = crowded ? 2 * cpus + 1 : cpus;
  // Boost.Test's assertions are for one thread at a time: the ranks write down what they saw.
  std::mutex m;
  std::vector<int> bound, wrong;
  auto check = [&](auto& comm) {
    std::vector<float> v(5, static_cast<float>(comm.rank() + 1));
    gcl::all_reduce(comm, std::span<float>(v), gcl::sum{});
    cpu_set_t mine;
    CPU_ZERO(&mine);
    bool const free = sched_getaffinity(0, sizeof mine, &mine) == 0 && CPU_EQUAL(&mine, &process);
    std::lock_guard lock(m);
    if (!free) bound.push_back(comm.rank());
    for (float x : v)
      if (x != static_cast<float>(p * (p + 1) / 2)) wrong.push_back(comm.rank());
  };
  gcl::spawn<gcl::inproc_transport>(p, check);
  BOOST_TEST(bound.empty(), "inproc ranks left bound: " << bound.size());
  BOOST_TEST(wrong.empty());
  gcl::shm_options o;
  o.timeout = std::chrono::seconds{30};
  o.spread_ranks = true;
  gcl::shm_transport::group g(p, o);
  {
    std::vector<std::jthread> ranks;
    for (int r = 0; r < p; ++r)
      ranks.emplace_back([&, r] {
        gcl::communicator comm(g.connect(r));
        check(comm);
      });
  }
  BOOST_TEST(bound.empty(), "shm ranks left bound: " << bound.size());
  BOOST_TEST(wrong.empty());
}

// A wrong GCL_SPREAD stops spawn before any rank starts, naming the variable.
BOOST_AUTO_TEST_CASE(spawn_refuses_a_wrong_gcl_spread) {
  BOOST_TEST_REQUIRE(setenv("GCL_SPREAD", "maybe", 1) == 0);
  int ran = 0;
  auto what = error_of([&] { gcl::spawn<gcl::inproc_transport>(3, [&](auto&) { ++ran; }); });
  BOOST_TEST_REQUIRE(unsetenv("GCL_SPREAD") == 0);
  BOOST_TEST(what.find("GCL_SPREAD='maybe'") != std::string::npos, what);
  BOOST_TEST(ran == 0);
}
