#define BOOST_TEST_MODULE stats_tcp
#include <utility>  // before Boost.Asio (Boost 1.74's awaitable.hpp under C++20)

#include <boost/test/unit_test.hpp>

#include <gcl/algorithm/by_size.hpp>
#include <gcl/algorithm/direct.hpp>
#include <gcl/algorithm/halving_doubling.hpp>
#include <gcl/algorithm/recursive_doubling.hpp>
#include <gcl/algorithm/ring.hpp>
#include <gcl/algorithm/tree.hpp>
#include <gcl/collective/all_reduce.hpp>
#include <gcl/spawn.hpp>
#include <gcl/stats.hpp>
#include <gcl/transport/tcp.hpp>

#include <cstdint>
#include <vector>

// counting<> is generic over the transport: the same exact counts over TCP (loopback) as over
// threads, and the depth side messages travel through tcp's framing like any message.

using counted = gcl::counting<gcl::tcp_transport>;
static_assert(gcl::transport<counted>);
static_assert(gcl::group_transport<counted>);
static_assert(gcl::call_aware_transport<counted>);

namespace {
template <class Alg>
gcl::transport_stats run(int p, std::size_t n, Alg alg, bool& ok, gcl::tcp_options o = {}) {
  auto out = gcl::spawn<counted>(
      p,
      [&](auto& comm) {
        std::vector<std::int64_t> v(n, comm.rank() + 1);
        gcl::all_reduce(comm, v, gcl::sum{}, alg);
        bool good = true;
        for (auto x : v) good = good && x == p * (p + 1) / 2;
        return std::pair(good, comm.transport().stats());
      },
      o);
  gcl::transport_stats total;
  ok = true;
  for (auto const& [good, s] : out) {
    ok = ok && good;
    total += s;
  }
  return total;
}
}  // namespace

BOOST_AUTO_TEST_CASE(counts_over_tcp_equal_the_formulas) {
  for (int p : {1, 2, 3, 4, 5}) {
    std::uint64_t const P = static_cast<std::uint64_t>(p);
    int const q = p >= 4 ? 4 : p >= 2 ? 2 : 1, levels = q == 4 ? 2 : q == 2 ? 1 : 0;
    std::size_t const n = 1001;
    bool ok = false;
    auto t = run(p, n, gcl::tree{}, ok);
    BOOST_TEST(ok);
    BOOST_TEST(t.messages_sent == 2 * (P - 1));
    BOOST_TEST(t.bytes_sent == 2 * (P - 1) * n * 8);
    t = run(p, n, gcl::ring{}, ok);
    BOOST_TEST(ok);
    BOOST_TEST(t.messages_sent == 2 * P * (P - 1));
    BOOST_TEST(t.rounds == 2 * (p - 1));
    t = run(p, n, gcl::direct{}, ok);
    BOOST_TEST(ok);
    BOOST_TEST(t.messages_sent == P * (P - 1));
    BOOST_TEST(t.rounds == (p > 1 ? 1 : 0));
    t = run(p, n, gcl::halving_doubling{}, ok);
    BOOST_TEST(ok);
    BOOST_TEST(t.messages_sent == static_cast<std::uint64_t>(2 * q * levels + 2 * (p - q)));
    BOOST_TEST(t.rounds == 2 * levels + (p > q ? 2 : 0));
    t = run(p, n, gcl::ring{.segment_bytes = 800}, ok);
    BOOST_TEST(ok);
    BOOST_TEST(t.bytes_sent == 2 * (P - 1) * n * 8);
    BOOST_TEST(t.rounds == 2 * (p - 1));
  }
}

// The default all_reduce over TCP sends what recursive doubling sends below 64 KiB, and what
// halving-doubling sends from 64 KiB, unless the job's ranks share cores: then what the binomial
// tree sends (2(P - 1) messages; P = 4 and 5, where the three differ) below 1 MiB, and what
// halving-doubling sends from 1 MiB.
BOOST_AUTO_TEST_CASE(by_size_over_tcp_takes_the_tree_where_ranks_share_cores) {
  static_assert(gcl::tcp_transport::default_all_reduce.recursive_doubling_below == 64 * 1024);
  static_assert(gcl::tcp_transport::default_all_reduce.tree_below_if_cores_shared == 1024 * 1024);
  gcl::tcp_options shared;
  shared.shares_cores = true;
  std::size_t const small = 4, medium = (64 * 1024) / 8, below_large = (1024 * 1024) / 8 - 1,
                    large = (1024 * 1024) / 8;
  for (int p : {4, 5}) {
    BOOST_TEST_INFO("P=" << p);
    bool ok = false;
    auto const tree = run(p, small, gcl::tree{}, ok).messages_sent;
    auto const doubling = run(p, small, gcl::recursive_doubling{}, ok).messages_sent;
    auto const halving = run(p, medium, gcl::halving_doubling{}, ok).messages_sent;
    BOOST_TEST(tree != doubling);
    BOOST_TEST(tree != halving);
    for (std::size_t n : {small, medium, below_large}) {
      BOOST_TEST(run(p, n, gcl::by_size{}, ok, shared).messages_sent == tree);
      BOOST_TEST(ok);
    }
    BOOST_TEST(run(p, small, gcl::by_size{}, ok).messages_sent == doubling);
    BOOST_TEST(ok);
    BOOST_TEST(run(p, medium, gcl::by_size{}, ok).messages_sent == halving);
    BOOST_TEST(ok);
    BOOST_TEST(run(p, large, gcl::by_size{}, ok, shared).messages_sent == halving);
    BOOST_TEST(ok);
  }
}

// Where some host has more than two ranks per CPU, the tree keeps 1 MiB too (to below 2 MiB,
// where ring begins); 1 MiB is halving-doubling's where ranks only share cores (above).
BOOST_AUTO_TEST_CASE(by_size_over_tcp_keeps_the_tree_longer_over_two_ranks_per_cpu) {
  static_assert(gcl::tcp_transport::default_all_reduce.tree_below_if_over_two_per_cpu ==
                2 * 1024 * 1024);
  gcl::tcp_options over_two;
  over_two.shares_cores = true;
  over_two.over_two_per_cpu = true;
  std::size_t const small = 4, large = (1024 * 1024) / 8, ring_size = (2 * 1024 * 1024) / 8;
  for (int p : {4, 5}) {
    BOOST_TEST_INFO("P=" << p);
    bool ok = false;
    auto const tree = run(p, small, gcl::tree{}, ok).messages_sent;
    auto const halving = run(p, small, gcl::halving_doubling{}, ok).messages_sent;
    auto const ring =
        run(p, ring_size, gcl::by_size::ring_of(gcl::tcp_transport::default_all_reduce, p, true),
            ok)
            .messages_sent;
    BOOST_TEST(tree != halving);
    BOOST_TEST(tree != ring);
    for (std::size_t n : {small, large}) {
      BOOST_TEST(run(p, n, gcl::by_size{}, ok, over_two).messages_sent == tree);
      BOOST_TEST(ok);
    }
    BOOST_TEST(run(p, ring_size, gcl::by_size{}, ok, over_two).messages_sent == ring);
    BOOST_TEST(ok);
  }
}

// Where some host has two ranks or more per CPU (tcp_options::crowds_cores, exchanged at the
// rendezvous), the default all_reduce over TCP takes the parameter server below 64 KiB: the
// tree's 2 (P - 1) messages, in two rounds instead of its 2 log2 P. From 64 KiB, and where the
// ranks only share the cores, the tree.
BOOST_AUTO_TEST_CASE(by_size_over_tcp_takes_the_parameter_server_where_ranks_crowd_cores) {
  static_assert(gcl::tcp_transport::default_all_reduce.parameter_server_below_if_cores_crowded ==
                64 * 1024);
  gcl::tcp_options shared;
  shared.shares_cores = true;
  gcl::tcp_options crowded = shared;
  crowded.crowds_cores = true;
  std::size_t const small = 4, below = (64 * 1024) / 8 - 1, medium = (64 * 1024) / 8;
  for (int p : {4, 5}) {
    BOOST_TEST_INFO("P=" << p);
    bool ok = false;
    auto const server = run(p, small, gcl::parameter_server{}, ok);
    auto const tree = run(p, small, gcl::tree{}, ok);
    BOOST_TEST(server.rounds == 2);
    BOOST_TEST(tree.rounds > 2);
    for (std::size_t n : {small, below}) {
      auto const got = run(p, n, gcl::by_size{}, ok, crowded);
      BOOST_TEST(ok);
      BOOST_TEST(got.messages_sent == server.messages_sent);
      BOOST_TEST(got.rounds == server.rounds);
      BOOST_TEST(run(p, n, gcl::by_size{}, ok, shared).rounds == tree.rounds);
      BOOST_TEST(ok);
    }
    BOOST_TEST(run(p, medium, gcl::by_size{}, ok, crowded).rounds == tree.rounds);
    BOOST_TEST(ok);
  }
}

// Between two ranks, the default all_reduce over TCP runs recursive doubling to below 1 MiB
// (one exchange of the vectors: one message a rank) and halving-doubling from 1 MiB (two of
// halves), where at P = 4 halving-doubling takes over from 64 KiB.
BOOST_AUTO_TEST_CASE(by_size_over_tcp_keeps_recursive_doubling_longer_between_two_ranks) {
  static_assert(gcl::tcp_transport::default_all_reduce.recursive_doubling_below_at_two_ranks ==
                1024 * 1024);
  std::size_t const medium = (128 * 1024) / 8, below_large = (1024 * 1024) / 8 - 1,
                    large = (1024 * 1024) / 8;
  bool ok = false;
  auto const doubling = run(2, medium, gcl::recursive_doubling{}, ok).messages_sent;
  auto const halving = run(2, medium, gcl::halving_doubling{}, ok).messages_sent;
  BOOST_TEST(doubling == 2u);
  BOOST_TEST(halving == 4u);
  for (std::size_t n : {medium, below_large}) {
    BOOST_TEST_INFO(n * 8 << " bytes");
    BOOST_TEST(run(2, n, gcl::by_size{}, ok).messages_sent == doubling);
    BOOST_TEST(ok);
  }
  BOOST_TEST(run(2, large, gcl::by_size{}, ok).messages_sent == halving);
  BOOST_TEST(ok);
  BOOST_TEST(run(4, medium, gcl::by_size{}, ok).messages_sent ==
             run(4, medium, gcl::halving_doubling{}, ok).messages_sent);
  BOOST_TEST(ok);
}

// From ring's sizes up, the default all_reduce runs ring a block at a time; where ranks share
// cores (the rendezvous says so on every rank), blocks of at least P² x
// ring_step_bytes_per_rank_if_cores_shared. Small thresholds at P = 4: 4 KiB blocks alone,
// 8 KiB where ranks share cores, so 48 KiB is 12 blocks or 6. And TCP's own: 2 MiB up to
// P = 8 either way, 8 MiB at P = 16 where ranks share cores.
BOOST_AUTO_TEST_CASE(by_size_over_tcp_takes_larger_ring_blocks_where_ranks_share_cores) {
  constexpr auto tcp = gcl::tcp_transport::default_all_reduce;
  static_assert(gcl::by_size::ring_of(tcp, 4, true).block_bytes == std::size_t{2} << 20);
  static_assert(gcl::by_size::ring_of(tcp, 4, false).block_bytes == std::size_t{2} << 20);
  static_assert(gcl::by_size::ring_of(tcp, 8, true).block_bytes == std::size_t{2} << 20);
  static_assert(gcl::by_size::ring_of(tcp, 8, false).block_bytes == std::size_t{2} << 20);
  static_assert(gcl::by_size::ring_of(tcp, 16, true).block_bytes == std::size_t{8} << 20);
  static_assert(gcl::by_size::ring_of(tcp, 16, false).block_bytes == std::size_t{2} << 20);
  gcl::by_size const small{
      .sizes = gcl::all_reduce_thresholds{.recursive_doubling_below = 64,
                                          .ring_from = 1024,
                                          .ring_block_bytes = 4096,
                                          .ring_step_bytes_per_rank_if_cores_shared = 512}};
  gcl::tcp_options shared;
  shared.shares_cores = true;
  constexpr int p = 4;
  std::size_t const n = 48 * 1024 / 8;
  bool ok = false;
  auto const twelve = run(p, n, gcl::ring{.block_bytes = 4096}, ok);
  auto const six = run(p, n, gcl::ring{.block_bytes = 8192}, ok);
  BOOST_TEST(twelve.messages_sent == 12u * p * 2 * (p - 1));
  BOOST_TEST(six.messages_sent == 6u * p * 2 * (p - 1));
  auto const alone = run(p, n, small, ok);
  BOOST_TEST(ok);
  BOOST_TEST(alone.messages_sent == twelve.messages_sent);
  BOOST_TEST((alone.sent_sizes == twelve.sent_sizes));
  auto const sharing = run(p, n, small, ok, shared);
  BOOST_TEST(ok);
  BOOST_TEST(sharing.messages_sent == six.messages_sent);
  BOOST_TEST((sharing.sent_sizes == six.sent_sizes));
}
