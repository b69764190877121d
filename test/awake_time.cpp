// A wait measured in time its own process was seen to run (detail/awake_time.hpp): what the TCP
// transport's timeout report gives its peers to answer, so that a rank frozen with the whole job
// does not call its live peers silent.
#define BOOST_TEST_MODULE awake_time
#include <boost/test/unit_test.hpp>

#include <gcl/detail/awake_time.hpp>

#include <chrono>

using gcl::detail::awake_time;
using namespace std::chrono_literals;

namespace {
auto const t0 = awake_time::clock::time_point{} + 1000s;
auto const stall = 100ms;
}  // namespace

BOOST_AUTO_TEST_CASE(looks_on_time_count_the_whole_wait) {
  awake_time a(t0, stall);
  BOOST_TEST((a.counted() == 0ms));
  a.look(t0 + 50ms);
  a.look(t0 + 100ms);
  a.look(t0 + 190ms);  // 90 ms late is still within the stall bound
  BOOST_TEST((a.counted() == 190ms));
}

BOOST_AUTO_TEST_CASE(a_gap_longer_than_the_stall_bound_counts_nothing) {
  awake_time a(t0, stall);
  a.look(t0 + 50ms);
  a.look(t0 + 2050ms);  // frozen for two seconds: none of it counts
  BOOST_TEST((a.counted() == 50ms));
  a.look(t0 + 2100ms);  // counting goes on from the late look, not from before the stall
  BOOST_TEST((a.counted() == 100ms));
}

BOOST_AUTO_TEST_CASE(a_gap_in_which_the_helpers_did_not_run_counts_nothing) {
  awake_time a(t0, stall);
  a.look(t0 + 50ms, false);  // the I/O thread was starved: its answers could not be read
  BOOST_TEST((a.counted() == 0ms));
  a.look(t0 + 100ms, true);
  BOOST_TEST((a.counted() == 50ms));
}

BOOST_AUTO_TEST_CASE(a_look_at_the_same_or_an_earlier_time_counts_nothing) {
  awake_time a(t0, stall);
  a.look(t0 + 50ms);
  a.look(t0 + 50ms);
  a.look(t0 + 20ms);
  BOOST_TEST((a.counted() == 50ms));
  a.look(t0 + 60ms);  // from the latest look, 50 ms
  BOOST_TEST((a.counted() == 60ms));
}
