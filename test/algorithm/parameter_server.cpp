#define BOOST_TEST_MODULE algorithm_parameter_server
#include <boost/test/unit_test.hpp>

#include <gcl/algorithm/parameter_server.hpp>

#include "accounting.hpp"

using namespace accounting;

BOOST_AUTO_TEST_CASE(rank_zero_serves_2_p_minus_1_messages_in_2_rounds) {
  for (int p = 1; p <= 16; ++p)
    for (std::size_t n : counts_for(p)) {
      auto r = run<std::int64_t>(p, n, gcl::sum{}, gcl::parameter_server{}, value);
      auto e = expected_sum<std::int64_t>(p, n, value);
      for (int k = 0; k < p; ++k)
        BOOST_TEST(r.data[k] == e, "P=" << p << " n=" << n << " rank " << k);
      std::uint64_t const messages = 2u * static_cast<std::uint64_t>(p - 1);
      BOOST_TEST(r.total.messages_sent == messages);
      BOOST_TEST(r.total.bytes_sent == messages * n * sizeof(std::int64_t));
      BOOST_TEST(r.total.rounds == (p > 1 ? 2 : 0));
      // The server sends P - 1 and receives P - 1; each worker one of each.
      BOOST_TEST(r.per_rank[0].messages_sent == static_cast<std::uint64_t>(p - 1));
      for (int k = 1; k < p; ++k) BOOST_TEST(r.per_rank[k].messages_sent == 1u);
    }
}

BOOST_AUTO_TEST_CASE(dedicated_server_ignores_its_data_and_sends_2n_for_n_workers) {
  for (int p = 1; p <= 16; ++p)
    for (std::size_t n : counts_for(p)) {
      int const workers = p - 1, server = p - 1;
      // The server's data is garbage that must not reach the result.
      auto make = [server](int k, std::size_t i) { return k == server ? 1000003 : value(k, i); };
      auto r = run<std::int64_t>(p, n, gcl::sum{}, gcl::parameter_server{.dedicated_server = true},
                                 make);
      if (p == 1) {  // no worker: nothing happens
        BOOST_TEST(r.total.messages_sent == 0u);
        continue;
      }
      auto e = expected_sum<std::int64_t>(workers, n, value);
      for (int k = 0; k < p; ++k)
        BOOST_TEST(r.data[k] == e, "P=" << p << " n=" << n << " rank " << k);
      BOOST_TEST(r.total.messages_sent == 2u * static_cast<std::uint64_t>(workers));
      BOOST_TEST(r.total.bytes_sent == 2u * workers * n * sizeof(std::int64_t));
      BOOST_TEST(r.total.rounds == 2);
      BOOST_TEST(r.per_rank[server].messages_sent == static_cast<std::uint64_t>(workers));
      BOOST_TEST(r.per_rank[server].messages_received == static_cast<std::uint64_t>(workers));
    }
}

BOOST_AUTO_TEST_CASE(keeps_rank_order_for_a_non_commutative_operator) {
  static_assert(!gcl::parameter_server::needs_commutative);
  for (int p = 1; p <= 9; ++p) {
    auto r = run<affine>(p, 4, compose{}, gcl::parameter_server{}, affine_of);
    auto e = expected_composition(p, 4);
    for (int k = 0; k < p; ++k) BOOST_TEST((r.data[k] == e));
  }
  for (int p = 2; p <= 9; ++p) {
    auto r =
        run<affine>(p, 4, compose{}, gcl::parameter_server{.dedicated_server = true}, affine_of);
    auto e = expected_composition(p - 1, 4);
    for (int k = 0; k < p; ++k) BOOST_TEST((r.data[k] == e));
  }
}
