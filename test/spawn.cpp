#define BOOST_TEST_MODULE spawn
#include <boost/test/unit_test.hpp>

#include <gcl/spawn.hpp>
#include <gcl/transport/inproc.hpp>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

using gcl::inproc_transport;
using namespace std::chrono_literals;

namespace {
bool contains(std::string const& s, std::string const& part) {
  return s.find(part) != std::string::npos;
}
}  // namespace

BOOST_AUTO_TEST_CASE(results_are_indexed_by_rank) {
  for (int n : {1, 2, 3, 4, 5, 7, 8}) {
    auto out = gcl::spawn<inproc_transport>(n, [](auto& comm) {
      return std::string(static_cast<std::size_t>(comm.rank()) + 1,
                         'a' + static_cast<char>(comm.rank()));
    });
    BOOST_TEST_REQUIRE(out.size() == static_cast<std::size_t>(n));
    for (int r = 0; r < n; ++r)
      BOOST_TEST(out[r] ==
                 std::string(static_cast<std::size_t>(r) + 1, 'a' + static_cast<char>(r)));
  }
}

BOOST_AUTO_TEST_CASE(void_function_runs_once_per_rank) {
  std::atomic<int> calls{0}, rank_sum{0};
  gcl::spawn<inproc_transport>(7, [&](auto& comm) {
    ++calls;
    rank_sum += comm.rank();
  });
  BOOST_TEST(calls.load() == 7);
  BOOST_TEST(rank_sum.load() == 0 + 1 + 2 + 3 + 4 + 5 + 6);
}

BOOST_AUTO_TEST_CASE(results_of_a_move_only_type) {
  auto out = gcl::spawn<inproc_transport>(
      3, [](auto& comm) { return std::make_unique<int>(comm.rank() * 10); });
  BOOST_TEST(*out[0] == 0);
  BOOST_TEST(*out[2] == 20);
}

// Every other rank is blocked in recv with a 60 s timeout when one rank throws: spawn must
// rethrow the thrower's error, and every blocked rank must have been released by the abort
// (errc::aborted naming the failed rank and its error), not by its own timeout (errc::timeout).
// What is asserted is who reported what, never how fast: a loaded machine cannot break it.
BOOST_AUTO_TEST_CASE(a_throwing_rank_releases_ranks_blocked_in_recv_by_abort) {
  for (int n : {2, 4, 8}) {
    // What each rank's recv threw; each rank writes only its own slot (Boost.Test's assertions
    // are not thread-safe, so the main thread checks them after spawn).
    std::vector<std::string> seen(static_cast<std::size_t>(n));
    auto f = [&](auto& comm) {
      if (comm.rank() == n - 1) {
        std::this_thread::sleep_for(50ms);  // most likely the others block first; either way
        throw std::runtime_error("boom");   // they must see the abort
      }
      try {
        comm.template recv<int>(n - 1);
      } catch (gcl::transport_error const& e) {
        seen[comm.rank()] =
            (e.code() == gcl::errc::aborted ? "aborted: " : "other: ") + std::string(e.what());
        throw;
      }
    };
    BOOST_CHECK_EXCEPTION(gcl::spawn<inproc_transport>(n, f, {.timeout = 60s}), std::runtime_error,
                          [](auto const& e) { return std::string(e.what()) == "boom"; });
    std::string const cause = "rank " + std::to_string(n - 1) + " failed: boom";
    for (int r = 0; r < n - 1; ++r) {
      BOOST_TEST(seen[r].starts_with("aborted: "), "n=" << n << " rank " << r << ": " << seen[r]);
      BOOST_TEST(contains(seen[r], cause), "n=" << n << " rank " << r << ": " << seen[r]);
    }
  }
}

BOOST_AUTO_TEST_CASE(the_first_real_error_wins_over_aborted_ones_and_later_errors) {
  // Rank 1 fails first. Ranks 0 and 2 are released with errc::aborted; rank 2 then throws an
  // error of its own. spawn must rethrow rank 1's error, not an abort and not rank 2's.
  auto f = [](auto& comm) {
    if (comm.rank() == 1) throw std::invalid_argument("rank 1: the first failure");
    try {
      comm.template recv<int>(1);
    } catch (gcl::transport_error const& e) {
      if (comm.rank() == 2 && e.code() == gcl::errc::aborted)
        throw std::logic_error("rank 2: a consequence");
      throw;
    }
  };
  for (int i = 0; i < 20; ++i)
    BOOST_CHECK_EXCEPTION(
        gcl::spawn<inproc_transport>(3, f), std::invalid_argument,
        [](auto const& e) { return std::string(e.what()) == "rank 1: the first failure"; });
}

BOOST_AUTO_TEST_CASE(a_timeout_is_a_real_error_and_aborts_the_peer) {
  // Both ranks wait for each other: the first to time out fails for real and aborts the other,
  // so spawn rethrows the timeout, not the abort it caused.
  BOOST_CHECK_EXCEPTION(
      gcl::spawn<inproc_transport>(2, [](auto& comm) { comm.template recv<int>(1 - comm.rank()); },
                                   {.timeout = 100ms}),
      gcl::transport_error, [](auto const& e) { return e.code() == gcl::errc::timeout; });
}

BOOST_AUTO_TEST_CASE(an_exception_not_derived_from_std_exception_is_rethrown) {
  BOOST_CHECK_EXCEPTION(gcl::spawn<inproc_transport>(3,
                                                     [](auto& comm) {
                                                       if (comm.rank() == 0) throw 42;
                                                       comm.template recv<int>(0);
                                                     }),
                        int, [](int v) { return v == 42; });
}

BOOST_AUTO_TEST_CASE(fewer_than_one_rank_is_a_usage_error) {
  for (int n : {0, -1, -100}) {
    bool called = false;
    BOOST_CHECK_EXCEPTION(gcl::spawn<inproc_transport>(n, [&](auto&) { called = true; }),
                          gcl::usage_error, [n](auto const& e) {
                            return contains(e.what(), "at least one rank") &&
                                   contains(e.what(), std::to_string(n));
                          });
    BOOST_TEST(!called);
  }
}

BOOST_AUTO_TEST_CASE(options_reach_the_transport) {
  // The error names the configured 150 ms: the default timeout would name its own value. (No
  // bound on how long it took: the text already proves which timeout fired.)
  BOOST_CHECK_EXCEPTION(gcl::spawn<inproc_transport>(
                            1, [](auto& comm) { comm.template recv<int>(0); }, {.timeout = 150ms}),
                        gcl::transport_error, [](auto const& e) {
                          BOOST_TEST_MESSAGE(e.what());
                          return e.code() == gcl::errc::timeout && contains(e.what(), "150 ms");
                        });
}
