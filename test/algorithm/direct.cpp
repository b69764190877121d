#define BOOST_TEST_MODULE algorithm_direct
#include <boost/test/unit_test.hpp>

#include <gcl/algorithm/direct.hpp>

#include <gcl/collective/all_gather.hpp>
#include <gcl/collective/broadcast.hpp>
#include <gcl/collective/reduce.hpp>

#include "accounting.hpp"

#include <tuple>

using namespace accounting;

BOOST_AUTO_TEST_CASE(all_reduce_sends_p_times_p_minus_1_messages_in_one_round) {
  for (int p = 1; p <= 16; ++p)
    for (std::size_t n : counts_for(p)) {
      auto r = run<std::int64_t>(p, n, gcl::sum{}, gcl::direct{}, value);
      auto e = expected_sum<std::int64_t>(p, n, value);
      for (int k = 0; k < p; ++k)
        BOOST_TEST(r.data[k] == e, "P=" << p << " n=" << n << " rank " << k);
      std::uint64_t const messages = static_cast<std::uint64_t>(p) * (p - 1);
      BOOST_TEST(r.total.messages_sent == messages, "P=" << p << " n=" << n);
      BOOST_TEST(r.total.messages_received == messages);
      BOOST_TEST(r.total.bytes_sent == messages * n * sizeof(std::int64_t));
      BOOST_TEST(r.total.rounds == (p > 1 ? 1 : 0));
      for (int k = 0; k < p; ++k)
        BOOST_TEST(r.per_rank[k].messages_sent == static_cast<std::uint64_t>(p - 1));
      if (p > 1) {
        BOOST_TEST(r.total.min_message_bytes == n * sizeof(std::int64_t));
        BOOST_TEST(r.total.max_message_bytes == n * sizeof(std::int64_t));
      }
    }
}

BOOST_AUTO_TEST_CASE(all_reduce_keeps_rank_order_and_is_bit_identical) {
  static_assert(!gcl::direct::needs_commutative);
  for (int p = 1; p <= 9; ++p) {
    auto r = run<affine>(p, 6, compose{}, gcl::direct{}, affine_of);
    auto e = expected_composition(p, 6);
    for (int k = 0; k < p; ++k) BOOST_TEST((r.data[k] == e));
  }
  for (int p : {3, 5, 8}) {
    auto r = run<float>(p, 333, gcl::sum{}, gcl::direct{}, [](int k, std::size_t i) {
      return 0.1f * static_cast<float>(k) + 1e-3f * i;
    });
    for (int k = 1; k < p; ++k) BOOST_TEST((r.data[k] == r.data[0]));
  }
}

BOOST_AUTO_TEST_CASE(all_gather_broadcast_and_reduce_in_one_round) {
  for (int p : {1, 2, 3, 4, 5, 7, 8})
    for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{5}, std::size_t{1000}})
      for (int root : {0, p - 1, p / 2}) {
        auto out = gcl::spawn<counted>(p, [&](auto& comm) {
          int const me = comm.rank();
          std::vector<std::int64_t> in(n), gathered(n * p);
          for (std::size_t i = 0; i < n; ++i) in[i] = value(me, i);
          gcl::all_gather(comm, in, gathered, gcl::direct{});
          bool ok = true;
          for (int r = 0; r < p; ++r)
            for (std::size_t i = 0; i < n; ++i) ok = ok && gathered[r * n + i] == value(r, i);
          auto gather_stats = comm.transport().stats();
          comm.transport().reset();

          std::vector<std::int64_t> b(n, me == root ? 42 : -1);
          gcl::broadcast(comm, b, root, gcl::direct{});
          for (auto x : b) ok = ok && x == 42;
          auto broadcast_stats = comm.transport().stats();
          comm.transport().reset();

          std::vector<affine> m(n);
          for (std::size_t i = 0; i < n; ++i) m[i] = affine_of(me, i);
          gcl::reduce(comm, m, root, compose{}, gcl::direct{});
          auto e = expected_composition(p, n);
          for (std::size_t i = 0; i < n; ++i)
            ok = ok && (me == root ? m[i] == e[i] : m[i] == affine_of(me, i));
          return std::tuple(ok, gather_stats, broadcast_stats, comm.transport().stats());
        });
        gcl::transport_stats g, b, r;
        for (auto const& [ok, gs, bs, rs] : out) {
          BOOST_TEST(ok, "P=" << p << " n=" << n << " root " << root);
          g += gs;
          b += bs;
          r += rs;
        }
        auto const P = static_cast<std::uint64_t>(p);
        BOOST_TEST(g.messages_sent == P * (P - 1));
        BOOST_TEST(g.bytes_sent == P * (P - 1) * n * sizeof(std::int64_t));
        BOOST_TEST(b.messages_sent == P - 1);
        BOOST_TEST(r.messages_sent == P - 1);
        // The reset between collectives happens on each rank at a different time, so only
        // the first collective's rounds are exact: one.
        BOOST_TEST(g.rounds == (p > 1 ? 1 : 0));
      }
}
