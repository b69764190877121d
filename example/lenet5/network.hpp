#pragma once
/// \file
/// LeNet-5 for 28 x 28 input:
///
///     C1 conv 6@5x5 pad 2 -> ReLU -> 2x2 max pool -> C3 conv 16@5x5 -> ReLU -> 2x2 max pool
///     -> F5 dense 120 -> ReLU -> F6 dense 84 -> ReLU -> F7 dense 10 -> softmax cross-entropy
///
/// (ReLU and max pooling rather than LeCun's scaled tanh and trainable subsampling: the usual
/// modern LeNet-5, the one PyTorch tutorials and the homework's Homework 3 use.) All 61,706
/// parameters live in one flat arena and all gradients in another, so one `gcl::all_reduce`
/// moves a whole step; the network only holds views into them.

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "layers.hpp"

namespace lenet5 {

/// Pixel normalisation of MNIST (its mean and standard deviation), as torchvision uses.
inline constexpr float pixel_mean = 0.1307f, pixel_std = 0.3081f;

/// The default of `network::forward_backward`'s layer hook: does nothing.
struct no_layer_hook {
  void operator()(std::size_t) const noexcept {}
};

/// LeNet-5 bound to a parameter arena and a gradient arena of `parameter_count` elements each.
///
///     std::vector<float> p(lenet5::network<float>::parameter_count), g(p.size());
///     lenet5::network<float> net(p, g);
///     net.init(42);
///     float loss = net.forward_backward(x, labels, batch);  // writes g
template <class T>
class network {
 public:
  static constexpr int classes = 10, side = 28;
  /// The layers with parameters, in forward order: C1, C3, F5, F6, F7 (index 0 to 4). Layer i
  /// owns the `layer_parameters[i]` elements of each arena from `layer_offset(i)` on, so layers
  /// i..j own one contiguous slice.
  static constexpr std::size_t layer_count = 5;
  static constexpr std::array<std::size_t, layer_count> layer_parameters{156, 2416, 48120, 10164,
                                                                         850};
  static constexpr std::size_t layer_offset(std::size_t i) {
    std::size_t off = 0;
    for (std::size_t j = 0; j < i; ++j) off += layer_parameters[j];
    return off;
  }
  static constexpr std::size_t parameter_count = layer_offset(layer_count);

  network(std::span<T> params, std::span<T> grads) : params_(params), grads_(grads) {
    if (params.size() != parameter_count || grads.size() != parameter_count)
      throw std::invalid_argument("lenet5::network: arenas must hold " +
                                  std::to_string(parameter_count) + " elements, got " +
                                  std::to_string(params.size()) + " and " +
                                  std::to_string(grads.size()));
    std::size_t i = 0;
    auto bind = [&](auto& layer) {
      if (layer.parameters() != layer_parameters[i])
        throw std::logic_error("lenet5::network: layer_parameters disagrees with layer " +
                               std::to_string(i));
      layer.bind(params.data() + layer_offset(i), grads.data() + layer_offset(i));
      ++i;
    };
    bind(c1_), bind(c3_), bind(f5_), bind(f6_), bind(f7_);
  }
  network(network const&) = delete;
  network& operator=(network const&) = delete;

  std::span<T> parameters() const { return params_; }
  std::span<T> gradients() const { return grads_; }

  /// He-uniform weights (bound sqrt(6 / fan_in), suited to ReLU) and zero biases, from `seed`:
  /// the same seed gives the same bits on every rank.
  void init(std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    auto fill = [&](auto& w, double fan_in) {
      std::uniform_real_distribution<double> u(-std::sqrt(6.0 / fan_in), std::sqrt(6.0 / fan_in));
      for (auto& x : w) x = T(u(rng));
    };
    fill(c1_.weight(), 25), fill(c3_.weight(), 150), fill(f5_.weight(), 400);
    fill(f6_.weight(), 120), fill(f7_.weight(), 84);
    for (auto* b : {&c1_.bias(), &c3_.bias(), &f5_.bias(), &f6_.bias(), &f7_.bias()})
      std::fill(b->begin(), b->end(), T(0));
  }

  /// x: `batch` normalised images, image-major (B, 28, 28), which is (1, B, 28, 28). Returns
  /// the mean cross-entropy and overwrites the gradient arena with its gradient.
  ///
  /// `after_layer(i)` is called as soon as layer i's gradients are final, in backward order
  /// (4 = F7 first, 0 = C1 last), so that their communication can start while the backward
  /// pass goes on (as DDP's autograd hooks do). The backward pass never touches layer i's
  /// gradients again, nor reads them, once the hook has been called; it runs on the calling
  /// thread, inline (a template, no std::function: nothing is allocated).
  template <class AfterLayer = no_layer_hook>
  T forward_backward(T const* x, std::uint8_t const* labels, int batch,
                     AfterLayer&& after_layer = {}) {
    forward(x, batch);
    T loss = softmax_cross_entropy<T>(a7_.data(), labels, classes, batch, d7_.data());
    backward(batch, after_layer);
    return loss;
  }

  /// Mean loss without touching the gradients (for the gradient checks).
  T loss(T const* x, std::uint8_t const* labels, int batch) {
    forward(x, batch);
    return softmax_cross_entropy<T>(a7_.data(), labels, classes, batch, nullptr);
  }

  /// Classifies `batch` images; returns how many match `labels` and adds their summed
  /// cross-entropy to `loss_sum` (one forward pass, no gradients).
  int evaluate(T const* x, std::uint8_t const* labels, int batch, double& loss_sum) {
    forward(x, batch);
    loss_sum +=
        double(softmax_cross_entropy<T>(a7_.data(), labels, classes, batch, nullptr)) * batch;
    int correct = 0;
    for (int b = 0; b < batch; ++b) {
      int best = 0;
      for (int c = 1; c < classes; ++c)
        if (a7_[std::size_t(c) * batch + b] > a7_[std::size_t(best) * batch + b]) best = c;
      correct += labels[b] == best;
    }
    return correct;
  }

 private:
  void forward(T const* x, int batch) {
    std::size_t const B = std::size_t(batch);
    a1_.resize(6 * B * 28 * 28), p1_.resize(6 * B * 14 * 14), a3_.resize(16 * B * 10 * 10);
    p3_.resize(16 * B * 25), flat_.resize(400 * B), a5_.resize(120 * B), a6_.resize(84 * B);
    a7_.resize(10 * B), d7_.resize(10 * B);
    c1_.forward(x, batch, a1_.data());
    relu_forward(a1_.data(), a1_.size());
    pool1_.forward(a1_.data(), 6 * batch, 28, 28, p1_.data());
    c3_.forward(p1_.data(), batch, a3_.data());
    relu_forward(a3_.data(), a3_.size());
    pool3_.forward(a3_.data(), 16 * batch, 10, 10, p3_.data());
    // (16, B, 5, 5) -> (400, B): each image's features become one column.
    for (std::size_t c = 0; c < 16; ++c)
      for (std::size_t b = 0; b < B; ++b)
        for (std::size_t s = 0; s < 25; ++s)
          flat_[(c * 25 + s) * B + b] = p3_[(c * B + b) * 25 + s];
    f5_.forward(flat_.data(), batch, a5_.data());
    relu_forward(a5_.data(), a5_.size());
    f6_.forward(a5_.data(), batch, a6_.data());
    relu_forward(a6_.data(), a6_.size());
    f7_.forward(a6_.data(), batch, a7_.data());
  }

  template <class AfterLayer>
  void backward(int batch, AfterLayer& after_layer) {
    std::size_t const B = std::size_t(batch);
    d6_.resize(84 * B), d5_.resize(120 * B), dflat_.resize(400 * B), dp3_.resize(16 * B * 25);
    d3_.resize(16 * B * 100), dp1_.resize(6 * B * 196), d1_.resize(6 * B * 784);
    f7_.backward(d7_.data(), batch, d6_.data());
    after_layer(std::size_t{4});
    relu_backward(a6_.data(), d6_.data(), d6_.data(), d6_.size());
    f6_.backward(d6_.data(), batch, d5_.data());
    after_layer(std::size_t{3});
    relu_backward(a5_.data(), d5_.data(), d5_.data(), d5_.size());
    f5_.backward(d5_.data(), batch, dflat_.data());
    after_layer(std::size_t{2});
    for (std::size_t c = 0; c < 16; ++c)
      for (std::size_t b = 0; b < B; ++b)
        for (std::size_t s = 0; s < 25; ++s)
          dp3_[(c * B + b) * 25 + s] = dflat_[(c * 25 + s) * B + b];
    pool3_.backward(dp3_.data(), d3_.data());
    relu_backward(a3_.data(), d3_.data(), d3_.data(), d3_.size());
    c3_.backward(d3_.data(), batch, dp1_.data());
    after_layer(std::size_t{1});
    pool1_.backward(dp1_.data(), d1_.data());
    relu_backward(a1_.data(), d1_.data(), d1_.data(), d1_.size());
    c1_.backward(d1_.data(), batch, nullptr);  // the input needs no gradient
    after_layer(std::size_t{0});
  }

  std::span<T> params_, grads_;
  conv2d<T> c1_{{.cin = 1, .cout = 6, .k = 5, .pad = 2, .h = 28, .w = 28}};
  conv2d<T> c3_{{.cin = 6, .cout = 16, .k = 5, .pad = 0, .h = 14, .w = 14}};
  dense<T> f5_{400, 120}, f6_{120, 84}, f7_{84, 10};
  max_pool2<T> pool1_, pool3_;
  std::vector<T> a1_, p1_, a3_, p3_, flat_, a5_, a6_, a7_;
  std::vector<T> d7_, d6_, d5_, dflat_, dp3_, d3_, dp1_, d1_;
};

}  // namespace lenet5
