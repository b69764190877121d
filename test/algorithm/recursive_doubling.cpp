#define BOOST_TEST_MODULE algorithm_recursive_doubling
#include <boost/test/unit_test.hpp>

#include <gcl/algorithm/recursive_doubling.hpp>

#include "accounting.hpp"

using namespace accounting;

BOOST_AUTO_TEST_CASE(sums_exactly_for_every_size_and_count) {
  for (int p = 1; p <= 16; ++p)
    for (std::size_t n : counts_for(p)) {
      auto r = run<std::int64_t>(p, n, gcl::sum{}, gcl::recursive_doubling{}, value);
      auto e = expected_sum<std::int64_t>(p, n, value);
      for (int k = 0; k < p; ++k)
        BOOST_TEST(r.data[k] == e, "P=" << p << " n=" << n << " rank " << k);
    }
}

BOOST_AUTO_TEST_CASE(message_counts_bytes_and_rounds_match_the_formulas) {
  for (int p = 1; p <= 16; ++p)
    for (std::size_t n : counts_for(p)) {
      auto r = run<float>(p, n, gcl::sum{}, gcl::recursive_doubling{},
                          [](int k, std::size_t i) { return static_cast<float>(value(k, i)); });
      int const q = floor_pow2(p), extra = p - q, levels = log2_exact(q);
      // P' log2 P' exchanges plus r fold and r unfold messages, all of the whole vector.
      std::uint64_t const messages = static_cast<std::uint64_t>(q * levels + 2 * extra);
      BOOST_TEST(r.total.messages_sent == messages, "P=" << p << " n=" << n);
      BOOST_TEST(r.total.messages_received == messages);
      BOOST_TEST(r.total.bytes_sent == messages * n * sizeof(float));
      // Rounds (longest chain): the folded survivors start one message behind, so the fold
      // adds one round; the unfold adds another only when some pair of folded survivors is
      // log2 P' apart (u = 2^(L-1) - 1 and 2^(L-1) both < r), that is when r > P'/2.
      int const rounds = levels + (extra == 0 ? 0 : extra > q / 2 ? 2 : 1);
      BOOST_TEST(r.total.rounds == rounds, "P=" << p << " n=" << n);
      if (messages > 0) {
        BOOST_TEST(r.total.min_message_bytes == n * sizeof(float));
        BOOST_TEST(r.total.max_message_bytes == n * sizeof(float));
      }
      auto e = expected_sum<float>(p, n, value);
      for (int k = 0; k < p; ++k) BOOST_TEST(r.data[k] == e);
    }
  // The DESIGN.md row for a power of two: P log2 P messages in log2 P rounds.
  auto r = run<float>(8, 1000, gcl::sum{}, gcl::recursive_doubling{},
                      [](int k, std::size_t i) { return static_cast<float>(value(k, i)); });
  BOOST_TEST(r.total.messages_sent == 8u * 3u);
  BOOST_TEST(r.total.rounds == 3);
}

BOOST_AUTO_TEST_CASE(keeps_rank_order_for_a_non_commutative_operator) {
  static_assert(!gcl::recursive_doubling::needs_commutative);
  for (int p = 1; p <= 16; ++p)
    for (std::size_t n : {std::size_t{1}, std::size_t{5}}) {
      auto r = run<affine>(p, n, compose{}, gcl::recursive_doubling{}, affine_of);
      auto e = expected_composition(p, n);
      for (int k = 0; k < p; ++k) BOOST_TEST((r.data[k] == e), "P=" << p << " rank " << k);
    }
}

BOOST_AUTO_TEST_CASE(every_rank_gets_bit_identical_floats) {
  for (int p : {3, 5, 6, 8, 11}) {
    auto r = run<float>(p, 333, gcl::sum{}, gcl::recursive_doubling{}, [](int k, std::size_t i) {
      return 0.1f * static_cast<float>(k) + 1e-3f * i;
    });
    for (int k = 1; k < p; ++k) BOOST_TEST((r.data[k] == r.data[0]));
  }
}
