// Tests of example/lenet5/optimizer.hpp: exact single steps, momentum and the simplified Adam's
// per-epoch mean square, convergence on a small quadratic. (The implicit-bias limits of these
// optimizers are test/implicit_bias/'s.)
#define BOOST_TEST_MODULE lenet5_optimizer
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <span>
#include <vector>

#include "optimizer.hpp"

namespace tt = boost::test_tools;

namespace {

// f(p) = sum_i c_i (p_i - t_i)^2 / 2, an ill-conditioned quadratic with minimum t.
struct quadratic {
  std::vector<double> c{1.0, 10.0, 0.1}, t{1.0, -2.0, 3.0};
  std::vector<double> grad(std::vector<double> const& p) const {
    std::vector<double> g(p.size());
    for (std::size_t i = 0; i < p.size(); ++i) g[i] = c[i] * (p[i] - t[i]);
    return g;
  }
};

template <class Opt>
std::vector<double> minimise(Opt opt, int steps) {
  quadratic q;
  std::vector<double> p(3, 0.0);
  for (int s = 0; s < steps; ++s) {
    auto g = q.grad(p);
    opt.step(std::span<double>(p), std::span<double const>(g));
  }
  return p;
}

void one_step(auto opt, std::vector<double> p, std::vector<double> g, std::vector<double> want) {
  opt.step(std::span<double>(p), std::span<double const>(g));
  for (std::size_t i = 0; i < p.size(); ++i) BOOST_TEST(p[i] == want[i], tt::tolerance(1e-12));
}

}  // namespace

BOOST_AUTO_TEST_CASE(single_steps) {
  std::vector<double> p{1, 1, 1}, g{0.5, -2, 0};
  one_step(lenet5::sgd<double>{.lr = 0.1}, p, g, {0.95, 1.2, 1});
  one_step(lenet5::momentum<double>{.lr = 0.1, .mu = 0.9}, p, g, {0.95, 1.2, 1});
  one_step(lenet5::sign_descent<double>{.lr = 0.1}, p, g, {0.9, 1.1, 1});
  // ||g||_1 = 2.5: every moving coordinate moves by 0.25.
  one_step(lenet5::sign_descent<double>{.lr = 0.1, .l1_scale = true}, p, g, {0.75, 1.25, 1});
  // First step of the epoch: rms(g_i) = |g_i|, so the step is lr sign(g).
  one_step(lenet5::adam_simplified<double>{.lr = 0.1, .eps = 0}, p, {0.5, -2, 1e-3},
           {0.9, 1.1, 0.9});
  // Adam's first step is lr sign(g) too (bias correction), up to eps.
  one_step(lenet5::adam<double>{.lr = 0.1, .eps = 0}, p, {0.5, -2, 1e-3}, {0.9, 1.1, 0.9});
}

BOOST_AUTO_TEST_CASE(momentum_accumulates) {
  lenet5::momentum<double> opt{.lr = 1, .mu = 0.5};
  std::vector<double> p{0}, g{1};
  opt.step(std::span<double>(p), std::span<double const>(g));  // v = 1
  opt.step(std::span<double>(p), std::span<double const>(g));  // v = 1.5
  BOOST_TEST(p[0] == -2.5);
}

BOOST_AUTO_TEST_CASE(simplified_adam_uses_the_epochs_mean_square) {
  lenet5::adam_simplified<double> opt{.lr = 1, .eps = 0};
  std::vector<double> p{0}, g1{3}, g2{1};
  opt.step(std::span<double>(p), std::span<double const>(g1));  // rms 3: step 1
  BOOST_TEST(p[0] == -1.0);
  opt.step(std::span<double>(p), std::span<double const>(g2));  // rms sqrt(5): step 1/sqrt(5)
  BOOST_TEST(p[0] == -1.0 - 1 / std::sqrt(5.0), tt::tolerance(1e-15));
  opt.begin_epoch();
  opt.step(std::span<double>(p), std::span<double const>(g2));  // new epoch: rms 1, step 1
  BOOST_TEST(p[0] == -2.0 - 1 / std::sqrt(5.0), tt::tolerance(1e-15));
}

BOOST_AUTO_TEST_CASE(converge_on_a_quadratic) {
  quadratic q;
  auto near = [&](std::vector<double> const& p, double tol) {
    for (std::size_t i = 0; i < 3; ++i) BOOST_TEST(std::abs(p[i] - q.t[i]) < tol);
  };
  near(minimise(lenet5::sgd<double>{.lr = 0.15}, 2000), 1e-6);
  near(minimise(lenet5::momentum<double>{.lr = 0.05, .mu = 0.5}, 2000), 1e-6);
  near(minimise(lenet5::adam<double>{.lr = 0.01}, 5000), 1e-2);
  // A fixed sign step oscillates within lr of the minimum.
  near(minimise(lenet5::sign_descent<double>{.lr = 1e-3}, 5000), 2e-3);
}
