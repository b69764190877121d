#define BOOST_TEST_MODULE transport_tcp_collectives
#include <boost/test/unit_test.hpp>

// Every collective with every algorithm that implements it, over TCP (threads on loopback)
// and over inproc, on the same inputs: the results must be bit-identical.

#include <gcl/spawn.hpp>
#include <gcl/transport/inproc.hpp>
#include <gcl/transport/tcp.hpp>

#include <chrono>
#include <cstring>

#include "../support/every_collective.hpp"

using gcl_test::run_all;

namespace {

void expect_inproc_bits(int p, gcl::tcp_options const& o) {
  auto want = gcl::spawn<gcl::inproc_transport>(p, [](auto& comm) { return run_all(comm); });
  auto got = gcl::spawn<gcl::tcp_transport>(
      p, [](auto& comm) { return run_all(comm); }, o);
  BOOST_TEST_MESSAGE("P=" << p << ": " << got[0].size() << " results per rank compared");
  BOOST_TEST(got[0].size() > 100u);
  for (int r = 0; r < p; ++r) {
    BOOST_TEST_REQUIRE(got[r].size() == want[r].size(), "P=" << p << " rank " << r);
    for (std::size_t k = 0; k < got[r].size(); ++k) {
      auto const& [name, g] = got[r][k];
      auto const& w = want[r][k].second;
      BOOST_TEST_INFO("P=" << p << " rank " << r << ": " << name);
      BOOST_TEST_REQUIRE(name == want[r][k].first);
      BOOST_TEST_REQUIRE(g.size() == w.size());
      BOOST_TEST((g.empty() || std::memcmp(g.data(), w.data(), g.size() * sizeof(float)) == 0));
    }
  }
}

}  // namespace

BOOST_AUTO_TEST_CASE(every_collective_and_algorithm_is_bit_identical_to_inproc) {
  gcl::tcp_options o;
  o.timeout = std::chrono::seconds{30};
  for (int p : {1, 2, 3, 4, 5, 8}) expect_inproc_bits(p, o);
}

BOOST_AUTO_TEST_CASE(the_same_when_the_ranks_poll) {
  // Ranks that poll (spin: each has a core of its own under a launcher) read the socket they
  // wait on themselves and keep their I/O thread resting meanwhile. P = 4: more ranks than this
  // machine's cores, polling by yielding.
  gcl::tcp_options o;
  o.timeout = std::chrono::seconds{30};
  o.spin = std::chrono::microseconds{50};
  for (int p : {2, 3, 4}) expect_inproc_bits(p, o);
}
