// Gradient checks of every LeNet-5 layer (example/lenet5/layers.hpp) and of the whole network
// (network.hpp) against central finite differences, in double precision. For a layer with
// output y, the test loss is L = sum(R * y) with R fixed and random, so dL/dy = R; every
// parameter and input gradient must match (L(x + h) - L(x - h)) / 2h with h = 1e-6, to a
// relative error below 1e-6 (the truncation error is O(h^2) ~ 1e-12 for these smooth or
// piecewise-linear layers, rounding ~ 1e-16 / h ~ 1e-10).
#define BOOST_TEST_MODULE lenet5_layers
#include <boost/test/unit_test.hpp>

#include "blas_threads.hpp"

#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <vector>

#include "layers.hpp"
#include "network.hpp"

namespace {

struct blas_one_thread {
  blas_one_thread() { lenet5::set_blas_threads(1); }
};
BOOST_TEST_GLOBAL_FIXTURE(blas_one_thread);

std::vector<double> random_vector(std::size_t n, std::uint64_t seed, double lo = -1,
                                  double hi = 1) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<double> v(n);
  for (auto& x : v) x = u(rng);
  return v;
}

double dot(std::vector<double> const& a, std::vector<double> const& b) {
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

// Checks analytic[i] against the central difference of loss() in v[i], for every i.
void check(std::vector<double>& v, std::vector<double> const& analytic,
           std::function<double()> const& loss, char const* what) {
  double const h = 1e-6;
  double worst = 0;
  for (std::size_t i = 0; i < v.size(); ++i) {
    double const keep = v[i];
    v[i] = keep + h;
    double const up = loss();
    v[i] = keep - h;
    double const down = loss();
    v[i] = keep;
    double const numeric = (up - down) / (2 * h);
    double const err = std::abs(numeric - analytic[i]) / std::max(1.0, std::abs(numeric));
    worst = std::max(worst, err);
    if (err > 1e-6)
      BOOST_ERROR(what << "[" << i << "]: analytic " << analytic[i] << ", numeric " << numeric);
  }
  BOOST_TEST_MESSAGE(what << ": worst relative error " << worst);
  BOOST_TEST(worst < 1e-6, what);
}

}  // namespace

BOOST_AUTO_TEST_CASE(conv2d_with_and_without_padding) {
  for (auto shape : {lenet5::conv_shape{.cin = 1, .cout = 3, .k = 5, .pad = 2, .h = 8, .w = 8},
                     lenet5::conv_shape{.cin = 2, .cout = 3, .k = 3, .pad = 0, .h = 6, .w = 5}}) {
    int const batch = 2;
    lenet5::conv2d<double> conv(shape);
    auto p = random_vector(conv.parameters(), 1);
    std::vector<double> g(p.size());
    conv.bind(p.data(), g.data());
    auto x = random_vector(std::size_t(shape.cin) * batch * shape.h * shape.w, 2);
    std::size_t const out_n = std::size_t(shape.cout) * batch * shape.out_h() * shape.out_w();
    auto r = random_vector(out_n, 3);
    std::vector<double> y(out_n), dx(x.size());
    auto loss = [&] {
      conv.forward(x.data(), batch, y.data());
      return dot(r, y);
    };
    loss();
    conv.backward(r.data(), batch, dx.data());
    auto const gp = g;
    check(p, gp, loss, "conv parameters");
    check(x, dx, loss, "conv input");
  }
}

BOOST_AUTO_TEST_CASE(conv2d_matches_a_direct_convolution) {
  lenet5::conv_shape s{.cin = 2, .cout = 2, .k = 3, .pad = 1, .h = 4, .w = 5};
  int const batch = 2;
  lenet5::conv2d<double> conv(s);
  auto p = random_vector(conv.parameters(), 4);
  std::vector<double> g(p.size());
  conv.bind(p.data(), g.data());
  auto x = random_vector(std::size_t(s.cin) * batch * s.h * s.w, 5);
  std::vector<double> y(std::size_t(s.cout) * batch * s.out_h() * s.out_w());
  conv.forward(x.data(), batch, y.data());
  for (int o = 0; o < s.cout; ++o)
    for (int b = 0; b < batch; ++b)
      for (int i = 0; i < s.out_h(); ++i)
        for (int j = 0; j < s.out_w(); ++j) {
          double acc = p[conv.shape().weights() + o];
          for (int c = 0; c < s.cin; ++c)
            for (int ki = 0; ki < s.k; ++ki)
              for (int kj = 0; kj < s.k; ++kj) {
                int yy = i + ki - s.pad, xx = j + kj - s.pad;
                if (yy < 0 || yy >= s.h || xx < 0 || xx >= s.w) continue;
                acc += p[((o * s.cin + c) * s.k + ki) * s.k + kj] *
                       x[((c * batch + b) * s.h + yy) * s.w + xx];
              }
          BOOST_TEST(y[((o * batch + b) * s.out_h() + i) * s.out_w() + j] == acc,
                     boost::test_tools::tolerance(1e-12));
        }
}

BOOST_AUTO_TEST_CASE(dense_layer) {
  int const batch = 3;
  lenet5::dense<double> fc(7, 4);
  auto p = random_vector(fc.parameters(), 6);
  std::vector<double> g(p.size());
  fc.bind(p.data(), g.data());
  auto x = random_vector(7 * batch, 7);
  auto r = random_vector(4 * batch, 8);
  std::vector<double> y(4 * batch), dx(x.size());
  auto loss = [&] {
    fc.forward(x.data(), batch, y.data());
    return dot(r, y);
  };
  loss();
  fc.backward(r.data(), batch, dx.data());
  auto const gp = g;
  check(p, gp, loss, "dense parameters");
  check(x, dx, loss, "dense input");
}

BOOST_AUTO_TEST_CASE(relu) {
  auto x = random_vector(50, 9);
  auto r = random_vector(50, 10);
  std::vector<double> y(50), dx(50);
  auto loss = [&] {
    y = x;
    lenet5::relu_forward(y.data(), y.size());
    return dot(r, y);
  };
  loss();
  lenet5::relu_backward(y.data(), r.data(), dx.data(), dx.size());
  check(x, dx, loss, "relu input");
}

BOOST_AUTO_TEST_CASE(max_pool) {
  int const planes = 3, h = 4, w = 6;
  auto x = random_vector(planes * h * w, 11);
  auto r = random_vector(planes * h * w / 4, 12);
  std::vector<double> y(r.size()), dx(x.size());
  lenet5::max_pool2<double> pool;
  auto loss = [&] {
    pool.forward(x.data(), planes, h, w, y.data());
    return dot(r, y);
  };
  loss();
  pool.backward(r.data(), dx.data());
  BOOST_TEST(y[0] == std::max({x[0], x[1], x[w], x[w + 1]}));
  check(x, dx, loss, "max pool input");
}

BOOST_AUTO_TEST_CASE(softmax_cross_entropy) {
  int const classes = 10, batch = 4;
  auto z = random_vector(classes * batch, 13, -3, 3);
  std::vector<std::uint8_t> labels{3, 0, 9, 3};
  std::vector<double> dz(z.size());
  lenet5::softmax_cross_entropy<double>(z.data(), labels.data(), classes, batch, dz.data());
  auto loss = [&] {
    return lenet5::softmax_cross_entropy<double>(z.data(), labels.data(), classes, batch, nullptr);
  };
  check(z, dz, loss, "softmax cross-entropy logits");
  // Uniform logits: the loss is log(classes).
  std::vector<double> flat(classes * batch, 0.5);
  BOOST_TEST(lenet5::softmax_cross_entropy<double>(flat.data(), labels.data(), classes, batch,
                                                   nullptr) == std::log(10.0),
             boost::test_tools::tolerance(1e-12));
}

BOOST_AUTO_TEST_CASE(whole_network) {
  using net_t = lenet5::network<double>;
  std::vector<double> p(net_t::parameter_count), g(p.size());
  net_t net(p, g);
  net.init(7);
  // Random biases too, so that no ReLU sits exactly at its kink.
  std::mt19937_64 rng(3);
  for (auto& v : p)
    if (v == 0) v = std::uniform_real_distribution<double>(-0.1, 0.1)(rng);
  int const batch = 3;
  auto x = random_vector(std::size_t(batch) * 784, 14);
  std::vector<std::uint8_t> labels{1, 7, 4};
  net.forward_backward(x.data(), labels.data(), batch);
  auto const gp = g;
  // Every parameter of C1 and samples of the others (all 61706 would take too long).
  std::vector<std::size_t> idx;
  for (std::size_t i = 0; i < 156; ++i) idx.push_back(i);
  for (std::size_t i = 156; i < 156 + 2416; i += 5) idx.push_back(i);
  for (std::size_t i = 156 + 2416; i < net_t::parameter_count - 850; i += 97) idx.push_back(i);
  for (std::size_t i = net_t::parameter_count - 850; i < net_t::parameter_count; i += 3)
    idx.push_back(i);
  std::vector<double> sub(idx.size()), sub_grad(idx.size());
  for (std::size_t j = 0; j < idx.size(); ++j) sub[j] = p[idx[j]], sub_grad[j] = gp[idx[j]];
  auto loss = [&] {
    for (std::size_t j = 0; j < idx.size(); ++j) p[idx[j]] = sub[j];
    return net.loss(x.data(), labels.data(), batch);
  };
  check(sub, sub_grad, loss, "network parameters");
  BOOST_TEST(net_t::parameter_count == 61706u);
}

BOOST_AUTO_TEST_CASE(arena_size_is_checked) {
  std::vector<float> p(10), g(10);
  BOOST_CHECK_THROW(lenet5::network<float>(p, g), std::invalid_argument);
}
