// Tests of example/implicit_bias/implicit_bias.hpp: the solution of [1, 0.1, 0.01] . theta = 1
// that each optimizer reaches from theta = 0, to 1e-6.
#define BOOST_TEST_MODULE implicit_bias
#include <boost/test/unit_test.hpp>

#include <cmath>

#include "implicit_bias.hpp"

BOOST_AUTO_TEST_CASE(implicit_bias_limits) {
  namespace ib = implicit_bias;
  auto expect = [](ib::vec const& got, ib::vec const& want) {
    for (int i = 0; i < 3; ++i) BOOST_TEST(std::abs(got[i] - want[i]) < 1e-6);
    BOOST_TEST(std::abs(ib::residual(ib::a, got)) < 1e-9);  // a solution of a . theta = 1
  };
  // SGD: a / |a|^2 with |a|^2 = 1.0101.
  expect(ib::sgd_limit(), {1 / 1.0101, 0.1 / 1.0101, 0.01 / 1.0101});
  // Simplified Adam and L-inf steepest descent: [1, 1, 1] / (1 + 0.1 + 0.01).
  expect(ib::adam_simplified_limit(), {1 / 1.11, 1 / 1.11, 1 / 1.11});
  expect(ib::sign_l1_limit(), {1 / 1.11, 1 / 1.11, 1 / 1.11});
  // Unit-second-moment features, SGD, back in original units: theta_i = 1 / (3 a_i).
  expect(ib::rescaled_sgd_limit(), {1.0 / 3, 10.0 / 3, 100.0 / 3});
}
