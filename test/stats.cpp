#define BOOST_TEST_MODULE stats
#include <boost/test/unit_test.hpp>

#include "support/rank_checks.hpp"

#include <gcl/algorithm/ring.hpp>
#include <gcl/algorithm/tree.hpp>
#include <gcl/collective/all_reduce.hpp>
#include <gcl/communicator.hpp>
#include <gcl/spawn.hpp>
#include <gcl/stats.hpp>
#include <gcl/transport/inproc.hpp>

#include <algorithm>
#include <array>
#include <stdexcept>
#include <tuple>
#include <vector>

using counted = gcl::counting<gcl::inproc_transport>;

static_assert(gcl::transport<counted>);
static_assert(gcl::call_aware_transport<counted>);
static_assert(gcl::sendrecv_transport<counted>);
static_assert(gcl::irecv_transport<counted>);
static_assert(gcl::group_transport<counted>);

namespace {
gcl::transport_stats total(std::vector<gcl::transport_stats> const& per_rank) {
  gcl::transport_stats t;
  for (auto const& s : per_rank) t += s;
  return t;
}
}  // namespace

BOOST_AUTO_TEST_CASE(counts_messages_bytes_and_sizes) {
  auto st = gcl::spawn<counted>(2, [](auto& comm) {
    if (comm.rank() == 0) {
      comm.send(1, std::vector<int>{1, 2, 3});
      comm.send(1, 7.5);
      comm.send(1, std::vector<char>{});
    } else {
      std::vector<int> v(3);
      comm.recv(0, v);
      RANK_TEST(v[2] == 3);
      {
        auto const got = comm.template recv<double>(0);
        RANK_TEST(got == 7.5);
      }
      std::vector<char> none;
      comm.recv(0, none);
    }
    return comm.transport().stats();
  });
  BOOST_TEST(st[0].messages_sent == 3u);
  BOOST_TEST(st[0].bytes_sent == 12u + 8u);
  BOOST_TEST(st[0].min_message_bytes == 0u);
  BOOST_TEST(st[0].max_message_bytes == 12u);
  BOOST_TEST(st[0].sent_sizes.size() == 3u);
  BOOST_TEST(st[0].messages_received == 0u);
  BOOST_TEST(st[1].messages_received == 3u);
  BOOST_TEST(st[1].bytes_received == 20u);
  BOOST_TEST(st[1].messages_sent == 0u);
  // Three independent messages from rank 0: each has depth 1.
  BOOST_TEST(st[0].rounds == 1);
  BOOST_TEST(st[1].rounds == 1);
}

BOOST_AUTO_TEST_CASE(rounds_follow_the_dependency_chain) {
  // A token passed around a ring of n ranks twice: 2n dependent messages.
  for (int n : {2, 3, 5, 8}) {
    auto st = gcl::spawn<counted>(n, [n](auto& comm) {
      int right = (comm.rank() + 1) % n, left = (comm.rank() + n - 1) % n;
      for (int lap = 0; lap < 2; ++lap) {
        int token = 0;
        if (comm.rank() == 0) {
          comm.send(right, token);
          comm.recv(left, token);
        } else {
          comm.recv(left, token);
          comm.send(right, token + 1);
        }
      }
      return comm.transport().stats();
    });
    auto t = total(st);
    BOOST_TEST(t.messages_sent == 2u * n);
    BOOST_TEST(t.messages_received == 2u * n);
    BOOST_TEST(t.rounds == 2 * n);
  }
}

BOOST_AUTO_TEST_CASE(sendrecv_and_irecv_are_counted_and_concurrent_sends_share_a_round) {
  for (int n : {1, 2, 3, 7}) {
    auto st = gcl::spawn<counted>(n, [n](auto& comm) {
      int right = (comm.rank() + 1) % n, left = (comm.rank() + n - 1) % n;
      std::array<int, 4> got{};
      // Every rank shifts right twice: 2 rounds, since each shift's send precedes its receive.
      comm.sendrecv(right, std::array<int, 4>{comm.rank()}, left, got);
      long x = -1;
      auto r = comm.irecv(left, x, gcl::tag{5});
      comm.isend(right, long{comm.rank()}, gcl::tag{5}).wait();
      r.wait();
      return std::pair(got[0] == left && x == left, comm.transport().stats());
    });
    gcl::transport_stats t;
    for (auto const& [ok, s] : st) {
      BOOST_TEST(ok);
      t += s;
    }
    BOOST_TEST(t.messages_sent == 2u * n);
    BOOST_TEST(t.bytes_sent == n * (16u + 8u));
    BOOST_TEST(t.bytes_received == t.bytes_sent);
    BOOST_TEST(t.rounds == 2);
    BOOST_TEST(t.min_message_bytes == 8u);
    BOOST_TEST(t.max_message_bytes == 16u);
  }
}

BOOST_AUTO_TEST_CASE(reset_zeroes_counts_and_clock) {
  // Boost.Test is not thread-safe: ranks return what they saw and the main thread checks it.
  auto seen = gcl::spawn<counted>(2, [](auto& comm) {
    int got = 0;
    if (comm.rank() == 0)
      comm.send(1, 1);
    else
      got = comm.template recv<int>(0);
    comm.transport().reset();
    auto after_reset = comm.transport().stats();
    if (comm.rank() == 1)
      comm.send(0, 2);
    else
      got = comm.template recv<int>(1);
    return std::tuple(got, after_reset, comm.transport().stats());
  });
  BOOST_TEST(std::get<0>(seen[0]) == 2);
  BOOST_TEST(std::get<0>(seen[1]) == 1);
  for (auto const& [got, after_reset, end] : seen) {
    BOOST_TEST(after_reset.messages_sent == 0u);
    BOOST_TEST(after_reset.messages_received == 0u);
    BOOST_TEST(after_reset.rounds == 0);
    BOOST_TEST(end.rounds == 1);  // not 2: the clock restarted
  }
}

BOOST_AUTO_TEST_CASE(failures_still_propagate_through_the_decorator) {
  BOOST_CHECK_THROW(gcl::spawn<counted>(2,
                                        [](auto& comm) {
                                          if (comm.rank() == 0) throw std::runtime_error("boom");
                                          int x;
                                          comm.recv(0, x);
                                        }),
                    std::runtime_error);
  // A size mismatch is reported by the wrapped transport, on the payload, not the depth.
  BOOST_CHECK_THROW(gcl::spawn<counted>(2,
                                        [](auto& comm) {
                                          if (comm.rank() == 0)
                                            comm.send(1, std::array<int, 2>{});
                                          else {
                                            std::array<int, 3> v;
                                            comm.recv(0, v);
                                          }
                                        }),
                    gcl::transport_error);
}

// The DESIGN.md rows of the core algorithms, counted: tree 2(P-1) messages of p in
// 2 log2 P rounds; ring 2P(P-1) messages of about p/P in 2(P-1) rounds. (The other
// algorithms' rows are checked in test/algorithm/.) For P not a power of two the tree takes
// ceil(log2 P) steps per phase, but its longest chain of dependent messages is the height of
// the binomial tree, floor(log2 P) (the deepest rank is 2^floor(log2 P) - 1: one hop per set
// bit), so 2 floor(log2 P) rounds: e.g. P = 3, ranks 1 and 2 both send to 0 at once.
BOOST_AUTO_TEST_CASE(tree_and_ring_rows_of_the_design_table) {
  for (int p = 1; p <= 16; ++p) {
    int floor_log2 = 0;
    while ((2 << floor_log2) <= p) ++floor_log2;
    auto P = static_cast<std::size_t>(p);
    for (std::size_t n :
         {std::size_t{0}, std::size_t{1}, P - 1, P, P + 1, 4 * P, std::size_t{1001}}) {
      auto tree = gcl::spawn<counted>(p, [n](auto& comm) {
        std::vector<int> v(n, comm.rank() + 1);
        gcl::all_reduce(comm, v, gcl::sum{}, gcl::tree{});
        bool ok = std::all_of(v.begin(), v.end(),
                              [&](int x) { return x == (comm.size() * (comm.size() + 1)) / 2; });
        return std::pair(ok, comm.transport().stats());
      });
      gcl::transport_stats t;
      for (auto const& [ok, s] : tree) {
        BOOST_TEST(ok);
        t += s;
      }
      BOOST_TEST(t.messages_sent == 2 * (P - 1), "tree P=" << p << " n=" << n);
      BOOST_TEST(t.bytes_sent == 2 * (P - 1) * n * sizeof(int));
      BOOST_TEST(t.rounds == 2 * floor_log2, "tree P=" << p << " n=" << n);

      auto ring = gcl::spawn<counted>(p, [n](auto& comm) {
        std::vector<int> v(n, comm.rank() + 1);
        gcl::all_reduce(comm, v, gcl::sum{}, gcl::ring{});
        bool ok = std::all_of(v.begin(), v.end(),
                              [&](int x) { return x == (comm.size() * (comm.size() + 1)) / 2; });
        return std::pair(ok, comm.transport().stats());
      });
      gcl::transport_stats r;
      for (auto const& [ok, s] : ring) {
        BOOST_TEST(ok);
        r += s;
      }
      BOOST_TEST(r.messages_sent == 2 * P * (P - 1), "ring P=" << p << " n=" << n);
      // Each of the 2(P-1) steps moves every chunk once: p elements per step in total.
      BOOST_TEST(r.bytes_sent == 2 * (P - 1) * n * sizeof(int));
      BOOST_TEST(r.rounds == 2 * (p - 1), "ring P=" << p << " n=" << n);
      if (p > 1) {
        BOOST_TEST(r.max_message_bytes == ((n + P - 1) / P) * sizeof(int));
        BOOST_TEST(r.min_message_bytes == (n / P) * sizeof(int));
      }
    }
  }
}
