#pragma once
/// \file
/// Optimizers as policies: each is a small value type with `step(params, grads)` that updates
/// the parameter arena in place from the gradient arena, and `begin_epoch()` (a no-op except for
/// the simplified Adam, whose scaling is per epoch). They are the steepest descents of the
/// optimizer homework (doc/homework.md): minimise g.u + 1/(2 lr) ||u||^2 over the update u, for
///
/// | optimizer      | norm            | update u                                    |
/// |----------------|-----------------|---------------------------------------------|
/// | sgd            | L2              | -lr g                                       |
/// | sign           | L-inf           | -lr sign(g)  (fixed step, signSGD)          |
/// | sign, l1_scale | L-inf, exact    | -lr ||g||_1 sign(g)                         |
/// | adam_simplified| diagonal M      | -lr g / sqrt(mean over the epoch of g^2)    |
/// | adam           | (Kingma & Ba)   | -lr mhat / (sqrt(vhat) + eps)               |
/// | momentum       | (heavy ball)    | v = mu v + g; u = -lr v                     |
///
/// (The exact minimiser of g.u + 1/(2 lr) ||u||_inf^2 is u = -lr ||g||_1 sign(g); with the
/// homework's 1/lr penalty it is half that. We keep the 1/(2 lr) form so that sgd reads -lr g.)

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <span>
#include <string>
#include <vector>

namespace lenet5 {

/// Plain SGD: p -= lr g.   `lenet5::sgd<float> opt{.lr = 0.05f}; opt.step(p, g);`
template <class T = float>
struct sgd {
  T lr = T(0.05);
  static constexpr char const* name = "sgd";
  void begin_epoch() {}
  void step(std::span<T> p, std::span<T const> g) {
    for (std::size_t i = 0; i < p.size(); ++i) p[i] -= lr * g[i];
  }
};

/// Heavy-ball momentum as PyTorch's SGD(momentum=mu): v = mu v + g; p -= lr v.
///
///     lenet5::momentum<float> opt{.lr = 0.01f, .mu = 0.9f};
template <class T = float>
struct momentum {
  T lr = T(0.01), mu = T(0.9);
  std::vector<T> v = {};
  static constexpr char const* name = "momentum";
  void begin_epoch() {}
  void step(std::span<T> p, std::span<T const> g) {
    if (v.size() != p.size()) v.assign(p.size(), T(0));
    for (std::size_t i = 0; i < p.size(); ++i) {
      v[i] = mu * v[i] + g[i];
      p[i] -= lr * v[i];
    }
  }
};

/// Steepest descent under the L-infinity norm: p -= s sign(g), with s = lr (signSGD), or
/// s = lr ||g||_1 with `l1_scale` (the exact minimiser of g.u + ||u||_inf^2 / (2 lr)).
///
///     lenet5::sign_descent<float> opt{.lr = 1e-3f};
template <class T = float>
struct sign_descent {
  T lr = T(1e-3);
  bool l1_scale = false;
  static constexpr char const* name = "sign";
  void begin_epoch() {}
  void step(std::span<T> p, std::span<T const> g) {
    T s = lr;
    if (l1_scale) {
      double l1 = 0;
      for (T x : g) l1 += std::abs(double(x));
      s = T(lr * l1);
    }
    for (std::size_t i = 0; i < p.size(); ++i) p[i] -= g[i] > T(0) ? s : (g[i] < T(0) ? -s : T(0));
  }
};

/// The simplified Adam of the optimizer homework: p -= lr M g with M diagonal, M_ii the inverse
/// root mean square of coordinate i's gradients during the current epoch (the mean is over the
/// epoch's steps so far, this one included, and restarts at `begin_epoch()`), no momentum.
/// With one step per epoch it is sign descent: M g = sign(g).
///
///     lenet5::adam_simplified<float> opt{.lr = 1e-3f};
template <class T = float>
struct adam_simplified {
  T lr = T(1e-3), eps = T(1e-8);
  std::vector<T> sum_sq = {};
  std::size_t steps = 0;
  static constexpr char const* name = "adam_simplified";
  void begin_epoch() {
    std::fill(sum_sq.begin(), sum_sq.end(), T(0));
    steps = 0;
  }
  void step(std::span<T> p, std::span<T const> g) {
    if (sum_sq.size() != p.size()) sum_sq.assign(p.size(), T(0)), steps = 0;
    ++steps;
    T const inv_steps = T(1) / T(steps);
    for (std::size_t i = 0; i < p.size(); ++i) {
      sum_sq[i] += g[i] * g[i];
      p[i] -= lr * g[i] / (std::sqrt(sum_sq[i] * inv_steps) + eps);
    }
  }
};

/// Adam (Kingma & Ba 2015) with bias correction.
///
///     lenet5::adam<float> opt{.lr = 1e-3f};
template <class T = float>
struct adam {
  T lr = T(1e-3), beta1 = T(0.9), beta2 = T(0.999), eps = T(1e-8);
  std::vector<T> m = {}, v = {};
  std::size_t t = 0;
  static constexpr char const* name = "adam";
  void begin_epoch() {}
  void step(std::span<T> p, std::span<T const> g) {
    if (m.size() != p.size()) m.assign(p.size(), T(0)), v.assign(p.size(), T(0)), t = 0;
    ++t;
    T const c1 = T(1) - T(std::pow(double(beta1), double(t)));
    T const c2 = T(1) - T(std::pow(double(beta2), double(t)));
    for (std::size_t i = 0; i < p.size(); ++i) {
      m[i] = beta1 * m[i] + (T(1) - beta1) * g[i];
      v[i] = beta2 * v[i] + (T(1) - beta2) * g[i] * g[i];
      p[i] -= lr * (m[i] / c1) / (std::sqrt(v[i] / c2) + eps);
    }
  }
};

}  // namespace lenet5
