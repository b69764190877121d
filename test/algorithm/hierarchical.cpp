#define BOOST_TEST_MODULE algorithm_hierarchical
#include <boost/test/unit_test.hpp>

#include <gcl/detail/binomial.hpp>
#include <gcl/detail/host_grid.hpp>

#include <algorithm>
#include <functional>
#include <vector>

#include "accounting.hpp"

using namespace accounting;
namespace d = gcl::detail;

namespace {

// Every split of `ranks` into hosts, as host sizes, largest first.
void for_each_split(int ranks, std::function<void(std::vector<int> const&)> const& f) {
  std::vector<int> sizes;
  std::function<void(int, int)> go = [&](int left, int largest) {
    if (left == 0) return f(sizes);
    for (int s = std::min(left, largest); s >= 1; --s) {
      sizes.push_back(s);
      go(left - s, s);
      sizes.pop_back();
    }
  };
  go(ranks, ranks);
}

// The host of each rank: hosts of `sizes` in blocks (0 0 0 1), or dealt out a rank at a time
// (0 1 0 0), and the smallest host first where `reversed` (1 0 0 0: its ranks come first).
std::vector<int> placement(std::vector<int> sizes, bool interleaved, bool reversed) {
  if (reversed) std::reverse(sizes.begin(), sizes.end());
  std::vector<int> host;
  if (!interleaved) {
    for (std::size_t h = 0; h < sizes.size(); ++h) host.insert(host.end(), sizes[h], int(h));
    return host;
  }
  for (bool any = true; any;) {
    any = false;
    for (std::size_t h = 0; h < sizes.size(); ++h)
      if (sizes[h]-- > 0) host.push_back(int(h)), any = true;
  }
  return host;
}

// The tree by hosts' layout over `host` (one host number per rank), rooted at `root` (-1: as
// all_reduce roots it), checked as every rank sees it (up to 16 ranks; beyond, as the first
// and the last do); its depth in rounds. Checks collect into a few assertions, as there are
// millions (a minute under AddressSanitizer, one assertion each).
int checked_tree_depth(std::vector<int> const& host, int root = -1) {
  int const p = static_cast<int>(host.size());
  auto const layout = [&](d::host_grid const& g) -> d::tree_layout const& {
    return root < 0 ? g.tree : g.tree_from(root);
  };
  d::host_grid const first(host, 0);
  auto const tree = layout(first).at;
  bool same = true, placed = true;
  for (int r = 0; r < p; ++r) {
    if (p > 16 && r != 0 && r != p - 1) continue;
    d::host_grid const g(host, r);
    same = same && layout(g).at == tree;  // every rank runs the same tree
    placed = placed && layout(g).at.at(std::size_t(layout(g).index)) == r;
  }
  BOOST_TEST(same);
  BOOST_TEST(placed);
  std::vector<int> seen(static_cast<std::size_t>(p), 0);
  for (int r : tree)
    if (r >= 0) ++seen.at(std::size_t(r));
  BOOST_TEST(std::count(seen.begin(), seen.end(), 1) == p);  // each rank once
  // Each host but the root's sends up across hosts once; no edge hangs from an empty position.
  std::vector<int> out_of(static_cast<std::size_t>(p), 0);
  for (std::size_t v = 1; v < tree.size(); ++v) {
    if (tree[v] < 0) continue;
    int const parent = tree.at(static_cast<std::size_t>(d::binomial_parent(int(v))));
    BOOST_TEST_REQUIRE(parent >= 0, "position " << v << "'s parent is empty");
    if (host[std::size_t(parent)] != host[std::size_t(tree[v])])
      ++out_of[std::size_t(host[std::size_t(tree[v])])];
  }
  int const root_host = host[std::size_t(tree.at(0))];
  bool once = true;
  for (int h : host) once = once && out_of[std::size_t(h)] == (h == root_host ? 0 : 1);
  BOOST_TEST(once);
  if (root >= 0) {
    BOOST_TEST(tree[0] == root);
  } else {  // all_reduce's root: the first rank of a largest host
    auto const largest = std::count(host.begin(), host.end(), root_host);
    bool none_larger = true;
    for (int h : host)
      none_larger = none_larger && std::count(host.begin(), host.end(), h) <= largest;
    BOOST_TEST(none_larger);
    BOOST_TEST(tree[0] == int(std::find(host.begin(), host.end(), root_host) - host.begin()));
  }
  return d::binomial_steps(static_cast<int>(tree.size()));
}

}  // namespace

// Any split of up to 24 ranks into hosts, in blocks or interleaved: a tree over all the ranks in
// which each host sends out of itself once, no deeper than the tree inside the largest host and
// then among the hosts' first ranks (what tree_by_hosts ran before), and mostly as deep as the
// plain tree over all ranks.
BOOST_AUTO_TEST_CASE(the_tree_by_hosts_leaves_each_host_once_and_is_no_deeper_than_two_trees) {
  int splits = 0, as_deep_as_the_plain_tree = 0;
  for (int p = 1; p <= 24; ++p)
    for_each_split(p, [&](std::vector<int> const& sizes) {
      int const hosts = static_cast<int>(sizes.size());
      for (bool interleaved : {false, true})
        for (bool reversed : {false, true}) {
          auto const host = placement(sizes, interleaved, reversed);
          BOOST_TEST_CONTEXT("hosts of " << sizes.size() << ", largest " << sizes.front()
                                         << ", interleaved " << interleaved << ", reversed "
                                         << reversed) {
            int const depth = checked_tree_depth(host);
            BOOST_TEST(depth <= ceil_log2(sizes.front()) + ceil_log2(hosts));
            BOOST_TEST(depth >= ceil_log2(p));
            ++splits;
            as_deep_as_the_plain_tree += depth == ceil_log2(p);
          }
        }
    });
  BOOST_TEST(as_deep_as_the_plain_tree * 20 >= splits * 19);  // 19 in 20 at least
}

// Where a smaller host fits the room a larger host's tree leaves, the tree by hosts is as deep
// as the plain tree: 3 + 1, 1 + 3, 7 + 1, 6 + 2, 2 + 1 + 1, 5 + 2 + 1 in two or three rounds,
// where reducing inside each host first and then among the hosts takes one more.
BOOST_AUTO_TEST_CASE(a_small_host_takes_a_free_round_of_a_larger_one) {
  for (auto const& sizes : {std::vector<int>{3, 1}, std::vector<int>{7, 1}, std::vector<int>{6, 2},
                            std::vector<int>{2, 1, 1}, std::vector<int>{5, 2, 1}})
    for (bool interleaved : {false, true})
      for (bool reversed : {false, true}) {
        int p = 0;
        for (int s : sizes) p += s;
        BOOST_TEST_CONTEXT("ranks " << p << ", largest host " << sizes.front()) {
          BOOST_TEST(checked_tree_depth(placement(sizes, interleaved, reversed)) == ceil_log2(p));
          BOOST_TEST(ceil_log2(p) < ceil_log2(sizes.front()) + ceil_log2(int(sizes.size())));
        }
      }
  // 3 + 1 in blocks: the host of one rank is rank 2's child, the plain tree.
  BOOST_TEST((d::host_grid({0, 0, 0, 1}, 0).tree.at == std::vector<int>{0, 1, 2, 3}));
  // 1 + 3: the host of three leads; rank 0 is rank 3's child.
  BOOST_TEST((d::host_grid({0, 1, 1, 1}, 0).tree.at == std::vector<int>{1, 2, 3, 0}));
  // 3 + 3: rank 3's host takes the next block of four, its last position empty.
  BOOST_TEST(
      (d::host_grid({0, 0, 0, 1, 1, 1}, 0).tree.at == std::vector<int>{0, 1, 2, -1, 3, 4, 5}));
}

// Rooted anywhere (broadcast, `tree` over hosts): the root's host first, the root at position 0;
// still one edge into each other host, for every split of up to 12 ranks and every root, and
// never more than one round deeper than rooted in a largest host, nor than the plain tree.
BOOST_AUTO_TEST_CASE(the_tree_by_hosts_rooted_anywhere_enters_each_host_once) {
  for (int p = 1; p <= 12; ++p)
    for_each_split(p, [&](std::vector<int> const& sizes) {
      for (bool interleaved : {false, true}) {
        auto const host = placement(sizes, interleaved, false);
        int const deepest = checked_tree_depth(host) + 1;
        for (int root = 0; root < p; ++root)
          BOOST_TEST_CONTEXT("ranks " << p << ", hosts " << sizes.size() << ", interleaved "
                                      << interleaved << ", root " << root) {
            int const depth = checked_tree_depth(host, root);
            BOOST_TEST(depth <= deepest);
            BOOST_TEST(depth <= ceil_log2(p) + 1);
          }
      }
    });
  // Two hosts of two, interleaved, from rank 3: its host first (3, then 1), then ranks 0 and 2.
  BOOST_TEST((d::host_grid({0, 1, 0, 1}, 0).tree_from(3).at == std::vector<int>{3, 1, 0, 2}));
  // 1 + 3 from rank 0: the host of three in the next block of four, entered once.
  BOOST_TEST(
      (d::host_grid({0, 1, 1, 1}, 2).tree_from(0).at == std::vector<int>{0, -1, -1, -1, 1, 2, 3}));
}
