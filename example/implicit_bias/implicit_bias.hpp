#pragma once
/// \file
/// The implicit bias of optimizers on one under-determined equation: a . theta = 1 with
/// a = [1, 0.1, 0.01], squared loss f = (1 - a . theta)^2, from theta = 0. Every solution of
/// a . theta = 1 is a minimum; which one an optimizer reaches is decided by the directions it
/// can move in:
///
/// - SGD moves along grad f = -2 r a, so theta stays in span(a): theta -> a / |a|^2.
/// - The simplified Adam (one data point, so one step per epoch) scales coordinate i by
///   1 / rms(g_i) = 1 / |g_i|, so it moves along sign(g) = +-[1, 1, 1]: theta -> [1,1,1] / 1.11.
///   (So does L-inf steepest descent, the L1-scaled sign step.)
/// - Rescaling features to unit second moment (x_i / |a_i|, so a becomes [1, 1, 1]), SGD there
///   reaches [1,1,1] / 3, which is theta_i = 1 / (3 a_i) in original units: [1/3, 10/3, 100/3].

#include <array>
#include <cmath>
#include <span>

#include "../lenet5/optimizer.hpp"  // the optimizers the LeNet-5 trainer uses

namespace implicit_bias {

/// A point of the 3-parameter problem: `implicit_bias::vec theta{0, 0, 0};`
using vec = std::array<double, 3>;
/// The equation's coefficients: a . theta = 1.
inline constexpr vec a{1.0, 0.1, 0.01};

/// 1 - features . theta: `residual(a, sgd_limit())` is ~0.
inline double residual(vec const& features, vec const& theta) {
  return 1 - (features[0] * theta[0] + features[1] * theta[1] + features[2] * theta[2]);
}
/// Gradient of (1 - features . theta)^2: -2 r features.
inline vec gradient(vec const& features, vec const& theta) {
  double const r = residual(features, theta);
  return {-2 * r * features[0], -2 * r * features[1], -2 * r * features[2]};
}

/// Runs `opt` (an optimizer policy over double) from theta = 0 on features `f` until the
/// residual is below 1e-15 or `steps` steps; `halve_on_overshoot` halves the step each time
/// the residual changes sign (the decreasing step sizes a fixed-size sign step needs).
template <class Opt>
vec run(Opt opt, vec const& f, int steps = 1000000, bool halve_on_overshoot = false) {
  vec theta{0, 0, 0};
  double r_prev = residual(f, theta);
  for (int t = 0; t < steps && std::abs(r_prev) > 1e-15; ++t) {
    opt.begin_epoch();  // one data point: every step is an epoch
    vec g = gradient(f, theta);
    opt.step(std::span<double>(theta), std::span<double const>(g));
    double const r = residual(f, theta);
    if (halve_on_overshoot && (r > 0) != (r_prev > 0)) opt.lr /= 2;
    r_prev = r;
  }
  return theta;
}

/// Plain SGD: the minimum-L2-norm solution a / |a|^2.
inline vec sgd_limit() {
  return run(lenet5::sgd<double>{.lr = 0.1}, a);
}

/// The simplified Adam: [1, 1, 1] / 1.11.
inline vec adam_simplified_limit() {
  return run(lenet5::adam_simplified<double>{.lr = 0.25, .eps = 0}, a, 100000, true);
}

/// Sign descent with the L1-scaled step (L-inf steepest descent): [1, 1, 1] / 1.11.
inline vec sign_l1_limit() {
  return run(lenet5::sign_descent<double>{.lr = 0.1, .l1_scale = true}, a);
}

/// Features rescaled to unit second moment, SGD, back to original units: [1/3, 10/3, 100/3].
inline vec rescaled_sgd_limit() {
  vec const s{1 / std::abs(a[0]), 1 / std::abs(a[1]), 1 / std::abs(a[2])};
  vec const scaled{a[0] * s[0], a[1] * s[1], a[2] * s[2]};  // [1, 1, 1]
  vec const t = run(lenet5::sgd<double>{.lr = 0.1}, scaled);
  // a . theta = (s a) . t  =>  theta = s t.
  return {s[0] * t[0], s[1] * t[1], s[2] * t[2]};
}

}  // namespace implicit_bias
