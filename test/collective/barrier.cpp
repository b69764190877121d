#define BOOST_TEST_MODULE collective_barrier
#include <gcl/algorithm/tree.hpp>
#include <gcl/collective/barrier.hpp>
#include <gcl/collective/broadcast.hpp>
#include <gcl/collective/reduce.hpp>

#include <atomic>
#include <chrono>
#include <thread>

#include "support.hpp"

using namespace gcl_test;

BOOST_AUTO_TEST_CASE(nobody_leaves_before_everybody_arrived) {
  for (int p : world_sizes)
    for (int late : {0, p - 1}) {
      std::atomic<int> arrived{0};
      run(p, "P=" + std::to_string(p) + " late=" + std::to_string(late), [&](auto& comm) {
        std::string err;
        // run() calls this once per transport: count this run's arrivals from 0. (A broken
        // barrier here could only make the count lower, so it cannot hide a failure below.)
        if (comm.rank() == 0) arrived.store(0);
        gcl::barrier(comm);
        for (int round = 1; round <= 3; ++round) {
          // One rank arrives late; nobody may pass the barrier before it has arrived.
          if (comm.rank() == late) std::this_thread::sleep_for(std::chrono::milliseconds(5));
          arrived.fetch_add(1);
          gcl::barrier(comm, gcl::tree{});
          if (arrived.load() < round * p)
            err += "round " + std::to_string(round) + ": left after " +
                   std::to_string(arrived.load()) + " arrivals; ";
          gcl::barrier(comm);  // so that nobody starts the next round's count early
        }
        return err;
      });
    }
}

BOOST_AUTO_TEST_CASE(a_barrier_against_another_collective_fails_or_times_out) {
  auto what = expect_mismatch_or_timeout(3, [](auto& comm) {
    if (comm.rank() == 2) {
      std::vector<int> v(1);
      gcl::broadcast(comm, v, 0, gcl::tree{});
    } else {
      gcl::barrier(comm);
    }
  });
  BOOST_TEST(
      (what.find("barrier") != std::string::npos || what.find("broadcast") != std::string::npos),
      what);
}

BOOST_AUTO_TEST_CASE(a_barrier_against_a_reduce_is_a_mismatch) {
  // Rank 1 sends its reduce message to rank 0, which is in the barrier: caught on receipt.
  auto what = expect_mismatch(2, [](auto& comm) {
    std::vector<int> v(1);
    if (comm.rank() == 1)
      gcl::reduce(comm, v, 0, gcl::sum{}, gcl::tree{});
    else
      gcl::barrier(comm);
  });
  BOOST_TEST(what.find("barrier") != std::string::npos, what);
  BOOST_TEST(what.find("reduce") != std::string::npos, what);
}
