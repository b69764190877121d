#define BOOST_TEST_MODULE algorithm_halving_doubling
#include <boost/test/unit_test.hpp>

#include <gcl/algorithm/halving_doubling.hpp>

#include "accounting.hpp"

using namespace accounting;

BOOST_AUTO_TEST_CASE(sums_exactly_for_every_size_and_count) {
  for (int p = 1; p <= 16; ++p)
    for (std::size_t n : counts_for(p)) {
      auto r = run<std::int64_t>(p, n, gcl::sum{}, gcl::halving_doubling{}, value);
      auto e = expected_sum<std::int64_t>(p, n, value);
      for (int k = 0; k < p; ++k)
        BOOST_TEST(r.data[k] == e, "P=" << p << " n=" << n << " rank " << k);
    }
}

BOOST_AUTO_TEST_CASE(message_counts_bytes_and_rounds_match_the_formulas) {
  for (int p = 1; p <= 16; ++p)
    for (std::size_t n : counts_for(p)) {
      auto r = run<float>(p, n, gcl::sum{}, gcl::halving_doubling{},
                          [](int k, std::size_t i) { return static_cast<float>(value(k, i)); });
      int const q = floor_pow2(p), extra = p - q, levels = log2_exact(q);
      // 2 P' log2 P' halving/doubling messages, plus r fold and r unfold messages of p.
      std::uint64_t const messages = static_cast<std::uint64_t>(2 * q * levels + 2 * extra);
      BOOST_TEST(r.total.messages_sent == messages, "P=" << p << " n=" << n);
      BOOST_TEST(r.total.messages_received == messages);
      // At reduce-scatter step k the 2^k distinct block ranges partition the vector and each is
      // held by P'/2^k ranks, i.e. P'/2^(k+1) pairs that together send it once: p P'/2^(k+1)
      // elements per step, p (P' - 1) per phase. The all-gather sends the same.
      std::uint64_t const elements = 2 * n * static_cast<std::uint64_t>(q - 1) + 2 * n * extra;
      BOOST_TEST(r.total.bytes_sent == elements * sizeof(float), "P=" << p << " n=" << n);
      BOOST_TEST(r.total.rounds == 2 * levels + (extra > 0 ? 2 : 0), "P=" << p << " n=" << n);
      if (p > 1) {
        // Largest: the whole vector (fold) or the lower half of P' blocks (the first
        // n mod P' blocks have one more element); smallest: one block of floor(n / P').
        std::size_t const half = (q / 2) * (n / q) + std::min<std::size_t>(q / 2, n % q);
        BOOST_TEST(r.total.max_message_bytes == (extra > 0 ? n : half) * sizeof(float));
        BOOST_TEST(r.total.min_message_bytes == (n / q) * sizeof(float));
      }
      auto e = expected_sum<float>(p, n, value);
      for (int k = 0; k < p; ++k) BOOST_TEST(r.data[k] == e);
    }
  // The DESIGN.md row: 2 P log2 P messages of p/2 ... p/P in 2 log2 P rounds.
  auto r = run<float>(8, 1024, gcl::sum{}, gcl::halving_doubling{},
                      [](int k, std::size_t i) { return static_cast<float>(value(k, i)); });
  BOOST_TEST(r.total.messages_sent == 2u * 8u * 3u);
  BOOST_TEST(r.total.rounds == 6);
  BOOST_TEST(r.total.max_message_bytes == 512u * sizeof(float));
  BOOST_TEST(r.total.min_message_bytes == 128u * sizeof(float));
  BOOST_TEST(r.total.sent_sizes.size() == 3u);  // p/2, p/4, p/8
}

BOOST_AUTO_TEST_CASE(keeps_rank_order_for_a_non_commutative_operator) {
  static_assert(!gcl::halving_doubling::needs_commutative);
  for (int p = 1; p <= 16; ++p)
    for (std::size_t n : {std::size_t{1}, std::size_t{5}, static_cast<std::size_t>(3 * p + 1)}) {
      auto r = run<affine>(p, n, compose{}, gcl::halving_doubling{}, affine_of);
      auto e = expected_composition(p, n);
      for (int k = 0; k < p; ++k) BOOST_TEST((r.data[k] == e), "P=" << p << " rank " << k);
    }
}

BOOST_AUTO_TEST_CASE(every_rank_gets_bit_identical_floats) {
  for (int p : {3, 5, 6, 8, 11}) {
    auto r = run<float>(p, 333, gcl::sum{}, gcl::halving_doubling{}, [](int k, std::size_t i) {
      return 0.1f * static_cast<float>(k) + 1e-3f * i;
    });
    for (int k = 1; k < p; ++k) BOOST_TEST((r.data[k] == r.data[0]));
  }
}
