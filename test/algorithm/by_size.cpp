#define BOOST_TEST_MODULE algorithm_by_size
#include <boost/test/unit_test.hpp>

#include <gcl/algorithm/by_size.hpp>
#include <gcl/collective/all_reduce.hpp>
#include <gcl/stats.hpp>
#include <gcl/transport/inproc.hpp>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "accounting.hpp"

using namespace accounting;

namespace {

// Rank k's element i: a small integer, or an affine map (written out, not static_cast<affine>:
// that is C++20's parenthesized aggregate initialization, which clang lacks before 16).
template <class T>
T element(int k, std::size_t i) {
  if constexpr (std::is_same_v<T, affine>)
    return affine_of(k, i);
  else
    return static_cast<T>(value(k, i));
}

// Every message of a call, as the counting transport saw them: which algorithm ran shows in
// how many messages of which sizes it sent.
template <class T, class Op, class Alg>
std::pair<std::uint64_t, std::map<std::uint64_t, std::uint64_t>> pattern(int p, std::size_t n,
                                                                         Op op, Alg alg) {
  auto r = run<T>(p, n, op, alg, [](int k, std::size_t i) { return element<T>(k, i); });
  return {r.total.messages_sent, r.total.sent_sizes};
}

constexpr gcl::all_reduce_thresholds sizes{.recursive_doubling_below = 64, .ring_from = 1024};

// How many messages a rank sent, of which sizes: they tell which algorithm ran.
using message_counts = std::pair<std::uint64_t, std::map<std::uint64_t, std::uint64_t>>;

// One rank's view of an all_reduce: whether its sum came out exact, its messages, and what its
// transport says of the cores.
struct rank_view {
  bool exact = false;
  message_counts messages;
  bool share_cores = false;
  bool crowd_cores = false;
  bool over_two_per_cpu = false;
};

// One all_reduce of `bytes` of int64 (rank r gives r + 1) on P threads, over
// counting<inproc_transport> alone (the archetype cannot tell whether its ranks share or crowd
// the cores, so `pattern`'s comparison with it does not apply).
template <class Alg>
std::vector<rank_view> sent(int p, std::size_t bytes, Alg alg) {
  return gcl::spawn<accounting::counted>(p, [&](auto& comm) {
    std::vector<std::int64_t> v(bytes / sizeof(std::int64_t), comm.rank() + 1);
    gcl::all_reduce(comm, v, gcl::sum{}, alg);
    auto const& st = comm.transport().stats();
    auto const& t = comm.transport().inner();
    return rank_view{v == std::vector<std::int64_t>(v.size(), p * (p + 1) / 2),
                     {st.messages_sent, st.sent_sizes},
                     t.ranks_share_cores(),
                     t.ranks_crowd_cores(),
                     t.ranks_over_two_per_cpu()};
  });
}

// Every rank's messages in a run of `sent`.
std::vector<message_counts> messages(std::vector<rank_view> const& out) {
  std::vector<message_counts> m;
  for (auto const& r : out) m.push_back(r.messages);
  return m;
}

}  // namespace

BOOST_AUTO_TEST_CASE(picks_recursive_doubling_then_halving_doubling_then_ring_by_bytes_per_rank) {
  gcl::by_size const alg{.sizes = sizes};
  for (int p : {2, 3, 4, 5, 8})
    for (std::size_t n : {std::size_t{1}, std::size_t{15}, std::size_t{16}, std::size_t{255},
                          std::size_t{256}, std::size_t{1000}}) {
      std::size_t const bytes = n * sizeof(float);
      auto got = pattern<float>(p, n, gcl::sum{}, alg);
      auto want = bytes < 64     ? pattern<float>(p, n, gcl::sum{}, gcl::recursive_doubling{})
                  : bytes < 1024 ? pattern<float>(p, n, gcl::sum{}, gcl::halving_doubling{})
                                 : pattern<float>(p, n, gcl::sum{}, gcl::ring{});
      BOOST_TEST((got == want), "P=" << p << " " << bytes << " bytes");
    }
}

// At P = 2, recursive doubling below recursive_doubling_below_at_two_ranks (one exchange of
// the vectors, where halving-doubling makes two of halves); other P switch at
// recursive_doubling_below; and where the rule for two is the smaller, the other stands.
BOOST_AUTO_TEST_CASE(keeps_recursive_doubling_to_its_own_size_between_two_ranks) {
  constexpr gcl::all_reduce_thresholds two{.recursive_doubling_below = 64,
                                           .ring_from = 4096,
                                           .recursive_doubling_below_at_two_ranks = 1024};
  BOOST_TEST((pattern<float>(2, 100, gcl::sum{}, gcl::recursive_doubling{}) !=
              pattern<float>(2, 100, gcl::sum{}, gcl::halving_doubling{})));
  for (int p : {2, 3, 4})
    for (std::size_t n : {std::size_t{1}, std::size_t{16}, std::size_t{100}, std::size_t{255},
                          std::size_t{256}, std::size_t{1000}}) {
      std::size_t const bytes = n * sizeof(float);
      bool const doubling = bytes < (p == 2 ? 1024 : 64);
      auto want = doubling       ? pattern<float>(p, n, gcl::sum{}, gcl::recursive_doubling{})
                  : bytes < 4096 ? pattern<float>(p, n, gcl::sum{}, gcl::halving_doubling{})
                                 : pattern<float>(p, n, gcl::sum{}, gcl::ring{});
      BOOST_TEST((pattern<float>(p, n, gcl::sum{}, gcl::by_size{.sizes = two}) == want),
                 "P=" << p << " " << bytes << " bytes");
    }
  constexpr gcl::all_reduce_thresholds smaller{.recursive_doubling_below = 1024,
                                               .ring_from = 4096,
                                               .recursive_doubling_below_at_two_ranks = 64};
  BOOST_TEST((pattern<float>(2, 100, gcl::sum{}, gcl::by_size{.sizes = smaller}) ==
              pattern<float>(2, 100, gcl::sum{}, gcl::recursive_doubling{})));
}

BOOST_AUTO_TEST_CASE(sums_exactly_across_the_switches) {
  gcl::by_size const alg{.sizes = sizes};
  for (int p = 1; p <= 9; ++p)
    for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{100}, std::size_t{300}}) {
      auto r = run<std::int64_t>(p, n, gcl::sum{}, alg, value);
      auto e = expected_sum<std::int64_t>(p, n, value);
      for (int k = 0; k < p; ++k) BOOST_TEST(r.data[k] == e, "P=" << p << " n=" << n);
    }
}

BOOST_AUTO_TEST_CASE(a_non_commutative_operator_gets_halving_doubling_where_ring_would_run) {
  gcl::by_size const alg{.sizes = sizes};
  for (int p : {2, 3, 4, 7}) {
    std::size_t const n = 1024;  // 16 KiB of affine maps: ring's range
    auto r = run<affine>(p, n, compose{}, alg, affine_of);
    auto e = expected_composition(p, n);
    for (int k = 0; k < p; ++k) BOOST_TEST((r.data[k] == e), "P=" << p << " rank " << k);
    BOOST_TEST((pattern<affine>(p, n, compose{}, alg) ==
                pattern<affine>(p, n, compose{}, gcl::halving_doubling{})));
  }
}

// A transport's own thresholds are used when the call names none, through decorators.
struct tiny_thresholds_transport : gcl::inproc_transport {
  static constexpr gcl::all_reduce_thresholds default_all_reduce{.recursive_doubling_below = 8,
                                                                 .ring_from = 16};
};

BOOST_AUTO_TEST_CASE(the_default_uses_the_transports_thresholds_through_counting) {
  static_assert(gcl::detail::thresholds_of<gcl::counting<tiny_thresholds_transport>>().ring_from ==
                16);
  static_assert(gcl::detail::thresholds_of<gcl::counting<gcl::inproc_transport>>().ring_from ==
                gcl::inproc_transport::default_all_reduce.ring_from);
  // And the default algorithm of all_reduce is by_size: same messages as by_size{} names. At
  // 250 KB, beyond the sizes where ranks that share or crowd the cores take other algorithms
  // (counted_run compares with the archetype, which cannot tell).
  for (int p : {2, 4}) {
    auto with_default = counted_run(p, [](auto& comm) {
      std::vector<float> v(64000, 1.0f);
      gcl::all_reduce(comm, v);
    });
    auto with_by_size = counted_run(p, [](auto& comm) {
      std::vector<float> v(64000, 1.0f);
      gcl::all_reduce(comm, v, gcl::sum{}, gcl::by_size{});
    });
    BOOST_TEST(with_default.sent_sizes == with_by_size.sent_sizes);
    BOOST_TEST(with_default.messages_sent == with_by_size.messages_sent);
  }
}

BOOST_AUTO_TEST_CASE(ring_runs_a_block_at_a_time_the_larger_of_the_floor_and_the_share) {
  // Blocks of max(ring_block_bytes, ring_block_total_bytes / P) bytes per rank.
  constexpr gcl::all_reduce_thresholds blocked{.recursive_doubling_below = 64,
                                               .ring_from = 1024,
                                               .ring_block_bytes = 2048,
                                               .ring_block_total_bytes = 8192};
  std::size_t const n = 10000;  // 40000 bytes per rank: ring's range, several blocks
  for (int p : {2, 3, 4, 8}) {
    std::size_t const per_rank = p <= 4 ? 8192 / static_cast<std::size_t>(p) : 2048;
    auto got = pattern<float>(p, n, gcl::sum{}, gcl::by_size{.sizes = blocked});
    BOOST_TEST((got == pattern<float>(p, n, gcl::sum{}, gcl::ring{.block_bytes = per_rank})),
               "P=" << p);
    std::size_t const per_block = per_rank / sizeof(float);
    std::size_t const blocks = (n + per_block - 1) / per_block;
    BOOST_TEST(got.first == static_cast<std::size_t>(p) * blocks * 2 * (p - 1), "P=" << p);
    // And exact: the blocks cover every element once.
    auto r = run<std::int64_t>(p, n, gcl::sum{}, gcl::by_size{.sizes = blocked}, value);
    auto e = expected_sum<std::int64_t>(p, n, value);
    for (int k = 0; k < p; ++k) BOOST_TEST(r.data[k] == e, "P=" << p);
  }
  // Both 0: the whole buffer at once.
  constexpr gcl::all_reduce_thresholds whole{.recursive_doubling_below = 64,
                                             .ring_from = 1024,
                                             .ring_block_bytes = 0,
                                             .ring_block_total_bytes = 0};
  BOOST_TEST((pattern<float>(4, n, gcl::sum{}, gcl::by_size{.sizes = whole}) ==
              pattern<float>(4, n, gcl::sum{}, gcl::ring{})));
  // Threads take larger blocks than processes where there are few ranks, not where many.
  constexpr auto threads = gcl::detail::thresholds_of<gcl::counting<gcl::inproc_transport>>();
  constexpr gcl::all_reduce_thresholds processes{};
  static_assert(gcl::by_size::ring_of(threads, 2).block_bytes >
                gcl::by_size::ring_of(processes, 2).block_bytes);
  static_assert(gcl::by_size::ring_of(threads, 64).block_bytes ==
                gcl::by_size::ring_of(processes, 64).block_bytes);
}

// Where ranks share cores, the tree between tree_from_if_cores_shared and
// tree_below_if_cores_shared, and the other thresholds' choice outside that window. Threads
// share cores when they outnumber the CPUs (inproc_transport::ranks_share_cores): P = 2 does
// not on a machine of two CPUs or more, P = CPUs + 1 does. Counted against each algorithm named
// outright (`sent`).
BOOST_AUTO_TEST_CASE(takes_the_tree_between_its_two_sizes_where_ranks_share_cores) {
  unsigned const cpus = std::thread::hardware_concurrency();
  constexpr gcl::all_reduce_thresholds windowed{.recursive_doubling_below = 64,
                                                .ring_from = 4096,
                                                .tree_below_if_cores_shared = 1024,
                                                .tree_from_if_cores_shared = 256};
  std::vector<int> sizes;
  if (cpus >= 2) sizes.push_back(2);
  if (cpus != 0 && cpus + 1 <= 8) sizes.push_back(static_cast<int>(cpus) + 1);
  for (int p : sizes) {
    bool const shared = static_cast<unsigned>(p) > cpus;
    for (std::size_t bytes : {std::size_t{32}, std::size_t{128}, std::size_t{256}, std::size_t{512},
                              std::size_t{1024}, std::size_t{8192}}) {
      BOOST_TEST_INFO("P=" << p << " on " << cpus << " CPUs, " << bytes << " bytes");
      auto const got = sent(p, bytes, gcl::by_size{.sizes = windowed});
      for (auto const& r : got) {
        BOOST_TEST(r.exact);
        BOOST_TEST(r.share_cores == shared);
      }
      auto const want = bytes < 64 ? sent(p, bytes, gcl::recursive_doubling{})
                        : shared && bytes >= 256 && bytes < 1024 ? sent(p, bytes, gcl::tree{})
                        : bytes < 4096 ? sent(p, bytes, gcl::halving_doubling{})
                                       : sent(p, bytes, gcl::ring{});
      BOOST_TEST((messages(got) == messages(want)));
    }
    // The tree is told apart from halving-doubling here (at P = 2 the two may send alike).
    if (p > 2)
      BOOST_TEST(
          (messages(sent(p, 512, gcl::tree{})) != messages(sent(p, 512, gcl::halving_doubling{}))));
  }
  // The threads' own thresholds, where the threads share cores: the tree at 16 KiB (the
  // parameter server where they crowd the cores), from 32 KiB ring (halving-doubling where a
  // power of two of them crowd the cores); where each has a core, recursive doubling between
  // two of them below 64 KiB, halving-doubling from there and between more.
  for (int p : sizes) {
    bool const shared = static_cast<unsigned>(p) > cpus;
    bool const crowds = static_cast<unsigned>(p) >= 2 * cpus, power_of_two = (p & (p - 1)) == 0;
    for (std::size_t bytes :
         {std::size_t{16 * 1024}, std::size_t{32 * 1024}, std::size_t{64 * 1024}}) {
      BOOST_TEST_INFO("P=" << p << " on " << cpus << " CPUs, " << bytes << " bytes");
      auto const want = [&] {
        if (!shared)
          return p == 2 && bytes < 64 * 1024 ? sent(p, bytes, gcl::recursive_doubling{})
                                             : sent(p, bytes, gcl::halving_doubling{});
        if (bytes < 32 * 1024)
          return crowds ? sent(p, bytes, gcl::parameter_server{}) : sent(p, bytes, gcl::tree{});
        return crowds && power_of_two ? sent(p, bytes, gcl::halving_doubling{})
                                      : sent(p, bytes, gcl::ring{});
      }();
      BOOST_TEST((messages(sent(p, bytes, gcl::by_size{})) == messages(want)));
    }
  }
}

// ring_from_if_cores_shared: where ranks share cores, ring from there (below ring_from);
// elsewhere ring from ring_from. Counted against each algorithm named outright, at P = 2 (no
// sharing on two CPUs or more) and P = CPUs + 1 (sharing, not crowding from two CPUs on).
BOOST_AUTO_TEST_CASE(takes_ring_from_its_own_size_where_ranks_share_cores) {
  unsigned const cpus = std::thread::hardware_concurrency();
  constexpr gcl::all_reduce_thresholds early{.recursive_doubling_below = 64,
                                             .ring_from = 8192,
                                             .tree_below_if_cores_shared = 512,
                                             .tree_from_if_cores_shared = 256,
                                             .ring_from_if_cores_shared = 1024};
  std::vector<int> ranks;
  if (cpus >= 2) ranks.push_back(2);
  if (cpus >= 2 && cpus + 1 <= 8) ranks.push_back(static_cast<int>(cpus) + 1);
  for (int p : ranks) {
    bool const shared = static_cast<unsigned>(p) > cpus;
    for (std::size_t bytes : {std::size_t{256}, std::size_t{512}, std::size_t{1016},
                              std::size_t{1024}, std::size_t{4096}, std::size_t{8192}}) {
      BOOST_TEST_CONTEXT("P=" << p << " on " << cpus << " CPUs, " << bytes << " bytes") {
        auto const got = sent(p, bytes, gcl::by_size{.sizes = early});
        for (auto const& r : got) {
          BOOST_TEST(r.exact);
          BOOST_TEST(r.share_cores == shared);
        }
        auto const want = [&] {
          if (shared && bytes < 512) return sent(p, bytes, gcl::tree{});
          if (bytes >= (shared ? 1024u : 8192u)) return sent(p, bytes, gcl::ring{});
          return sent(p, bytes, gcl::halving_doubling{});
        }();
        BOOST_TEST((messages(got) == messages(want)));
      }
    }
    // Ring is told apart from halving-doubling here (at P = 2 the two send alike).
    if (p > 2)
      BOOST_TEST((messages(sent(p, 4096, gcl::ring{})) !=
                  messages(sent(p, 4096, gcl::halving_doubling{}))));
  }
}

// ring_block_bytes_if_cores_shared: where ranks share cores, ring's blocks are at least that
// large, whatever P; elsewhere ring_block_bytes decides. Small thresholds: 4 KiB blocks alone,
// 16 KiB where ranks share cores, so 48 KiB is 12 blocks or 3. Counted against ring named
// outright, at P = 2 (no sharing on two CPUs or more) and P = CPUs + 1 (sharing). And the
// threads' own: 16 MiB blocks wherever they share cores, at any P.
BOOST_AUTO_TEST_CASE(takes_larger_ring_blocks_where_ranks_share_cores) {
  constexpr auto threads = gcl::detail::thresholds_of<gcl::counting<gcl::inproc_transport>>();
  constexpr std::size_t mib = std::size_t{1} << 20;
  static_assert(gcl::by_size::ring_of(threads, 3, true).block_bytes == 16 * mib);
  static_assert(gcl::by_size::ring_of(threads, 8, true).block_bytes == 16 * mib);
  static_assert(gcl::by_size::ring_of(threads, 16, true).block_bytes == 16 * mib);
  static_assert(gcl::by_size::ring_of(threads, 2, false).block_bytes == 8 * mib);
  static_assert(gcl::by_size::ring_of(threads, 8, false).block_bytes == 2 * mib);
  unsigned const cpus = std::thread::hardware_concurrency();
  constexpr gcl::all_reduce_thresholds blocked{.recursive_doubling_below = 64,
                                               .ring_from = 1024,
                                               .ring_block_bytes = 4096,
                                               .ring_block_bytes_if_cores_shared = 16384};
  std::size_t const bytes = 48 * 1024;
  std::vector<int> ranks;
  if (cpus >= 2) ranks.push_back(2);
  if (cpus >= 2 && cpus + 1 <= 8) ranks.push_back(static_cast<int>(cpus) + 1);
  for (int p : ranks) {
    bool const shared = static_cast<unsigned>(p) > cpus;
    BOOST_TEST_CONTEXT("P=" << p << " on " << cpus << " CPUs") {
      auto const got = sent(p, bytes, gcl::by_size{.sizes = blocked});
      for (auto const& r : got) {
        BOOST_TEST(r.exact);
        BOOST_TEST(r.share_cores == shared);
      }
      auto const twelve = sent(p, bytes, gcl::ring{.block_bytes = 4096});
      auto const three = sent(p, bytes, gcl::ring{.block_bytes = 16384});
      BOOST_TEST((messages(twelve) != messages(three)));
      BOOST_TEST((messages(got) == messages(shared ? three : twelve)));
    }
  }
}

// Where the ranks outnumber the CPUs (inproc_transport::ranks_share_cores) and they are at
// most by_size::direct_max_ranks, direct below direct_below_if_cores_shared, ahead of the
// other thresholds; elsewhere, and from that size, their choice. Counted against each
// algorithm named outright: P = 2 x CPUs crowds the cores, P = 2 x CPUs - 1 and CPUs + 1 share
// them, P = CPUs does not, and P = direct_max_ranks + 1 is too many.
BOOST_AUTO_TEST_CASE(takes_direct_below_its_size_where_ranks_share_cores) {
  unsigned const cpus = std::thread::hardware_concurrency();
  constexpr gcl::all_reduce_thresholds shared{
      .recursive_doubling_below = 1024, .ring_from = 4096, .direct_below_if_cores_shared = 256};
  if (cpus == 0) return;  // the host's CPUs unknown: no rank shares them
  int const n = static_cast<int>(cpus), twice = 2 * n;
  std::vector<int> sizes{gcl::by_size::direct_max_ranks + 1};
  for (int p : {twice, twice - 1, n + 1, n})
    if (p >= 3 && p <= gcl::by_size::direct_max_ranks &&
        std::find(sizes.begin(), sizes.end(), p) == sizes.end())
      sizes.push_back(p);
  int tried_direct = 0;
  for (int p : sizes) {
    bool const shares = p > n;
    bool const direct = shares && p <= gcl::by_size::direct_max_ranks;
    for (std::size_t bytes :
         {std::size_t{8}, std::size_t{128}, std::size_t{248}, std::size_t{256}, std::size_t{512}}) {
      BOOST_TEST_INFO("P=" << p << " on " << cpus << " CPUs, " << bytes << " bytes");
      auto const got = sent(p, bytes, gcl::by_size{.sizes = shared});
      for (auto const& r : got) {
        BOOST_TEST(r.exact);
        BOOST_TEST(r.share_cores == shares);
        BOOST_TEST(r.crowd_cores == (p >= twice));
      }
      bool const takes_direct = direct && bytes < 256;
      tried_direct += takes_direct ? 1 : 0;
      auto const want =
          takes_direct ? sent(p, bytes, gcl::direct{}) : sent(p, bytes, gcl::recursive_doubling{});
      BOOST_TEST((messages(got) == messages(want)));
      // The two are told apart by their messages at these P (P (P - 1) against about P log2 P).
      BOOST_TEST((messages(sent(p, bytes, gcl::direct{})) !=
                  messages(sent(p, bytes, gcl::recursive_doubling{}))));
    }
  }
  // The threads' own thresholds take direct at 64 B where the threads share the cores.
  if (n + 1 >= 3 && n + 1 <= gcl::by_size::direct_max_ranks) {
    BOOST_TEST(tried_direct > 0);
    BOOST_TEST(
        (messages(sent(n + 1, 64, gcl::by_size{})) == messages(sent(n + 1, 64, gcl::direct{}))));
  }
}

// Where every CPU runs two ranks or more, the parameter server below
// parameter_server_below_if_cores_crowded: after direct for at most by_size::direct_max_ranks
// ranks, from the smallest size beyond them, and not for more than
// by_size::parameter_server_max_ranks; where the ranks only share the cores, direct and then
// the other thresholds' choice. Counted against each algorithm named outright.
BOOST_AUTO_TEST_CASE(takes_the_parameter_server_after_direct_where_ranks_crowd_cores) {
  unsigned const cpus = std::thread::hardware_concurrency();
  constexpr gcl::all_reduce_thresholds crowded{.recursive_doubling_below = 1024,
                                               .ring_from = 4096,
                                               .direct_below_if_cores_shared = 256,
                                               .parameter_server_below_if_cores_crowded = 512};
  if (cpus == 0) return;  // the host's CPUs unknown: no rank crowds them
  int const twice = 2 * static_cast<int>(cpus);
  int const beyond_direct = std::max(twice, gcl::by_size::direct_max_ranks + 1);
  std::vector<int> sizes{gcl::by_size::parameter_server_max_ranks + 1};
  if (beyond_direct <= gcl::by_size::parameter_server_max_ranks) sizes.push_back(beyond_direct);
  if (twice <= gcl::by_size::direct_max_ranks) sizes.push_back(twice);
  if (twice - 1 >= 3 && twice - 1 <= gcl::by_size::parameter_server_max_ranks)
    sizes.push_back(twice - 1);
  int tried_server = 0;
  for (int p : sizes) {
    bool const crowds = p >= twice, shares = p > static_cast<int>(cpus);
    for (std::size_t bytes :
         {std::size_t{8}, std::size_t{248}, std::size_t{256}, std::size_t{504}, std::size_t{512}}) {
      BOOST_TEST_INFO("P=" << p << " on " << cpus << " CPUs, " << bytes << " bytes");
      auto const got = sent(p, bytes, gcl::by_size{.sizes = crowded});
      for (auto const& r : got) {
        BOOST_TEST(r.exact);
        BOOST_TEST(r.crowd_cores == crowds);
      }
      bool const direct = shares && p <= gcl::by_size::direct_max_ranks && bytes < 256;
      bool const server =
          !direct && crowds && p <= gcl::by_size::parameter_server_max_ranks && bytes < 512;
      tried_server += server ? 1 : 0;
      auto const want = direct   ? sent(p, bytes, gcl::direct{})
                        : server ? sent(p, bytes, gcl::parameter_server{})
                                 : sent(p, bytes, gcl::recursive_doubling{});
      BOOST_TEST((messages(got) == messages(want)));
      // The server's rank 0 sends P - 1 messages and every other rank one: neither direct
      // (P - 1 each) nor recursive doubling (about log2 P each) sends so at these P.
      BOOST_TEST((messages(sent(p, bytes, gcl::parameter_server{})) !=
                  messages(sent(p, bytes, gcl::recursive_doubling{}))));
      BOOST_TEST((messages(sent(p, bytes, gcl::parameter_server{})) !=
                  messages(sent(p, bytes, gcl::direct{}))));
    }
  }
  if (twice > gcl::by_size::parameter_server_max_ranks) return;  // no P here both crowds and fits
  BOOST_TEST(tried_server > 0);
  // The threads' own thresholds: the parameter server at 8 KiB where the threads crowd the
  // cores (after direct's 4 KiB), and at 64 B beyond direct's ranks.
  static_assert(gcl::inproc_transport::default_all_reduce.direct_below_if_cores_shared <= 8192);
  static_assert(gcl::inproc_transport::default_all_reduce.parameter_server_below_if_cores_crowded >
                8192);
  BOOST_TEST((messages(sent(twice, 8192, gcl::by_size{})) ==
              messages(sent(twice, 8192, gcl::parameter_server{}))));
  BOOST_TEST((messages(sent(beyond_direct, 64, gcl::by_size{})) ==
              messages(sent(beyond_direct, 64, gcl::parameter_server{}))));
}

// Where some core runs three ranks or more (inproc_transport::ranks_over_two_per_cpu: the ranks
// more than twice the CPUs), direct only below direct_below_if_over_two_per_cpu, and the
// parameter server from there (such ranks crowd the cores); where they are at most twice the
// CPUs, direct up to direct_below_if_cores_shared still. Counted against each algorithm named
// outright, at P = 2 x CPUs + 1 (on 2 CPUs, 5 ranks) and 2 x CPUs where they are at most
// by_size::direct_max_ranks.
BOOST_AUTO_TEST_CASE(takes_direct_only_below_its_own_size_where_a_core_runs_three_ranks) {
  unsigned const cpus = std::thread::hardware_concurrency();
  constexpr gcl::all_reduce_thresholds thresholds{.recursive_doubling_below = 1024,
                                                  .ring_from = 4096,
                                                  .direct_below_if_cores_shared = 512,
                                                  .parameter_server_below_if_cores_crowded = 1024,
                                                  .direct_below_if_over_two_per_cpu = 256};
  if (cpus == 0) return;  // the host's CPUs unknown: no rank crowds them
  int const twice = 2 * static_cast<int>(cpus);
  int tried_over_two = 0;
  for (int p : {twice + 1, twice}) {
    if (p < 3 || p > gcl::by_size::direct_max_ranks) continue;
    bool const over_two = p > twice;
    tried_over_two += over_two ? 1 : 0;
    for (std::size_t bytes :
         {std::size_t{8}, std::size_t{248}, std::size_t{256}, std::size_t{504}, std::size_t{512}}) {
      BOOST_TEST_INFO("P=" << p << " on " << cpus << " CPUs, " << bytes << " bytes");
      auto const got = sent(p, bytes, gcl::by_size{.sizes = thresholds});
      for (auto const& r : got) {
        BOOST_TEST(r.exact);
        BOOST_TEST(r.crowd_cores);
        BOOST_TEST(r.over_two_per_cpu == over_two);
      }
      bool const direct = bytes < (over_two ? 256u : 512u);
      auto const want =
          direct ? sent(p, bytes, gcl::direct{}) : sent(p, bytes, gcl::parameter_server{});
      BOOST_TEST((messages(got) == messages(want)));
    }
  }
  if (tried_over_two == 0) return;  // no P here both runs three to a core and takes direct
  // The threads' own thresholds: at P = 2 x CPUs + 1 direct at 64 B, the parameter server at
  // 1 KiB (below direct_below_if_cores_shared, 4 KiB).
  constexpr auto own = gcl::inproc_transport::default_all_reduce;
  static_assert(64 < own.direct_below_if_over_two_per_cpu &&
                own.direct_below_if_over_two_per_cpu <= 1024 &&
                1024 < own.direct_below_if_cores_shared);
  BOOST_TEST((messages(sent(twice + 1, 64, gcl::by_size{})) ==
              messages(sent(twice + 1, 64, gcl::direct{}))));
  BOOST_TEST((messages(sent(twice + 1, 1024, gcl::by_size{})) ==
              messages(sent(twice + 1, 1024, gcl::parameter_server{}))));
}

// Where the ranks crowd the cores and are a power of two, halving-doubling where ring would run,
// from halving_doubling_from_if_cores_crowded and below halving_doubling_below_if_cores_crowded;
// at another P that crowds them (halving-doubling would fold it first), or outside those sizes,
// ring. Counted against each algorithm named outright.
BOOST_AUTO_TEST_CASE(takes_halving_doubling_for_ring_where_a_power_of_two_of_ranks_crowd_cores) {
  unsigned const cpus = std::thread::hardware_concurrency();
  if (cpus == 0) return;  // the host's CPUs unknown: no rank crowds them
  constexpr gcl::all_reduce_thresholds crowded{.recursive_doubling_below = 64,
                                               .ring_from = 1024,
                                               .halving_doubling_below_if_cores_crowded = 4096,
                                               .halving_doubling_from_if_cores_crowded = 2048};
  int const twice = 2 * static_cast<int>(cpus);
  int power = 4;  // at P = 2 ring's messages and halving-doubling's are the same
  while (power < twice) power *= 2;
  if (power > 64) return;  // more threads than this test should start
  std::vector<int> ranks{power, power + 2};
  if (power / 2 >= 4 && power / 2 < twice) ranks.push_back(power / 2);  // shares, not crowds
  for (int p : ranks) {
    bool const crowds = p >= twice, power_of_two = (p & (p - 1)) == 0;
    for (std::size_t bytes : {std::size_t{1024}, std::size_t{2040}, std::size_t{2048},
                              std::size_t{4088}, std::size_t{4096}}) {
      BOOST_TEST_CONTEXT("P=" << p << " on " << cpus << " CPUs, " << bytes << " bytes") {
        auto const got = sent(p, bytes, gcl::by_size{.sizes = crowded});
        for (auto const& r : got) {
          BOOST_TEST(r.exact);
          BOOST_TEST(r.crowd_cores == crowds);
        }
        bool const halving = crowds && power_of_two && bytes >= 2048 && bytes < 4096;
        auto const ring = sent(p, bytes, gcl::ring{});
        auto const halving_doubling = sent(p, bytes, gcl::halving_doubling{});
        BOOST_TEST((messages(ring) != messages(halving_doubling)));  // the counts tell them apart
        BOOST_TEST((messages(got) == messages(halving ? halving_doubling : ring)));
      }
    }
  }
}

// `choose` names what `all_reduce` runs: on P threads with the threads' own thresholds and
// hints (sharing, crowding the cores, as this host's CPUs make them), for sizes that cover every
// rule, the algorithm it names (and ring with the blocks it names), run outright, sends what
// by_size sends. Every rank gets the same choice; a non-commutative operator never gets ring.
BOOST_AUTO_TEST_CASE(choose_names_the_algorithm_that_all_reduce_runs) {
  std::set<std::string> named;
  for (int p : {1, 2, 3, 4, 5, 8})
    for (std::size_t bytes : {std::size_t{8}, std::size_t{512}, std::size_t{4096},
                              std::size_t{64} << 10, std::size_t{1} << 20}) {
      BOOST_TEST_CONTEXT("P=" << p << ", " << bytes << " bytes") {
        auto const choices = gcl::spawn<accounting::counted>(p, [&](auto& comm) {
          auto const c = gcl::by_size{}.choose(comm, bytes);
          auto const other = gcl::by_size{}.choose(comm, bytes, false);
          return std::tuple{std::string(c.name()), c.ring_blocks.block_bytes,
                            std::string(other.name())};
        });
        for (auto const& c : choices) BOOST_TEST((c == choices[0]));
        auto const& [name, block_bytes, non_commutative] = choices[0];
        BOOST_TEST(non_commutative != "ring");
        named.insert(name);
        auto const got = messages(sent(p, bytes, gcl::by_size{}));
        auto const outright = [&, &name = name, &block_bytes = block_bytes] {
          if (name == "direct") return messages(sent(p, bytes, gcl::direct{}));
          if (name == "parameter_server") return messages(sent(p, bytes, gcl::parameter_server{}));
          if (name == "tree") return messages(sent(p, bytes, gcl::tree{}));
          if (name == "recursive_doubling")
            return messages(sent(p, bytes, gcl::recursive_doubling{}));
          if (name == "halving_doubling") return messages(sent(p, bytes, gcl::halving_doubling{}));
          BOOST_TEST_REQUIRE(name == "ring");  // nothing by hosts on one host's threads
          return messages(sent(p, bytes, gcl::ring{.block_bytes = block_bytes}));
        }();
        BOOST_TEST((got == outright), name);
      }
    }
  // Every host runs several of them over these sizes (with a core each: recursive doubling,
  // halving-doubling and ring; sharing cores, direct or the tree too).
  BOOST_TEST(named.size() >= 3u);
}
