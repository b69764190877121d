// Ranks that disagree about a collective fail with errc::mismatch, whoever sent the message and
// whether or not the receiver was about to read it; a collective that times out names the ranks
// that hold it up. Over every call-aware transport, at several world sizes.
//
// Every timeout here is long (60 s) where a mismatch is expected, so that only the mismatch
// check, not a timeout, can end those jobs; and short where a timeout is the point.
#define BOOST_TEST_MODULE transport_call_checks
#include <boost/test/unit_test.hpp>

#include <gcl/gcl.hpp>
#if __has_include(<boost/asio.hpp>) && defined(GCL_TEST_TCP)
#include <gcl/transport/tcp.hpp>
#endif

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;

namespace {

bool contains(std::string const& s, std::string const& part) {
  return s.find(part) != std::string::npos;
}

template <class Transport>
typename Transport::options with_timeout(std::chrono::milliseconds t) {
  typename Transport::options o;
  o.timeout = t;
  return o;
}

// Runs f on p ranks; returns the error spawn rethrew (the test fails if there was none).
template <class Transport, class F>
gcl::transport_error run_expecting_error(int p, std::chrono::milliseconds timeout, F f) {
  try {
    gcl::spawn<Transport>(p, f, with_timeout<Transport>(timeout));
  } catch (gcl::transport_error const& e) {
    BOOST_TEST_MESSAGE("P=" << p << ": " << e.what());
    return e;
  }
  BOOST_ERROR("P=" << p << ": the job succeeded, but its ranks disagreed or one held it up");
  return gcl::transport_error(gcl::errc::protocol, "no error");
}

template <class Transport>
void different_roots(int p) {
  // Half the ranks broadcast from root 0, the others from root 1. At P = 2 each rank believes
  // it is the root: both only send, and neither reads the other's message.
  auto e = run_expecting_error<Transport>(p, 60s, [](auto& comm) {
    std::vector<int> v(10, comm.rank());
    gcl::broadcast(comm, v, comm.rank() % 2);
    gcl::barrier(comm);  // a later call, as a program has; the disagreement may surface here
  });
  BOOST_TEST((e.code() == gcl::errc::mismatch), "P=" << p << ": " << e.what());
  BOOST_TEST(contains(e.what(), "root 0"), e.what());
  BOOST_TEST(contains(e.what(), "root 1"), e.what());
  BOOST_TEST(contains(e.what(), "ranks disagree about the call"), e.what());
}

template <class Transport>
void different_roots_as_the_last_call(int p) {
  // Nothing after the broadcast: the disagreement must still not pass for a success.
  auto e = run_expecting_error<Transport>(p, 60s, [](auto& comm) {
    std::vector<int> v(10, comm.rank());
    gcl::broadcast(comm, v, comm.rank() % 2);
  });
  BOOST_TEST((e.code() == gcl::errc::mismatch), "P=" << p << ": " << e.what());
  BOOST_TEST(contains(e.what(), "broadcast #1"), e.what());
}

template <class Transport>
void different_collectives(int p) {
  // Rank 0 broadcasts while the others all-reduce: rank 0's message reaches ranks that were not
  // going to read anything from rank 0 at that step.
  auto e = run_expecting_error<Transport>(p, 60s, [](auto& comm) {
    std::vector<int> v(16, 1);
    gcl::all_reduce(comm, v, gcl::sum{});  // #1: agreed
    if (comm.rank() == 0)
      gcl::broadcast(comm, v, 0);
    else
      gcl::all_reduce(comm, v, gcl::sum{}, gcl::ring{});
    gcl::barrier(comm);
  });
  BOOST_TEST((e.code() == gcl::errc::mismatch), "P=" << p << ": " << e.what());
  BOOST_TEST(contains(e.what(), "#2"), e.what());
  BOOST_TEST((contains(e.what(), "broadcast") && contains(e.what(), "all_reduce")), e.what());
}

template <class Transport>
void different_reduce_roots(int p) {
  auto e = run_expecting_error<Transport>(p, 60s, [](auto& comm) {
    std::vector<int> v(4, 1);
    gcl::reduce(comm, v, comm.rank() == comm.size() - 1 ? 1 : 0, gcl::sum{});
    gcl::barrier(comm);
  });
  BOOST_TEST((e.code() == gcl::errc::mismatch), "P=" << p << ": " << e.what());
}

// The last rank calls one collective more than the others, which have returned and ended their
// transports: it must learn that nobody else will ever call it (a mismatch naming the call),
// not wait out the timeout or blame a lost peer.
template <class Transport>
void one_rank_calls_one_more_collective(int p) {
  auto e = run_expecting_error<Transport>(p, 60s, [](auto& comm) {
    std::vector<int> v(8, 1);
    gcl::all_reduce(comm, v, gcl::sum{});
    if (comm.rank() == comm.size() - 1) gcl::all_reduce(comm, v, gcl::sum{});
  });
  BOOST_TEST((e.code() == gcl::errc::mismatch), "P=" << p << ": " << e.what());
  BOOST_TEST(contains(e.what(), "all_reduce #2"), e.what());
  BOOST_TEST(contains(e.what(), "ended its job after collective #1"), e.what());
}

// Rank `stuck` is busy elsewhere (outside any gcl call) instead of entering the second
// all_reduce; the others time out in it and must name rank `stuck`. It stays busy until another
// rank has failed, not for a fixed time: were it itself waiting on something with the same
// timeout (a receive nobody answers), its own error could come first on a loaded machine and be
// the one reported; were it busy for a fixed time, a slow enough machine could let it join the
// call and the job succeed.
template <class Transport>
void a_held_up_collective_names_the_rank(int p, int stuck) {
  std::atomic<bool> another_failed{false};
  auto e = run_expecting_error<Transport>(p, 1500ms, [stuck, &another_failed](auto& comm) {
    std::vector<int> v(8, 1);
    gcl::all_reduce(comm, v, gcl::sum{});
    if (comm.rank() == stuck) {
      for (auto until = std::chrono::steady_clock::now() + 120s;
           !another_failed.load() && std::chrono::steady_clock::now() < until;)
        std::this_thread::sleep_for(10ms);
      // Then waits where only the job's abort (spawn's, after that failure) ends it: returning
      // now would end its transport, which a peer still in the call could report first.
      int x = 0;
      comm.recv((stuck + 1) % comm.size(), x, gcl::tag{5});  // never sent
      return;
    }
    try {
      gcl::all_reduce(comm, v, gcl::sum{});
    } catch (...) {
      another_failed = true;
      throw;
    }
  });
  BOOST_TEST((e.code() == gcl::errc::timeout), e.what());
  BOOST_TEST(contains(e.what(), "rank " + std::to_string(stuck) + " has not started all_reduce #2"),
             e.what());
  BOOST_TEST(contains(e.what(), "(its last collective is #1)"), e.what());
  BOOST_TEST(contains(e.what(), "waiting in it"), e.what());
}

}  // namespace

BOOST_AUTO_TEST_CASE(inproc_different_roots_are_a_mismatch) {
  for (int p : {2, 3, 4, 8}) different_roots<gcl::inproc_transport>(p);
}
BOOST_AUTO_TEST_CASE(inproc_different_roots_in_the_last_call_are_a_mismatch) {
  for (int p : {2, 4, 8}) different_roots_as_the_last_call<gcl::inproc_transport>(p);
}
BOOST_AUTO_TEST_CASE(inproc_different_collectives_are_a_mismatch) {
  for (int p : {2, 4, 8}) different_collectives<gcl::inproc_transport>(p);
}
BOOST_AUTO_TEST_CASE(inproc_different_reduce_roots_are_a_mismatch) {
  for (int p : {2, 4, 8}) different_reduce_roots<gcl::inproc_transport>(p);
}
BOOST_AUTO_TEST_CASE(inproc_one_more_collective_on_one_rank_is_a_mismatch) {
  for (int p : {2, 4, 8}) one_rank_calls_one_more_collective<gcl::inproc_transport>(p);
}
BOOST_AUTO_TEST_CASE(inproc_timeout_names_the_rank_that_holds_the_call_up) {
  a_held_up_collective_names_the_rank<gcl::inproc_transport>(4, 2);
  a_held_up_collective_names_the_rank<gcl::inproc_transport>(2, 0);
}

#ifdef GCL_TEST_TCP
BOOST_AUTO_TEST_CASE(tcp_different_roots_are_a_mismatch) {
  for (int p : {2, 3, 4, 8}) different_roots<gcl::tcp_transport>(p);
}
BOOST_AUTO_TEST_CASE(tcp_different_roots_in_the_last_call_are_a_mismatch) {
  for (int p : {2, 4, 8}) different_roots_as_the_last_call<gcl::tcp_transport>(p);
}
BOOST_AUTO_TEST_CASE(tcp_different_collectives_are_a_mismatch) {
  for (int p : {2, 4, 8}) different_collectives<gcl::tcp_transport>(p);
}
BOOST_AUTO_TEST_CASE(tcp_different_reduce_roots_are_a_mismatch) {
  for (int p : {2, 4, 8}) different_reduce_roots<gcl::tcp_transport>(p);
}
BOOST_AUTO_TEST_CASE(tcp_one_more_collective_on_one_rank_is_a_mismatch) {
  for (int p : {2, 4, 8}) one_rank_calls_one_more_collective<gcl::tcp_transport>(p);
}
BOOST_AUTO_TEST_CASE(tcp_timeout_names_the_rank_that_holds_the_call_up) {
  a_held_up_collective_names_the_rank<gcl::tcp_transport>(4, 2);
  a_held_up_collective_names_the_rank<gcl::tcp_transport>(2, 0);
}
#endif
