#define BOOST_TEST_MODULE algorithm_tree
#include <boost/test/unit_test.hpp>

#include <gcl/algorithm/tree.hpp>
#include <gcl/collective/barrier.hpp>
#include <gcl/collective/broadcast.hpp>
#include <gcl/collective/gather.hpp>
#include <gcl/collective/reduce.hpp>
#include <gcl/collective/scatter.hpp>
#include <gcl/detail/binomial.hpp>

#include "accounting.hpp"
#include "recording.hpp"

using namespace accounting;
namespace d = gcl::detail;

// The homework's partner formula, written out independently of detail/binomial.hpp: at step i
// (1-based) of the reduce phase, worker n with n mod 2^i == 2^(i-1) sends to n - 2^(i-1).
int homework_partner(int n, int i) {
  int const two_i = 1 << i, half = two_i / 2;
  return n % two_i == half ? n - half : -1;
}

BOOST_AUTO_TEST_CASE(partner_function_is_the_homework_formula) {
  for (int p = 1; p <= 64; ++p) {
    BOOST_TEST(d::binomial_steps(p) == ceil_log2(p));
    std::vector<int> sends(p, 0), children(p, 0);
    for (int i = 1; i <= d::binomial_steps(p); ++i)
      for (int n = 0; n < p; ++n) {
        BOOST_TEST(d::binomial_partner(n, i) == homework_partner(n, i), "n=" << n << " i=" << i);
        if (int to = d::binomial_partner(n, i); to >= 0) {
          ++sends[n];
          ++children[to];
          BOOST_TEST(d::binomial_child(to, i, p) == n);         // the receiver expects exactly n
          BOOST_TEST(i <= d::binomial_last_child_step(to, p));  // and looks for it at step i
          BOOST_TEST(d::binomial_send_step(n) == i);
          BOOST_TEST(d::binomial_parent(n) == to);
        }
      }
    for (int n = 0; n < p; ++n) {
      BOOST_TEST(sends[n] == (n == 0 ? 0 : 1), "every worker but the root sends exactly once");
      BOOST_TEST(children[n] == d::binomial_child_count(n, p));
    }
    // Subtrees are contiguous and partition the ranks.
    int covered = 1;
    for (int n = 1; n < p; ++n) covered += d::binomial_parent(n) >= 0;
    BOOST_TEST(covered == p);
    BOOST_TEST(d::binomial_subtree_size(0, p) == p);
  }
  // The homework's four workers P1..P4 are ranks 0..3: step 1 P2->P1, P4->P3; step 2 P3->P1.
  BOOST_TEST(d::binomial_partner(1, 1) == 0);
  BOOST_TEST(d::binomial_partner(3, 1) == 2);
  BOOST_TEST(d::binomial_partner(2, 2) == 0);
  BOOST_TEST(d::binomial_partner(2, 1) == -1);
}

BOOST_AUTO_TEST_CASE(relative_ranks_round_trip) {
  for (int p = 1; p <= 9; ++p)
    for (int root = 0; root < p; ++root)
      for (int r = 0; r < p; ++r) {
        int rel = d::relative_rank(r, root, p);
        BOOST_TEST((rel >= 0 && rel < p));
        BOOST_TEST(d::absolute_rank(rel, root, p) == r);
        BOOST_TEST((rel == 0) == (r == root));
      }
}

// counting's rounds are the longest chain of dependent messages. In the binomial tree the chain
// into relative rank r has popcount(r) hops, and the largest popcount below P is floor(log2 P),
// so a phase is floor(log2 P) rounds deep although it takes ceil(log2 P) steps when a rank
// sends one message per step (the two agree when P is a power of two).
int floor_log2(int p) {
  return log2_exact(floor_pow2(p));
}

BOOST_AUTO_TEST_CASE(all_reduce_sends_2_p_minus_1_full_messages_2_floor_log2_p_rounds_deep) {
  for (int p = 1; p <= 16; ++p)
    for (std::size_t n : counts_for(p)) {
      auto r = run<std::int64_t>(p, n, gcl::sum{}, gcl::tree{}, value);
      auto e = expected_sum<std::int64_t>(p, n, value);
      for (int k = 0; k < p; ++k)
        BOOST_TEST(r.data[k] == e, "P=" << p << " n=" << n << " rank " << k);
      std::uint64_t const messages = 2u * static_cast<std::uint64_t>(p - 1);
      BOOST_TEST(r.total.messages_sent == messages, "P=" << p << " n=" << n);
      BOOST_TEST(r.total.bytes_sent == messages * n * sizeof(std::int64_t));
      BOOST_TEST(r.total.rounds == 2 * floor_log2(p), "P=" << p << " n=" << n);
      if (p > 1) {
        BOOST_TEST(r.total.min_message_bytes == n * sizeof(std::int64_t));
        BOOST_TEST(r.total.max_message_bytes == n * sizeof(std::int64_t));
      }
      // Root 0 sends ceil(log2 P) messages in the broadcast; every other rank sends one up and
      // one per child down.
      for (int k = 0; k < p; ++k)
        BOOST_TEST(r.per_rank[k].messages_sent ==
                   static_cast<std::uint64_t>((k != 0) + d::binomial_child_count(k, p)));
    }
}

BOOST_AUTO_TEST_CASE(all_reduce_non_commutative_is_exact_in_rank_order) {
  static_assert(!gcl::tree::needs_commutative);
  for (int p = 1; p <= 12; ++p) {
    auto r = run<affine>(p, 9, compose{}, gcl::tree{}, affine_of);
    auto e = expected_composition(p, 9);
    for (int k = 0; k < p; ++k) BOOST_TEST((r.data[k] == e), "P=" << p << " rank " << k);
  }
}

BOOST_AUTO_TEST_CASE(rooted_collectives_message_counts) {
  for (int p = 1; p <= 9; ++p)
    for (int root = 0; root < p; ++root) {
      std::size_t const n = 5;
      auto const P = static_cast<std::uint64_t>(p);
      auto b = counted_run(p, [&](auto& comm) {
        std::vector<int> v(n, comm.rank());
        gcl::broadcast(comm, v, root, gcl::tree{});
      });
      BOOST_TEST(b.messages_sent == P - 1);
      BOOST_TEST(b.rounds == floor_log2(p));
      auto red = counted_run(p, [&](auto& comm) {
        std::vector<int> v(n, comm.rank());
        gcl::reduce(comm, v, root, gcl::sum{}, gcl::tree{});
      });
      BOOST_TEST(red.messages_sent == P - 1);
      BOOST_TEST(red.rounds == floor_log2(p));
      // A non-commutative op reduces to rank 0 in rank order, then sends the result to root.
      auto nc = counted_run(p, [&](auto& comm) {
        std::vector<int> v(n, comm.rank());
        gcl::reduce(
            comm, v, root, [](int a, int) { return a; }, gcl::tree{});
      });
      BOOST_TEST(nc.messages_sent == P - 1 + (root != 0 ? 1 : 0));
      // Gather and scatter: P-1 messages; the rank at relative position r forwards its whole
      // subtree, so the bytes are the sum of the subtree sizes.
      std::uint64_t blocks = 0;
      for (int rel = 1; rel < p; ++rel) blocks += d::binomial_subtree_size(rel, p);
      auto g = counted_run(p, [&](auto& comm) {
        std::vector<int> out(comm.rank() == root ? n * p : 0);
        gcl::gather(comm, std::vector<int>(n, comm.rank()), out, root, gcl::tree{});
      });
      BOOST_TEST(g.messages_sent == P - 1);
      BOOST_TEST(g.bytes_sent == blocks * n * sizeof(int));
      auto s = counted_run(p, [&](auto& comm) {
        std::vector<int> in(comm.rank() == root ? n * p : 0), out(n);
        gcl::scatter(comm, in, out, root, gcl::tree{});
      });
      BOOST_TEST(s.messages_sent == P - 1);
      BOOST_TEST(s.bytes_sent == blocks * n * sizeof(int));
      auto bar = counted_run(p, [&](auto& comm) { gcl::barrier(comm, gcl::tree{}); });
      BOOST_TEST(bar.messages_sent == 2 * (P - 1));
      BOOST_TEST(bar.bytes_sent == 0u);
      BOOST_TEST(bar.rounds == 2 * floor_log2(p));
    }
}

BOOST_AUTO_TEST_CASE(the_tree_really_runs_the_homework_schedule) {
  // Rank n's sends, in order: one to n' = n - 2^(i-1) at its step i of phase I (carrying the
  // sum over its subtree), then phase II to n + 2^(i-1) for i = its last step down to 1.
  for (int N = 1; N <= 12; ++N) {
    auto logs = recording::run(N, [](auto& comm) {
      std::vector<std::int64_t> v(3, 1);
      gcl::all_reduce(comm, v, gcl::sum{}, gcl::tree{});
    });
    for (int n = 0; n < N; ++n) {
      std::vector<int> peers, want;
      std::vector<double> firsts, want_firsts;
      for (auto const& m : logs[n]) peers.push_back(m.peer), firsts.push_back(m.first);
      int last = ceil_log2(N);
      for (int i = 1; i <= ceil_log2(N); ++i)
        if (homework_partner(n, i) >= 0) {
          want.push_back(homework_partner(n, i));
          want_firsts.push_back(d::binomial_subtree_size(n, N));  // ones summed over the subtree
          last = i - 1;
        }
      for (int i = last; i >= 1; --i)
        if (n % (1 << i) == 0 && n + (1 << (i - 1)) < N) {
          want.push_back(n + (1 << (i - 1)));
          want_firsts.push_back(N);
        }
      BOOST_TEST(peers == want, boost::test_tools::per_element());
      BOOST_TEST(firsts == want_firsts, boost::test_tools::per_element());
    }
  }
}
