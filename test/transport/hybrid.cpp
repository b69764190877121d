#define BOOST_TEST_MODULE transport_hybrid
#include <boost/test/unit_test.hpp>

// hybrid_transport: shared memory to the ranks of this host, TCP to the others. The ranks are
// threads of this test (or processes forked from it) split into pretend hosts by
// hybrid_options::test_hosts, which stands in for the host key (boot id, network namespace,
// uid): every collective and algorithm bit-identical to inproc, the path each peer takes, a
// cycle of waits across the two sides that needs the shm side to progress while a rank waits
// on TCP, a killed rank named on the other host, and GCL_TRANSPORT.
//
// Thresholds are scaled down as in shm_collectives.cpp (offers from 16 KiB, rings of 16 KiB,
// a large size of 6000 floats) so that both shm paths are taken at small sizes.

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gcl/algorithm/by_size.hpp>
#include <gcl/algorithm/halving_doubling.hpp>
#include <gcl/algorithm/hierarchical.hpp>
#include <gcl/algorithm/parameter_server.hpp>
#include <gcl/algorithm/recursive_doubling.hpp>
#include <gcl/algorithm/ring.hpp>
#include <gcl/algorithm/tree.hpp>
#include <gcl/collective/all_reduce.hpp>
#include <gcl/collective/broadcast.hpp>
#include <gcl/spawn.hpp>
#include <gcl/stats.hpp>
#include <gcl/transport/hybrid.hpp>
#include <gcl/transport/inproc.hpp>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "../support/every_collective.hpp"
#include "../support/sendrecv_reduce_checks.hpp"
#include "shm_fork.hpp"

namespace {

using namespace std::chrono_literals;
using gcl::transport_path;
using gcl_test::record;
using gcl_test::run_all;

static_assert(gcl::transport<gcl::hybrid_transport>);
static_assert(gcl::call_aware_transport<gcl::hybrid_transport>);
static_assert(gcl::sendrecv_transport<gcl::hybrid_transport>);
static_assert(gcl::combining_transport<gcl::hybrid_transport>);
static_assert(gcl::group_transport<gcl::hybrid_transport>);
static_assert(gcl::group_transport<gcl::counting<gcl::hybrid_transport>>);

constexpr std::size_t large = 6000;  // floats: more than an offer's threshold and a ring

gcl::hybrid_options scaled(std::vector<int> hosts, bool cma = true) {
  gcl::hybrid_options o;
  o.tcp.timeout = 60s;  // a hang guard only: nothing here waits for a time
  o.shm_offer_bytes = 16 * 1024;
  o.shm_ring_bytes = 16 * 1024;
  o.shm_cross_memory_attach = cma;
  o.test_hosts = std::move(hosts);
  return o;
}

std::vector<std::vector<record>> const& reference(int p) {
  static std::map<int, std::vector<std::vector<record>>> done;
  auto it = done.find(p);
  if (it == done.end())
    it = done.emplace(p, gcl::spawn<gcl::inproc_transport>(
                             p, [](auto& comm) { return run_all(comm, large); }))
             .first;
  return it->second;
}

void compare(int p, std::vector<std::vector<record>> const& got,
             std::vector<std::vector<record>> const& want) {
  BOOST_TEST_REQUIRE(got.size() == want.size());
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

// "s" for a peer over shm, "t" over TCP, one letter per peer.
std::string paths(gcl::hybrid_transport const& t) {
  std::string s;
  for (int r = 0; r < t.size(); ++r) s += t.path_to(r) == transport_path::shm ? 's' : 't';
  return s;
}

// What each rank's paths must be: shm to the ranks of its pretend host (itself included when
// it has company), TCP to the others.
std::string expected_paths(std::vector<int> const& hosts, int rank) {
  int company = 0;
  for (int h : hosts) company += h == hosts[rank] ? 1 : 0;
  std::string s;
  for (std::size_t r = 0; r < hosts.size(); ++r)
    s += company > 1 && hosts[r] == hosts[rank] ? 's' : 't';
  return s;
}

void every_collective(std::vector<int> const& hosts, bool cma) {
  int const p = static_cast<int>(hosts.size());
  auto const& want = reference(p);
  // Boost.Test's assertions are not thread-safe (two ranks asserting at once once corrupted its
  // checkpoint string): each rank returns its paths, checked here after the join.
  auto out = gcl::spawn<gcl::hybrid_transport>(
      p, [&](auto& comm) { return std::pair(paths(comm.transport()), run_all(comm, large)); },
      scaled(hosts, cma));
  std::vector<std::vector<record>> got;
  for (int r = 0; r < p; ++r) {
    BOOST_TEST(out[r].first == expected_paths(hosts, r), "rank " << r);
    got.push_back(std::move(out[r].second));
  }
  compare(p, got, want);
}

}  // namespace

// sendrecv_reduce around a ring of three ranks on one pretend host and one on another: rank 1's
// neighbours are both on its host (shm combines as the message arrives), the others have one
// across (the transport declines, and the communicator receives and reduces).
BOOST_AUTO_TEST_CASE(sendrecv_reduce_over_shm_and_across) {
  for (bool cma : {true, false}) {
    auto o = scaled({0, 0, 0, 1}, cma);
    o.shm_combine_bytes = 1;  // not only from 4 MiB, the default
    auto wrong = gcl::spawn<gcl::hybrid_transport>(
        4,
        [](auto& comm) {
          return gcl_test::check_sendrecv_reduce(comm, {0, 1, 1000, large});
        },
        o);
    for (int r = 0; r < 4; ++r)
      BOOST_TEST(wrong[static_cast<std::size_t>(r)].empty(),
                 "rank " << r << " cma " << cma << ": " << wrong[static_cast<std::size_t>(r)]);
  }
}

// Two hosts of two: shm inside each, TCP across; large messages offered (copied once).
BOOST_AUTO_TEST_CASE(two_hosts_of_two) {
  every_collective({0, 0, 1, 1}, true);
}

// Three and two, interleaved, with large messages streamed through rings smaller than them.
BOOST_AUTO_TEST_CASE(three_and_two_streamed) {
  every_collective({0, 1, 0, 1, 0}, false);
}

// Four hosts of two, each group's ranks spread over the job.
BOOST_AUTO_TEST_CASE(four_hosts_of_two) {
  every_collective({0, 1, 2, 3, 3, 2, 1, 0}, true);
}

// One rank alone on its host (TCP to every peer) next to a group of three.
BOOST_AUTO_TEST_CASE(one_alone_and_three) {
  every_collective({1, 0, 0, 0}, true);
}

// A rank alone on its host is ready as soon as TCP is (it sets up no shared memory): its
// first message, large, may reach the others before they stop leaving large frames in the
// socket for a receive to be posted, which hybrid never posts; such a frame is read all the
// same (it hung until the timeout before).
BOOST_AUTO_TEST_CASE(a_large_first_message_from_a_rank_alone_on_its_host) {
  // The default rings (1 MiB per pair here): setting them up takes the others a while.
  gcl::hybrid_options o;
  o.tcp.timeout = 30s;
  o.test_hosts = {0, 1, 0};
  // A race (about one job in three hung before): eight jobs.
  for (int job = 0; job < 8; ++job) {
    auto out = gcl::spawn<gcl::hybrid_transport>(
        3,
        [](auto& comm) {
          std::vector<int> v(200000, comm.rank() + 1);
          gcl::all_reduce(comm, v, gcl::sum{}, gcl::tree{});  // rank 1 sends 800 KB to rank 0
          return v.front() == 6 && v.back() == 6;
        },
        o);
    for (int r = 0; r < 3; ++r)
      BOOST_TEST(out[r], "job " << job << ", rank " << r << ": wrong sum");
  }
}

// Buffers from the pool on the shm side (hybrid_transport::allocate): in the pool where the rank
// has peers on its host, ordinary memory where it is alone there; all_reduce over both sides
// is exact either way.
BOOST_AUTO_TEST_CASE(buffers_in_the_pool_where_a_rank_shares_its_host) {
  auto o = scaled({0, 0, 1});
  o.shm_pool_bytes = 1 << 20;
  auto out = gcl::spawn<gcl::hybrid_transport>(
      3,
      [](auto& comm) {
        std::size_t const n = 50000;  // 200 KB: past the offer threshold
        auto v = comm.transport().template allocate<int>(n);
        for (std::size_t i = 0; i < n; ++i) v[i] = (comm.rank() + 1) * static_cast<int>(i % 1000);
        gcl::all_reduce(comm, v, gcl::sum{}, gcl::ring{});
        bool exact = true;
        for (std::size_t i = 0; i < n && exact; ++i) exact = v[i] == 6 * static_cast<int>(i % 1000);
        return std::make_pair(v.in_pool(), exact);
      },
      o);
  BOOST_TEST(out[0].first);
  BOOST_TEST(out[1].first);
  BOOST_TEST(!out[2].first);  // alone on host 1
  for (int r = 0; r < 3; ++r) BOOST_TEST(out[r].second, "rank " << r << ": wrong sum");
}

// counting<hybrid_transport> sees what counting<inproc_transport> sees.
BOOST_AUTO_TEST_CASE(counting_counts_as_on_inproc) {
  auto run = [](auto tag_type, typename decltype(tag_type)::type::options o, auto alg) {
    using T = typename decltype(tag_type)::type;
    auto out = gcl::spawn<gcl::counting<T>>(
        4,
        [&](auto& comm) {
          std::vector<std::int64_t> v(5000, comm.rank() + 1);
          gcl::all_reduce(comm, v, gcl::sum{}, alg);
          return std::pair(v, comm.transport().stats());
        },
        o);
    gcl::transport_stats total;
    std::vector<std::vector<std::int64_t>> results;
    for (auto const& [v, s] : out) {
      total += s;
      results.push_back(v);
    }
    return std::pair(results, total);
  };
  auto check = [&](auto alg, char const* name) {
    auto [ri, si] = run(std::type_identity<gcl::inproc_transport>{}, {}, alg);
    auto [rh, sh] = run(std::type_identity<gcl::hybrid_transport>{}, scaled({0, 0, 1, 1}), alg);
    BOOST_TEST_INFO(name);
    BOOST_TEST((ri == rh));
    BOOST_TEST(si.messages_sent == sh.messages_sent);
    BOOST_TEST(si.bytes_sent == sh.bytes_sent);
    BOOST_TEST(si.messages_received == sh.messages_received);
    BOOST_TEST(si.rounds == sh.rounds);
    BOOST_TEST((si.sent_sizes == sh.sent_sizes));
  };
  check(gcl::ring{}, "ring");
  check(gcl::tree{}, "tree");
}

// The default all_reduce takes shm's sizes when every peer is reached through shared memory,
// TCP's when a link crosses hosts: at 32 KiB, halving-doubling on one host (shm's thresholds;
// the binomial tree where the four ranks outnumber the host's CPUs, the parameter server where
// they are two or more to a CPU), recursive doubling across two (TCP's). Counted, against each
// algorithm named outright.
BOOST_AUTO_TEST_CASE(the_default_all_reduce_follows_the_paths) {
  static_assert(gcl::shm_transport::default_all_reduce.recursive_doubling_below <= 32 * 1024 &&
                32 * 1024 < gcl::shm_transport::default_all_reduce.ring_from);
  static_assert(gcl::shm_transport::default_all_reduce.tree_from_if_cores_shared <= 32 * 1024 &&
                32 * 1024 < gcl::shm_transport::default_all_reduce.tree_below_if_cores_shared);
  static_assert(32 * 1024 <
                gcl::shm_transport::default_all_reduce.parameter_server_below_if_cores_crowded);
  static_assert(32 * 1024 < gcl::tcp_transport::default_all_reduce.recursive_doubling_below);
  auto stats = [](std::vector<int> hosts, auto alg) {
    auto out = gcl::spawn<gcl::counting<gcl::hybrid_transport>>(
        4,
        [&](auto& comm) {
          std::vector<float> v(8 * 1024, static_cast<float>(comm.rank() + 1));
          gcl::all_reduce(comm, v, gcl::sum{}, alg);
          auto const& t = comm.transport().inner();
          auto const sizes = t.all_reduce_sizes();
          return std::tuple(v == std::vector<float>(v.size(), 10.0f), comm.transport().stats(),
                            t.all_shm(), sizes.recursive_doubling_below, sizes.ring_from);
        },
        scaled(std::move(hosts)));
    return out;
  };
  auto sent = [](auto const& out) {
    std::vector<std::uint64_t> s;
    for (auto const& r : out) s.push_back(std::get<1>(r).messages_sent);
    return s;
  };
  auto one_host = stats({0, 0, 0, 0}, gcl::by_size{});
  auto two_hosts = stats({0, 0, 1, 1}, gcl::by_size{});
  for (int r = 0; r < 4; ++r) {
    auto const& [ok1, s1, all1, rd1, ring1] = one_host[static_cast<std::size_t>(r)];
    auto const& [ok2, s2, all2, rd2, ring2] = two_hosts[static_cast<std::size_t>(r)];
    BOOST_TEST_INFO("rank " << r);
    BOOST_TEST((ok1 && ok2));
    BOOST_TEST(all1);
    BOOST_TEST(!all2);
    BOOST_TEST(rd1 == gcl::shm_transport::default_all_reduce.recursive_doubling_below);
    BOOST_TEST(ring1 == gcl::shm_transport::default_all_reduce.ring_from);
    BOOST_TEST(rd2 == gcl::tcp_transport::default_all_reduce.recursive_doubling_below);
    BOOST_TEST(ring2 == gcl::tcp_transport::default_all_reduce.ring_from);
  }
  auto const on_one_host =
      gcl::detail::ranks_crowd_cpus(4)       ? stats({0, 0, 0, 0}, gcl::parameter_server{})
      : gcl::detail::ranks_outnumber_cpus(4) ? stats({0, 0, 0, 0}, gcl::tree{})
                                             : stats({0, 0, 0, 0}, gcl::halving_doubling{});
  BOOST_TEST(sent(one_host) == sent(on_one_host), boost::test_tools::per_element());
  BOOST_TEST(sent(two_hosts) == sent(stats({0, 0, 1, 1}, gcl::recursive_doubling{})),
             boost::test_tools::per_element());
  BOOST_TEST((sent(one_host) != sent(two_hosts)));  // the two algorithms do differ here
}

// The messages each of `p` ranks sends in `call` (which runs a collective on the rank's
// communicator and says whether its result is right) over a hybrid_transport of options `o`;
// ~0 for a rank whose result is wrong.
template <class Call>
std::vector<std::uint64_t> sends_per_rank(int p, gcl::hybrid_options const& o, Call call) {
  auto out = gcl::spawn<gcl::counting<gcl::hybrid_transport>>(
      p,
      [&](auto& comm) {
        bool const ok = call(comm);
        return std::pair(ok, comm.transport().stats().messages_sent);
      },
      o);
  std::vector<std::uint64_t> s;
  for (auto const& [ok, n] : out) s.push_back(ok ? n : ~std::uint64_t{0});
  return s;
}

// The messages each rank of a job split into `hosts` sends for one all_reduce of `floats` floats
// with `alg`, told by the TCP rendezvous that the cores are shared and crowded, or neither; ~0
// for a rank whose result is wrong.
template <class Algorithm>
std::vector<std::uint64_t> messages_sent(std::vector<int> hosts, bool crowded, std::size_t floats,
                                         Algorithm alg) {
  int const p = static_cast<int>(hosts.size());
  auto o = scaled(std::move(hosts));
  o.tcp.shares_cores = o.tcp.crowds_cores = crowded;
  return sends_per_rank(p, o, [&](auto& comm) {
    std::vector<float> v(floats, static_cast<float>(comm.rank() + 1));
    gcl::all_reduce(comm, v, gcl::sum{}, alg);
    return v == std::vector<float>(v.size(), static_cast<float>(p * (p + 1) / 2));
  });
}

// Where ranks crowd the cores, by_size takes the parameter server for small messages over TCP
// alone, but not in a job whose hosts run several ranks each (mixed_all_reduce): there the
// binomial tree's rounds inside a host cost a shm message each (the tree by hosts, there).
// Told so by the messages each rank sends, against the fixed algorithms'.
BOOST_AUTO_TEST_CASE(a_job_of_hosts_with_several_ranks_takes_no_parameter_server) {
  static_assert(gcl::tcp_transport::default_all_reduce.parameter_server_below_if_cores_crowded >
                1024);
  static_assert(gcl::hybrid_transport::mixed_all_reduce.parameter_server_below_if_cores_crowded ==
                0);
  auto sent = [](std::vector<int> hosts, auto alg) {
    return messages_sent(std::move(hosts), true, 256, alg);  // 1 KiB
  };
  for (auto hosts :
       {std::vector<int>{0, 0, 1, 1}, std::vector<int>{0, 1, 1, 1}, std::vector<int>{0, 0, 0, 1}}) {
    auto const by_size = sent(hosts, gcl::by_size{});
    BOOST_TEST(by_size == sent(hosts, gcl::tree_by_hosts{}), boost::test_tools::per_element());
    BOOST_TEST((by_size != sent(hosts, gcl::parameter_server{})));
  }
  std::vector<int> const alone{0, 1, 2, 3};  // every rank on a host of its own: TCP's choice
  BOOST_TEST(sent(alone, gcl::by_size{}) == sent(alone, gcl::parameter_server{}),
             boost::test_tools::per_element());
}

// The default in a mixed job: hierarchical from `hierarchical_from` (64 KiB); where ranks share
// cores, the tree by hosts wherever the tree runs (below 1 MiB, however many ranks a CPU runs)
// and hierarchical from there. Hosts of as many ranks or not, in blocks or interleaved. Told by
// the messages each rank sends.
BOOST_AUTO_TEST_CASE(a_job_over_hosts_goes_by_hosts) {
  constexpr auto mixed = gcl::hybrid_transport::mixed_all_reduce;
  static_assert(mixed.hierarchical_from == 64 * 1024 &&
                gcl::tcp_transport::default_all_reduce.hierarchical_from == 0);
  static_assert(mixed.tree_below_if_over_two_per_cpu == 0 && mixed.tree_from_if_cores_shared == 0 &&
                mixed.direct_below_if_cores_shared == 0 &&
                mixed.hierarchical_from < mixed.tree_below_if_cores_shared &&
                mixed.tree_below_if_cores_shared < mixed.ring_from);
  std::size_t const by_hosts_from = mixed.hierarchical_from / sizeof(float),
                    hierarchical_from_if_crowded = mixed.tree_below_if_cores_shared / sizeof(float);
  for (bool crowded : {false, true}) {
    BOOST_TEST_INFO("cores shared and crowded: " << crowded);
    std::size_t const from = crowded ? hierarchical_from_if_crowded : by_hosts_from;
    for (auto hosts : {std::vector<int>{0, 0, 1, 1}, std::vector<int>{0, 1, 0, 1},
                       std::vector<int>{0, 0, 0, 1, 1, 1}, std::vector<int>{0, 0, 1, 1, 2, 2},
                       std::vector<int>{0, 1, 1, 1}, std::vector<int>{0, 1, 0, 1, 0}}) {
      BOOST_TEST_INFO("ranks " << hosts.size() << ", host of rank 1 " << hosts[1]
                               << ", of the last " << hosts.back());
      BOOST_TEST(messages_sent(hosts, crowded, from, gcl::by_size{}) ==
                     messages_sent(hosts, crowded, from, gcl::hierarchical{}),
                 boost::test_tools::per_element());
      if (crowded) {
        for (std::size_t n : {std::size_t{1}, by_hosts_from - 1, by_hosts_from, from - 1})
          BOOST_TEST(messages_sent(hosts, crowded, n, gcl::by_size{}) ==
                         messages_sent(hosts, crowded, n, gcl::tree_by_hosts{}),
                     boost::test_tools::per_element());
      } else {
        BOOST_TEST((messages_sent(hosts, crowded, from - 1, gcl::by_size{}) !=
                    messages_sent(hosts, crowded, from - 1, gcl::hierarchical{})));
      }
    }
  }
  // Every rank on a host of its own: TCP's choice, the tree where cores are shared, halving-
  // doubling at 64 KiB where not.
  std::vector<int> const alone{0, 1, 2, 3};
  BOOST_TEST(messages_sent(alone, true, by_hosts_from, gcl::by_size{}) ==
                 messages_sent(alone, true, by_hosts_from, gcl::tree{}),
             boost::test_tools::per_element());
  BOOST_TEST(messages_sent(alone, false, by_hosts_from, gcl::by_size{}) ==
                 messages_sent(alone, false, by_hosts_from, gcl::halving_doubling{}),
             boost::test_tools::per_element());
}

// gcl::tree_by_hosts: a binomial tree over the ranks laid out so that each host is a subtree
// (test/algorithm/hierarchical.cpp checks the layout): 2 (P - 1) messages of which 2 (H - 1)
// cross between hosts, whatever the placement and whatever the hosts' sizes. Exact on every
// rank.
BOOST_AUTO_TEST_CASE(tree_by_hosts_crosses_between_hosts_once_into_each) {
  using counts = std::vector<std::uint64_t>;
  std::size_t const n = 1001;
  // 3 + 3: ranks 0 and 3 lead (reduce from 1 and 2, exchange, broadcast to 1 and 2), where the
  // tree's rank 2 also relays rank 3's and rank 4 rank 5's.
  BOOST_TEST(messages_sent({0, 0, 0, 1, 1, 1}, false, n, gcl::tree_by_hosts{}) ==
                 counts({3, 1, 1, 3, 1, 1}),
             boost::test_tools::per_element());
  BOOST_TEST(messages_sent({0, 0, 0, 1, 1, 1}, false, n, gcl::tree{}) == counts({3, 1, 2, 1, 2, 1}),
             boost::test_tools::per_element());
  // Interleaved: ranks 0 and 1 lead.
  BOOST_TEST(messages_sent({0, 1, 0, 1}, false, n, gcl::tree_by_hosts{}) == counts({2, 2, 1, 1}),
             boost::test_tools::per_element());
  // Power-of-two blocks: the tree itself.
  BOOST_TEST(messages_sent({0, 0, 1, 1}, false, n, gcl::tree_by_hosts{}) ==
                 messages_sent({0, 0, 1, 1}, false, n, gcl::tree{}),
             boost::test_tools::per_element());
  // Hosts of 1 and 3: the host of three is the root's (positions 1 2 3 0): rank 1 reduces
  // from 2 and from 3, which has reduced from rank 0 (and broadcasts back the same way), where
  // the tree's edges 1-0, 2-0 cross both ways (four messages, not two).
  BOOST_TEST(messages_sent({0, 1, 1, 1}, false, n, gcl::tree_by_hosts{}) == counts({1, 2, 1, 2}),
             boost::test_tools::per_element());
  BOOST_TEST(messages_sent({0, 1, 1, 1}, false, n, gcl::tree{}) == counts({2, 1, 2, 1}),
             boost::test_tools::per_element());
  // Hosts of 3 and 1 in blocks: the plain tree, whose one crossing edge is 3 -> 2; not rank 0
  // reducing its host and then rank 3's sum, one round more.
  BOOST_TEST(messages_sent({0, 0, 0, 1}, false, n, gcl::tree_by_hosts{}) ==
                 messages_sent({0, 0, 0, 1}, false, n, gcl::tree{}),
             boost::test_tools::per_element());
  BOOST_TEST(messages_sent({0, 0, 0, 1}, false, n, gcl::tree_by_hosts{}) == counts({2, 1, 2, 1}),
             boost::test_tools::per_element());
  // 3 + 2 interleaved: ranks 0 and 1 lead; rank 0 reduces from 2 and 4, rank 1 from 3.
  BOOST_TEST(
      messages_sent({0, 1, 0, 1, 0}, false, n, gcl::tree_by_hosts{}) == counts({3, 2, 1, 1, 1}),
      boost::test_tools::per_element());
}

// The messages each rank of a job split into `hosts` sends for one broadcast of 1001 floats
// from `root` with gcl::tree (the default); ~0 for a rank that ends with the wrong values.
std::vector<std::uint64_t> broadcast_sends(std::vector<int> hosts, int root) {
  int const p = static_cast<int>(hosts.size());
  return sends_per_rank(p, scaled(std::move(hosts)), [&](auto& comm) {
    auto const value = [&](int r) { return static_cast<float>(r * 7 + 1); };
    std::vector<float> v(1001, value(comm.rank()));
    gcl::broadcast(comm, v, root);
    return v == std::vector<float>(v.size(), value(root));
  });
}

// gcl::tree's broadcast across hosts: the binomial tree over the ranks laid out so that each
// host is a subtree, rooted at the root (test/algorithm/hierarchical.cpp checks the layout):
// the vector enters each other host once, where the tree over the ranks in order enters it at
// every edge from a rank of another host. Told by the messages each rank sends.
BOOST_AUTO_TEST_CASE(a_broadcast_enters_each_host_once) {
  using counts = std::vector<std::uint64_t>;
  // Interleaved, from rank 0: positions 0 2 | 1 3. Rank 0 sends to 2 and, across, to 1, which
  // sends to 3; in rank order 0 would send to 2 and 1 and rank 2 to 3, twice across.
  BOOST_TEST(broadcast_sends({0, 1, 0, 1}, 0) == counts({2, 1, 0, 0}),
             boost::test_tools::per_element());
  // From rank 3: positions 3 1 | 0 2. Rank 3 sends to 1 and, across, to 0, which sends to 2.
  BOOST_TEST(broadcast_sends({0, 1, 0, 1}, 3) == counts({1, 0, 0, 2}),
             boost::test_tools::per_element());
  // 1 + 3 from rank 0: positions 0 - - - 1 2 3. Rank 0 sends across once, to rank 1, which
  // sends to 2 and 3; in rank order rank 0 would send to 2 and 1, both across.
  BOOST_TEST(broadcast_sends({0, 1, 1, 1}, 0) == counts({1, 2, 0, 0}),
             boost::test_tools::per_element());
  // In power-of-two blocks the tree in rank order is already by hosts: 0 sends to 2 and 1, 2 to 3.
  BOOST_TEST(broadcast_sends({0, 0, 1, 1}, 0) == counts({2, 0, 1, 0}),
             boost::test_tools::per_element());
  // Every rank on a host of its own: the tree in rank order.
  BOOST_TEST(broadcast_sends({0, 1, 2, 3}, 0) == counts({2, 0, 1, 0}),
             boost::test_tools::per_element());
}

// gcl::hierarchical: a reduce-scatter inside each host, an all_reduce across hosts, an
// all-gather inside each host, whatever the placement: 2 (L - 1) + 2 (H - 1) messages a rank
// where every host runs L ranks (H hosts); where the hosts differ in size, the grid of the
// smallest, the other ranks folded into it. Every rank ends with the same bits, the exact sum
// here. by_size takes it from `hierarchical_from`.
BOOST_AUTO_TEST_CASE(hierarchical_reduces_inside_hosts_then_across) {
  std::size_t const n = 1001;  // chunks of different sizes at every level
  auto const ring = [&](std::size_t p) { return std::vector<std::uint64_t>(p, 2 * (p - 1)); };
  auto const grid = [](std::size_t p, std::uint64_t l, std::uint64_t h) {
    return std::vector<std::uint64_t>(p, 2 * (l - 1) + 2 * (h - 1));
  };
  BOOST_TEST(messages_sent({0, 0, 1, 1}, false, n, gcl::hierarchical{}) == grid(4, 2, 2),
             boost::test_tools::per_element());
  BOOST_TEST(messages_sent({0, 1, 0, 1}, false, n, gcl::hierarchical{}) == grid(4, 2, 2),
             boost::test_tools::per_element());
  BOOST_TEST(messages_sent({0, 0, 0, 1, 1, 1}, false, n, gcl::hierarchical{}) == grid(6, 3, 2),
             boost::test_tools::per_element());
  BOOST_TEST(messages_sent({2, 0, 1, 1, 0, 2}, false, n, gcl::hierarchical{}) == grid(6, 2, 3),
             boost::test_tools::per_element());
  // Hosts of different sizes: a grid as wide as the smallest, the other ranks folded into it.
  // 3 + 1: ranks 1 and 2 hand their vectors to rank 0 and get the result back; ranks 0 and 3
  // run the ring of two.
  using counts = std::vector<std::uint64_t>;
  BOOST_TEST(messages_sent({0, 0, 0, 1}, false, n, gcl::hierarchical{}) == counts({4, 1, 1, 2}),
             boost::test_tools::per_element());
  // 5 + 3: ranks 3 and 4 fold into lanes 0 and 1; grid(., 3, 2) for the lanes' ranks, and one
  // more message for each of ranks 0 and 1 (the result back).
  BOOST_TEST(messages_sent({0, 0, 0, 0, 0, 1, 1, 1}, false, n, gcl::hierarchical{}) ==
                 counts({7, 7, 6, 1, 1, 6, 6, 6}),
             boost::test_tools::per_element());
  // 3 + 2 interleaved: host 0 is ranks 0, 2, 4 (rank 4 folds into rank 0), host 1 ranks 1, 3.
  BOOST_TEST(
      messages_sent({0, 1, 0, 1, 0}, false, n, gcl::hierarchical{}) == counts({5, 4, 4, 4, 1}),
      boost::test_tools::per_element());
  // Every rank on a host of its own: one ring.
  BOOST_TEST(messages_sent({0, 1, 2, 3}, false, n, gcl::hierarchical{}) == ring(4),
             boost::test_tools::per_element());
  // by_size: recursive doubling below 4,002 bytes (2 messages a rank), hierarchical from there.
  gcl::all_reduce_thresholds sizes = gcl::hybrid_transport::mixed_all_reduce;
  sizes.recursive_doubling_below = sizes.hierarchical_from = 4002;
  BOOST_TEST(messages_sent({0, 1, 1, 0}, false, n, gcl::by_size{.sizes = sizes}) == grid(4, 2, 2),
             boost::test_tools::per_element());
  BOOST_TEST(messages_sent({0, 1, 1, 0}, false, 1000, gcl::by_size{.sizes = sizes}) ==
                 std::vector<std::uint64_t>(4, 2),
             boost::test_tools::per_element());

  // Not exact sums: every rank ends with the same bits all the same, hosts of equal sizes or
  // not (rank 3 folds into rank 0, rank 5 into rank 2).
  for (auto hosts : {std::vector<int>{0, 1, 2, 0, 1, 2}, std::vector<int>{0, 1, 0, 0, 1, 0}}) {
    BOOST_TEST_INFO("host of rank 2 " << hosts[2]);
    auto results = gcl::spawn<gcl::hybrid_transport>(
        6,
        [&](auto& comm) {
          std::vector<float> v(n);
          for (std::size_t i = 0; i < n; ++i)
            v[i] = 1.0f / static_cast<float>(3 + i + 7 * static_cast<std::size_t>(comm.rank()));
          gcl::all_reduce(comm, v, gcl::sum{}, gcl::hierarchical{});
          return v;
        },
        scaled(hosts));
    for (std::size_t r = 1; r < results.size(); ++r) {
      BOOST_TEST_INFO("rank " << r);
      BOOST_TEST((std::memcmp(results[r].data(), results[0].data(), n * sizeof(float)) == 0));
    }
    BOOST_TEST(std::abs(results[0][0] - (1.0f / 3 + 1.0f / 10 + 1.0f / 17 + 1.0f / 24 + 1.0f / 31 +
                                         1.0f / 38)) < 1e-6f);
  }
}

// Whether ranks share cores (by_size asks): across hosts, what the TCP rendezvous gathered from
// every rank's tcp_options::shares_cores; on one host, whether the ranks outnumber its CPUs.
BOOST_AUTO_TEST_CASE(whether_ranks_share_cores) {
  auto answers = [](std::vector<int> hosts, bool shares) {
    auto o = scaled(std::move(hosts));
    o.tcp.shares_cores = shares;
    return gcl::spawn<gcl::hybrid_transport>(
        4, [](auto& comm) { return comm.transport().ranks_share_cores(); }, o);
  };
  bool const outnumbered = gcl::detail::ranks_outnumber_cpus(4);
  for (bool shares : {false, true}) {
    BOOST_TEST(answers({0, 0, 1, 1}, shares) == std::vector<bool>(4, shares),
               boost::test_tools::per_element());
    BOOST_TEST(answers({0, 0, 0, 0}, shares) == std::vector<bool>(4, outnumbered),
               boost::test_tools::per_element());
  }
}

// The shm side's waits take the cores as shared where the TCP rendezvous says this rank's machine
// has more ranks than CPUs, though its host group alone may not (two network namespaces of one
// machine): the host group of two here has a core each on 2 CPUs or more.
BOOST_AUTO_TEST_CASE(the_shm_side_waits_as_the_machine_shares_cores) {
  auto answers = [](bool shares) {
    auto o = scaled({0, 0, 1, 1});
    o.tcp.shares_cores = shares;
    return gcl::spawn<gcl::hybrid_transport>(
        4, [](auto& comm) { return comm.transport().shm_waits_share_cores(); }, o);
  };
  bool const group_outnumbers = gcl::detail::ranks_outnumber_cpus(2);
  BOOST_TEST(answers(true) == std::vector<bool>(4, true), boost::test_tools::per_element());
  BOOST_TEST(answers(false) == std::vector<bool>(4, group_outnumbers),
             boost::test_tools::per_element());
}

// In a job over several hosts a wait on the shm side may be for a TCP message: unless told
// (shm_spin), it polls at least as long as the TCP side's spin; on one host, shm's default.
BOOST_AUTO_TEST_CASE(the_shm_side_polls_as_long_as_the_tcp_side_across_hosts) {
  using us = std::chrono::microseconds;
  auto answers = [](std::vector<int> hosts, us tcp_spin, std::optional<us> shm_spin) {
    auto o = scaled(std::move(hosts));
    o.tcp.spin = tcp_spin;
    o.shm_spin = shm_spin;
    return gcl::spawn<gcl::hybrid_transport>(
        4, [](auto& comm) { return comm.transport().shm_spin().count(); }, o);
  };
  using counts = std::vector<us::rep>;
  us const group_default = gcl::detail::default_spin(2),
           alone_default = gcl::detail::default_spin(4);
  us const longer = group_default + us{777};
  BOOST_TEST(answers({0, 0, 1, 1}, longer, {}) == counts(4, longer.count()),
             boost::test_tools::per_element());
  BOOST_TEST(answers({0, 0, 1, 1}, us{0}, {}) == counts(4, group_default.count()),
             boost::test_tools::per_element());
  BOOST_TEST(answers({0, 0, 1, 1}, longer, us{33}) == counts(4, 33),
             boost::test_tools::per_element());
  BOOST_TEST(answers({0, 0, 0, 0}, longer, {}) == counts(4, alone_default.count()),
             boost::test_tools::per_element());
}

// Whether ranks crowd the cores (at least two per CPU; by_size asks, for direct): on one host,
// as shm answers; across hosts never (TCP's thresholds take no direct).
BOOST_AUTO_TEST_CASE(whether_ranks_crowd_cores) {
  auto answers = [](std::vector<int> hosts) {
    return gcl::spawn<gcl::hybrid_transport>(
        4, [](auto& comm) { return comm.transport().ranks_crowd_cores(); },
        scaled(std::move(hosts)));
  };
  unsigned const cpus = std::thread::hardware_concurrency();
  bool const crowded = cpus != 0 && 4 >= 2 * cpus;
  BOOST_TEST(gcl::detail::ranks_crowd_cpus(4) == crowded);
  BOOST_TEST(answers({0, 0, 0, 0}) == std::vector<bool>(4, crowded),
             boost::test_tools::per_element());
  BOOST_TEST(answers({0, 0, 1, 1}) == std::vector<bool>(4, false),
             boost::test_tools::per_element());
  static_assert(gcl::tcp_transport::default_all_reduce.direct_below_if_cores_shared == 0);
}

// Whether some host runs more than two ranks per CPU (by_size asks, for direct's smaller size
// there): on one host, as shm answers (5 ranks: on 2 CPUs or fewer, yes); across hosts, as the
// TCP rendezvous gathered from every rank's tcp_options::over_two_per_cpu.
BOOST_AUTO_TEST_CASE(whether_ranks_are_over_two_per_cpu) {
  auto answers = [](std::vector<int> hosts, bool over_two) {
    auto o = scaled(hosts);
    o.tcp.shares_cores = o.tcp.crowds_cores = o.tcp.over_two_per_cpu = over_two;
    return gcl::spawn<gcl::hybrid_transport>(
        static_cast<int>(hosts.size()),
        [](auto& comm) { return comm.transport().ranks_over_two_per_cpu(); }, o);
  };
  unsigned const cpus = std::thread::hardware_concurrency();
  bool const over_two = cpus != 0 && 5 > 2 * cpus;
  BOOST_TEST(gcl::detail::ranks_outnumber_cpus(5, 2) == over_two);
  for (bool told : {false, true}) {
    BOOST_TEST(answers({0, 0, 0, 0, 0}, told) == std::vector<bool>(5, over_two),
               boost::test_tools::per_element());
    BOOST_TEST(answers({0, 0, 1, 1}, told) == std::vector<bool>(4, told),
               boost::test_tools::per_element());
  }
}

// Every rank on one host under auto: pure shm, no TCP side left after the rendezvous.
BOOST_AUTO_TEST_CASE(one_host_is_pure_shm) {
  std::vector<int> hosts{0, 0, 0};
  // Each rank returns what it saw of its transport, asserted after the join (Boost.Test's
  // assertions are not thread-safe: three ranks asserting at once corrupted its checkpoint
  // string once under AddressSanitizer with the machine loaded, std::length_error).
  auto out = gcl::spawn<gcl::hybrid_transport>(
      3,
      [&](auto& comm) {
        auto const& t = comm.transport();
        std::string seen = std::string(t.has_tcp() ? "tcp " : "") + paths(t) + " " +
                           std::to_string(t.host_group().size());
        return std::pair(seen, run_all(comm, large, {"ring", "tree"}));
      },
      scaled(hosts));
  std::vector<std::vector<record>> got;
  for (int r = 0; r < 3; ++r) {
    BOOST_TEST(out[static_cast<std::size_t>(r)].first == "sss 3", "rank " << r);
    got.push_back(out[static_cast<std::size_t>(r)].second);
  }
  auto want = gcl::spawn<gcl::inproc_transport>(3, [](auto& comm) {
    return run_all(comm, large, {"ring", "tree"});
  });
  compare(3, got, want);
}

// L (rank 0) and M (rank 1) share a host, R (rank 2) is on another. L sends M a message larger
// than the ring (offered, or streamed), then sends R a message; R waits for it before it sends
// M one; M waits for R's first. Without the shm side progressing while M waits on TCP, L would
// wait for room (or for its offer to be taken) forever, and so would R and M.
BOOST_AUTO_TEST_CASE(a_cycle_across_the_two_sides_completes) {
  for (bool cma : {true, false}) {
    BOOST_TEST_CONTEXT((cma ? "offered" : "streamed")) {
      std::size_t const n = 256 * 1024;  // bytes: 16 rings' worth
      // Each rank returns its paths and whether its data arrived intact, asserted after the
      // join (Boost.Test's assertions are not thread-safe).
      auto out = gcl::spawn<gcl::hybrid_transport>(
          3,
          [&](auto& comm) {
            auto& t = comm.transport();
            bool same = true;
            std::vector<std::byte> big(n), small(64);
            if (comm.rank() == 0) {
              for (std::size_t i = 0; i < n; ++i) big[i] = std::byte(i * 7 + 1);
              t.send(1, gcl::tag{1}, big);
              t.send(2, gcl::tag{2}, small);
            } else if (comm.rank() == 2) {
              t.recv(0, gcl::tag{2}, small);
              t.send(1, gcl::tag{3}, small);
            } else {
              t.recv(2, gcl::tag{3}, small);  // over TCP, while L's big message waits
              t.recv(0, gcl::tag{1}, big);
              for (std::size_t i = 0; i < n; ++i) same = same && big[i] == std::byte(i * 7 + 1);
            }
            return std::pair(paths(t), same);
          },
          scaled({0, 0, 1}, cma));
      for (int r = 0; r < 3; ++r) {
        BOOST_TEST(out[r].first == expected_paths({0, 0, 1}, r), "rank " << r);
        BOOST_TEST(out[r].second, "rank " << r << ": the large message arrived changed");
      }
    }
  }
}

// A rank waiting on a peer of another host reads that peer's socket itself and keeps its TCP
// I/O thread resting (out of epoll_wait) while it polls; another host's large send to it must
// still complete, and a wait for it on the shm side must still end. Rank 0 (host A, with rank
// 3) ping-pongs with rank 1 (host B) while rank 2 (host C) sends it 16 MiB that it receives only
// at the end; halfway, rank 1 waits for rank 2's word, which comes only once that large send is
// done, so the ping-pong stalls until rank 0's transport reads the send with no receive posted
// for it. Rank 3 then gets a message from rank 0 over shm. The bound catches a hang; it does
// not time.
BOOST_AUTO_TEST_CASE(a_rank_polling_another_host_still_lets_a_third_finish_a_large_send) {
  constexpr std::size_t n = (std::size_t{16} << 20) / sizeof(std::uint32_t);
  constexpr std::uint32_t rounds = 1000;
  auto pattern = [](std::size_t count) {
    std::vector<std::uint32_t> v(count);
    for (std::size_t i = 0; i < count; ++i) v[i] = static_cast<std::uint32_t>(i * 2654435761u);
    return v;
  };
  auto bytes = [](auto const& v) { return std::as_bytes(std::span(v)); };
  auto wbytes = [](auto& v) { return std::as_writable_bytes(std::span(v)); };
  auto o = scaled({0, 1, 2, 0});
  o.tcp.timeout = 90s;
  // Each rank returns what went wrong (empty: nothing), asserted after the join.
  auto wrong = gcl::spawn<gcl::hybrid_transport>(
      4,
      [&](auto& comm) -> std::string {
        auto& t = comm.transport();
        std::vector<std::uint32_t> one(1);
        switch (t.rank()) {
          case 0: {
            for (std::uint32_t i = 0; i < rounds; ++i) {
              one[0] = i;
              t.send(1, gcl::tag{1}, bytes(one));
              t.recv(1, gcl::tag{2}, wbytes(one));
              if (one[0] != i + 1) return "pong " + std::to_string(i) + " came back wrong";
            }
            std::vector<std::uint32_t> got(n);
            t.recv(2, gcl::tag{3}, wbytes(got));
            if (got != pattern(n)) return "rank 2's 16 MiB arrived wrong";
            one[0] = 7;
            t.send(3, gcl::tag{5}, bytes(one));
            return {};
          }
          case 1:
            for (std::uint32_t i = 0; i < rounds; ++i) {
              if (i == rounds / 2) {
                t.recv(2, gcl::tag{4}, wbytes(one));
                if (one[0] != 42) return "rank 2's word arrived wrong";
              }
              t.recv(0, gcl::tag{1}, wbytes(one));
              ++one[0];
              t.send(0, gcl::tag{2}, bytes(one));
            }
            return {};
          case 2:
            t.send(0, gcl::tag{3}, bytes(pattern(n)));
            one[0] = 42;
            t.send(1, gcl::tag{4}, bytes(one));
            return {};
          default:
            t.recv(0, gcl::tag{5}, wbytes(one));
            return one[0] == 7 ? std::string{} : "rank 0's word over shm arrived wrong";
        }
      },
      o);
  for (int r = 0; r < 4; ++r)
    BOOST_TEST(wrong[static_cast<std::size_t>(r)].empty(),
               "rank " << r << ": " << wrong[static_cast<std::size_t>(r)]);
}

// sendrecv whose two peers take different paths.
BOOST_AUTO_TEST_CASE(sendrecv_across_the_two_sides) {
  // Each rank returns whether every message arrived intact, asserted after the join.
  auto intact = gcl::spawn<gcl::hybrid_transport>(
      4,
      [&](auto& comm) {
        auto& t = comm.transport();
        int const r = comm.rank(), p = comm.size();
        bool ok = true;
        for (std::size_t n : {std::size_t{8}, std::size_t{100000}}) {
          std::vector<std::byte> out(n, std::byte(r + 1)), in(n);
          // To the next rank, from the previous: 0->1 shm, 1->2 TCP, 2->3 shm, 3->0 TCP.
          t.sendrecv((r + 1) % p, gcl::tag{5}, out, (r + p - 1) % p, gcl::tag{5}, in);
          ok = ok && in == std::vector<std::byte>(n, std::byte((r + p - 1) % p + 1));
        }
        return ok;
      },
      scaled({0, 0, 1, 1}));
  for (int r = 0; r < 4; ++r) BOOST_TEST(intact[static_cast<std::size_t>(r)], "rank " << r);
}

// Ranks that call different collectives fail with errc::mismatch, whether the disagreement
// crosses the hosts (ranks 0 and 1 against 2 and 3: found over TCP) or lies within one (rank 0
// against the rest: found over shm by rank 1, over TCP by the others).
BOOST_AUTO_TEST_CASE(a_disagreement_is_found_on_either_side) {
  for (int split : {2, 1}) {
    BOOST_TEST_CONTEXT("ranks below " << split << " all_reduce, the others broadcast") {
      BOOST_CHECK_EXCEPTION(gcl::spawn<gcl::hybrid_transport>(
                                4,
                                [&](auto& comm) {
                                  std::vector<int> v(100, comm.rank());
                                  if (comm.rank() < split)
                                    gcl::all_reduce(comm, v, gcl::sum{}, gcl::ring{});
                                  else
                                    gcl::broadcast(comm, v, 0);
                                },
                                scaled({0, 0, 1, 1})),
                            gcl::transport_error, [](gcl::transport_error const& e) {
                              BOOST_TEST_MESSAGE(e.what());
                              return e.code() == gcl::errc::mismatch;
                            });
    }
  }
}

// GCL_TRANSPORT=tcp: TCP to every peer, even of one host; =shm: shm only, no address needed.
BOOST_AUTO_TEST_CASE(transport_tcp_and_shm) {
  auto o = scaled({0, 0, 1, 1});
  o.mode = gcl::transport_mode::tcp;
  auto out_tcp = gcl::spawn<gcl::hybrid_transport>(
      4,
      [&](auto& comm) {
        // Asserted after the join: Boost.Test's assertions are not thread-safe.
        auto how = paths(comm.transport()) + (comm.transport().has_tcp() ? "+tcp" : "");
        return std::pair(how, run_all(comm, large, {"ring", "halving_doubling"}));
      },
      o);
  for (auto const& [how, _] : out_tcp) BOOST_TEST(how == "tttt+tcp");
  std::vector<std::vector<record>> got;
  for (auto& [_, records] : out_tcp) got.push_back(std::move(records));
  auto want = gcl::spawn<gcl::inproc_transport>(4, [](auto& comm) {
    return run_all(comm, large, {"ring", "halving_doubling"});
  });
  compare(4, got, want);

  auto s = scaled({});
  s.mode = gcl::transport_mode::shm;
  auto out_shm = gcl::spawn<gcl::hybrid_transport>(
      4,
      [&](auto& comm) {
        auto how = paths(comm.transport()) + (comm.transport().has_tcp() ? "+tcp" : "");
        return std::pair(how, run_all(comm, large, {"ring", "halving_doubling"}));
      },
      s);
  for (auto const& [how, _] : out_shm) BOOST_TEST(how == "ssss");
  std::vector<std::vector<record>> got_shm;
  for (auto& [_, records] : out_shm) got_shm.push_back(std::move(records));
  compare(4, got_shm, want);
}

// A rank under GCL_TRANSPORT=auto joining rank 0 under tcp is refused with the reason (rank 0
// logs it and goes on waiting, here until its 2 s timeout).
BOOST_AUTO_TEST_CASE(ranks_given_different_modes_are_told_why) {
  std::uint16_t port = 0;
  {
    boost::asio::io_context io;
    boost::asio::ip::tcp::acceptor a(io, {boost::asio::ip::make_address("127.0.0.1"), 0});
    port = a.local_endpoint().port();
  }
  std::string errors[2];
  {
    std::vector<std::jthread> ranks;
    for (int r = 0; r < 2; ++r)
      ranks.emplace_back([&, r] {
        gcl::hybrid_options o;
        o.tcp.rank = r;
        o.tcp.size = 2;
        o.tcp.master_port = port;
        o.tcp.token = "modes";
        o.tcp.timeout = 2s;
        o.mode = r == 0 ? gcl::transport_mode::tcp : gcl::transport_mode::automatic;
        try {
          gcl::hybrid_transport t(o);
        } catch (gcl::transport_error const& e) {
          errors[r] = e.what();
        }
      });
  }
  BOOST_TEST_INFO("rank 1 said: " << errors[1]);
  BOOST_TEST(
      errors[1].find("rank 1 runs GCL_TRANSPORT=auto, this rank tcp (every rank needs the same)") !=
      std::string::npos);
  BOOST_TEST(!errors[0].empty());
}

BOOST_AUTO_TEST_CASE(options_from_env) {
  auto env = [](std::map<std::string, std::string> vars) {
    return [vars = std::move(vars)](char const* n) -> char const* {
      auto it = vars.find(n);
      return it == vars.end() ? nullptr : it->second.c_str();
    };
  };
  std::map<std::string, std::string> base{{"GCL_RANK", "1"},
                                          {"GCL_WORLD_SIZE", "4"},
                                          {"GCL_MASTER_ADDR", "10.0.0.1"},
                                          {"GCL_MASTER_PORT", "29500"},
                                          {"GCL_TOKEN", "job"}};
  auto o = gcl::hybrid_options::from_env(env(base));
  BOOST_TEST((o.mode == gcl::transport_mode::automatic));
  BOOST_TEST(o.tcp.rank == 1);
  BOOST_TEST(o.tcp.size == 4);
  BOOST_TEST(o.tcp.master_port == 29500);
  BOOST_TEST(o.tcp.token == "job");

  for (auto [value, mode] :
       {std::pair{"auto", gcl::transport_mode::automatic},
        std::pair{"tcp", gcl::transport_mode::tcp}, std::pair{"shm", gcl::transport_mode::shm}}) {
    auto vars = base;
    vars["GCL_TRANSPORT"] = value;
    BOOST_TEST((gcl::hybrid_options::from_env(env(vars)).mode == mode), value);
  }

  // shm needs no address, but a token; tcp and auto need the address.
  std::map<std::string, std::string> local{
      {"GCL_RANK", "0"}, {"GCL_WORLD_SIZE", "2"}, {"GCL_TOKEN", "job"}, {"GCL_TRANSPORT", "shm"}};
  BOOST_TEST(gcl::hybrid_options::from_env(env(local)).tcp.size == 2);
  local.erase("GCL_TOKEN");
  BOOST_CHECK_THROW(gcl::hybrid_options::from_env(env(local)), gcl::usage_error);
  local["GCL_TRANSPORT"] = "tcp";
  local["GCL_TOKEN"] = "job";
  BOOST_CHECK_THROW(gcl::hybrid_options::from_env(env(local)), gcl::usage_error);

  // The launchers' variables, as tcp_options reads them: torchrun's, and Slurm's under shm.
  auto torch = gcl::hybrid_options::from_env(env({{"RANK", "2"},
                                                  {"WORLD_SIZE", "4"},
                                                  {"MASTER_ADDR", "node01"},
                                                  {"MASTER_PORT", "29500"},
                                                  {"TORCHELASTIC_RUN_ID", "run7"}}));
  BOOST_TEST(torch.tcp.rank == 2);
  BOOST_TEST(torch.tcp.master_addr == "node01");
  BOOST_TEST(!torch.tcp.token.empty());
  BOOST_TEST(torch.tcp.token_source == "TORCHELASTIC_RUN_ID");
  auto slurm = gcl::hybrid_options::from_env(env({{"SLURM_PROCID", "1"},
                                                  {"SLURM_NTASKS", "3"},
                                                  {"SLURM_JOB_ID", "42"},
                                                  {"SLURM_STEP_ID", "0"},
                                                  {"GCL_TRANSPORT", "shm"}}));
  BOOST_TEST(slurm.tcp.rank == 1);
  BOOST_TEST(slurm.tcp.size == 3);
  BOOST_TEST(!slurm.tcp.token.empty());

  auto bad = base;
  bad["GCL_TRANSPORT"] = "infiniband";
  try {
    (void)gcl::hybrid_options::from_env(env(bad));
    BOOST_FAIL("GCL_TRANSPORT=infiniband was accepted");
  } catch (gcl::usage_error const& e) {
    BOOST_TEST(std::string(e.what()).find("GCL_TRANSPORT") != std::string::npos, e.what());
  }
  bad = base;
  bad["GCL_SHM_CMA"] = "2";
  BOOST_CHECK_THROW(gcl::hybrid_options::from_env(env(bad)), gcl::usage_error);
  bad = base;
  bad["GCL_SPREAD"] = "2";
  BOOST_CHECK_THROW(gcl::hybrid_options::from_env(env(bad)), gcl::usage_error);

  // GCL_SPREAD reaches the shm side, under auto and under shm.
  BOOST_TEST(!o.shm_spread_ranks.has_value());
  auto no_spread = base;
  no_spread["GCL_SPREAD"] = "0";
  BOOST_TEST((gcl::hybrid_options::from_env(env(no_spread)).shm_spread_ranks == false));
  local["GCL_TRANSPORT"] = "shm";
  local["GCL_SPREAD"] = "0";
  BOOST_TEST((gcl::hybrid_options::from_env(env(local)).shm_spread_ranks == false));
}

// Ranks are processes (forked after the group bound rank 0's port). A rank is killed while every
// rank loops in all_reduce: with 2 hosts of 2, rank 3 (or rank 0): the ranks of the other host,
// which reach it over TCP, and its host neighbour, which reaches it through memory; with hosts
// of 3 and 1, the one alone on its host. Every other rank fails naming it, none by the timeout
// (60 s), and /dev/shm is left as it was.
BOOST_AUTO_TEST_CASE(a_killed_rank_is_named_on_both_hosts) {
  auto const before = gcl_test::dev_shm_names();
  struct round {
    std::vector<int> hosts;
    int victim;
  };
  for (auto const& [hosts, victim] :
       {round{{0, 0, 1, 1}, 3}, round{{0, 0, 1, 1}, 0}, round{{0, 0, 1, 0}, 2}}) {
    BOOST_TEST_CONTEXT("rank " << victim << " of hosts " << hosts[0] << hosts[1] << hosts[2]
                               << hosts[3] << " killed") {
      gcl_test::temp_dir dir;
      auto o = scaled(hosts);
      gcl::hybrid_transport::group g(4, o);
      std::vector<pid_t> pids;
      for (int r = 0; r < 4; ++r)
        pids.push_back(gcl_test::fork_rank(dir, r, [&] {
          gcl::communicator<gcl::hybrid_transport> comm(g.connect(r));
          for (long it = 0;; ++it) {
            std::vector<float> v(it % 2 == 0 ? 64 : 20000, 1.0f);
            gcl::all_reduce(comm, v, gcl::sum{}, gcl::ring{});
            if (v[0] != 4.0f) throw std::runtime_error("wrong sum");
            if (it == 0) std::ofstream(dir.file(r, ".started")) << "1";
          }
        }));
      if (auto why = gcl_test::wait_until_started(dir, pids); !why.empty()) BOOST_FAIL(why);
      ::kill(pids[victim], SIGKILL);
      for (int r = 0; r < 4; ++r) {
        auto out = gcl_test::finish_rank(dir, pids[r], r);
        if (r == victim) {
          BOOST_TEST((WIFSIGNALED(out.status) && WTERMSIG(out.status) == SIGKILL));
          continue;
        }
        // What the rank said goes with every check, so that a failure shows it.
        BOOST_TEST(out.exited_with(1), "rank " << r << " said: " << out.error);
        BOOST_TEST(out.error.find("rank " + std::to_string(victim)) != std::string::npos,
                   "rank " << r << " said: " << out.error);
        BOOST_TEST(out.error.find("timed out") == std::string::npos,
                   "rank " << r << " said: " << out.error);
        BOOST_TEST_MESSAGE("rank " << r << ": " << out.error.substr(0, 300));
      }
    }
  }
  BOOST_TEST(gcl_test::dev_shm_names() == before, "a killed job left something in /dev/shm");
}
