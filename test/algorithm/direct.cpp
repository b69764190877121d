#define BOOST_TEST_MODULE algorithm_direct
#include <boost/test/unit_test.hpp>

#include <gcl/algorithm/direct.hpp>

#include "accounting.hpp"

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
