#pragma once
/// \file
/// LeNet-5's layers on xtensor views. Activations are feature-major with the batch inside:
/// a convolution's input and output are (channels, batch, height, width) and a dense layer's
/// are (features, batch), so that every layer is one GEMM over the whole batch (im2col for the
/// convolutions) with no transposes between layers. Parameters and gradients live in arenas
/// owned by the caller; a layer holds `xt::adapt` views into them (`bind`). Backward overwrites
/// the gradients (no zeroing needed) and writes the input gradient if asked for one.
///
/// Templated on the scalar so that the tests check every layer against finite differences in
/// double precision; the trainer uses float.

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include <xtensor-blas/xblas.hpp>
#include <xtensor/xadapt.hpp>

namespace lenet5 {

/// A non-owning N-dimensional xtensor view of `T` memory (a slice of an arena).
template <class T, std::size_t N>
using view = decltype(xt::adapt(static_cast<T*>(nullptr), std::size_t{}, xt::no_ownership(),
                                std::array<std::size_t, N>{}));

/// Views `n = prod(shape)` elements at `p`: `auto w = lenet5::make_view<float, 2>(p, {6, 25});`
template <class T, std::size_t N>
view<T, N> make_view(T* p, std::array<std::size_t, N> shape) {
  std::size_t n = 1;
  for (auto s : shape) n *= s;
  return xt::adapt(static_cast<T*>(p), n, xt::no_ownership(), shape);
}

/// Row-major C = alpha op(A) op(B) + beta C through xtensor-blas's cxxblas (OpenBLAS sgemm or
/// dgemm). A is m x k after op, B is k x n after op.
template <class T>
void gemm(bool trans_a, bool trans_b, int m, int n, int k, T alpha, T const* a, T const* b, T beta,
          T* c) {
  int lda = trans_a ? m : k, ldb = trans_b ? k : n;
  cxxblas::gemm(cxxblas::RowMajor, trans_a ? cxxblas::Trans : cxxblas::NoTrans,
                trans_b ? cxxblas::Trans : cxxblas::NoTrans, m, n, k, alpha, a, lda, b, ldb, beta,
                c, n);
}

/// Shape of a square-kernel convolution: `cin` channels of h x w in, `cout` out, stride 1.
struct conv_shape {
  int cin, cout, k, pad, h, w;
  int out_h() const { return h + 2 * pad - k + 1; }
  int out_w() const { return w + 2 * pad - k + 1; }
  std::size_t weights() const { return std::size_t(cout) * cin * k * k; }
  std::size_t parameters() const { return weights() + cout; }
};

/// Convolution as im2col + GEMM: out(cout, B*oh*ow) = W(cout, cin*k*k) cols + b.
///
///     lenet5::conv2d<float> c1({.cin = 1, .cout = 6, .k = 5, .pad = 2, .h = 28, .w = 28});
///     c1.bind(params, grads);  // parameters()-long slices of the arenas
///     c1.forward(x, batch, y); c1.backward(dy, batch, nullptr);
template <class T>
class conv2d {
 public:
  explicit conv2d(conv_shape s) : s_(s) {}
  conv_shape const& shape() const { return s_; }
  std::size_t parameters() const { return s_.parameters(); }

  /// Points the weights (cout, cin*k*k) then the bias (cout) at `p`, their gradients at `g`.
  void bind(T* p, T* g) {
    std::array<std::size_t, 2> ws{std::size_t(s_.cout), std::size_t(s_.cin * s_.k * s_.k)};
    w_ = make_view<T, 2>(p, ws);
    b_ = make_view<T, 1>(p + s_.weights(), {std::size_t(s_.cout)});
    dw_ = make_view<T, 2>(g, ws);
    db_ = make_view<T, 1>(g + s_.weights(), {std::size_t(s_.cout)});
  }
  view<T, 2>& weight() { return w_; }
  view<T, 1>& bias() { return b_; }

  /// in: (cin, B, h, w); out: (cout, B, oh, ow).
  void forward(T const* in, int batch, T* out) {
    int const rows = s_.cin * s_.k * s_.k, cols = batch * s_.out_h() * s_.out_w();
    cols_.resize(std::size_t(rows) * cols);
    im2col(in, batch, cols_.data());
    gemm<T>(false, false, s_.cout, cols, rows, T(1), w_.data(), cols_.data(), T(0), out);
    for (int o = 0; o < s_.cout; ++o) {
      T* row = out + std::size_t(o) * cols;
      T const bo = b_(o);
      for (int j = 0; j < cols; ++j) row[j] += bo;
    }
  }

  /// dout: (cout, B, oh, ow). Writes dW, db and, if `din` is not null, din: (cin, B, h, w).
  /// Uses the columns of the last forward.
  void backward(T const* dout, int batch, T* din) {
    int const rows = s_.cin * s_.k * s_.k, cols = batch * s_.out_h() * s_.out_w();
    gemm<T>(false, true, s_.cout, rows, cols, T(1), dout, cols_.data(), T(0), dw_.data());
    for (int o = 0; o < s_.cout; ++o) {
      T const* row = dout + std::size_t(o) * cols;
      T acc = 0;
      for (int j = 0; j < cols; ++j) acc += row[j];
      db_(o) = acc;
    }
    if (!din) return;
    dcols_.resize(std::size_t(rows) * cols);
    gemm<T>(true, false, rows, cols, s_.cout, T(1), w_.data(), dout, T(0), dcols_.data());
    col2im(dcols_.data(), batch, din);
  }

 private:
  // cols[(c, ki, kj), (b, y, x)] = in[c, b, y + ki - pad, x + kj - pad], zero outside.
  void im2col(T const* in, int batch, T* cols) const {
    int const oh = s_.out_h(), ow = s_.out_w();
    for (int c = 0; c < s_.cin; ++c)
      for (int ki = 0; ki < s_.k; ++ki)
        for (int kj = 0; kj < s_.k; ++kj) {
          T* dst = cols + (std::size_t(c * s_.k + ki) * s_.k + kj) * batch * oh * ow;
          int const x0 = std::max(0, s_.pad - kj), x1 = std::min(ow, s_.w + s_.pad - kj);
          for (int b = 0; b < batch; ++b) {
            T const* plane = in + (std::size_t(c) * batch + b) * s_.h * s_.w;
            for (int y = 0; y < oh; ++y, dst += ow) {
              int const iy = y + ki - s_.pad;
              if (iy < 0 || iy >= s_.h || x0 >= x1) {
                std::fill(dst, dst + ow, T(0));
                continue;
              }
              T const* src = plane + std::size_t(iy) * s_.w + (kj - s_.pad);
              std::fill(dst, dst + x0, T(0));
              std::copy(src + x0, src + x1, dst + x0);
              std::fill(dst + x1, dst + ow, T(0));
            }
          }
        }
  }
  void col2im(T const* cols, int batch, T* in) const {
    int const oh = s_.out_h(), ow = s_.out_w();
    std::fill(in, in + std::size_t(s_.cin) * batch * s_.h * s_.w, T(0));
    for (int c = 0; c < s_.cin; ++c)
      for (int ki = 0; ki < s_.k; ++ki)
        for (int kj = 0; kj < s_.k; ++kj) {
          T const* src = cols + (std::size_t(c * s_.k + ki) * s_.k + kj) * batch * oh * ow;
          int const x0 = std::max(0, s_.pad - kj), x1 = std::min(ow, s_.w + s_.pad - kj);
          for (int b = 0; b < batch; ++b) {
            T* plane = in + (std::size_t(c) * batch + b) * s_.h * s_.w;
            for (int y = 0; y < oh; ++y, src += ow) {
              int const iy = y + ki - s_.pad;
              if (iy < 0 || iy >= s_.h) continue;
              T* dst = plane + std::size_t(iy) * s_.w + (kj - s_.pad);
              for (int x = x0; x < x1; ++x) dst[x] += src[x];
            }
          }
        }
  }

  conv_shape s_;
  view<T, 2> w_ = make_view<T, 2>(nullptr, {0, 0}), dw_ = make_view<T, 2>(nullptr, {0, 0});
  view<T, 1> b_ = make_view<T, 1>(nullptr, {0}), db_ = make_view<T, 1>(nullptr, {0});
  std::vector<T> cols_, dcols_;
};

/// Fully connected: out(nout, B) = W(nout, nin) in(nin, B) + b.
///
///     lenet5::dense<float> f5(400, 120);
///     f5.bind(params, grads); f5.forward(x, batch, y);
template <class T>
class dense {
 public:
  dense(int nin, int nout) : nin_(nin), nout_(nout) {}
  std::size_t parameters() const { return std::size_t(nout_) * nin_ + nout_; }
  int inputs() const { return nin_; }
  int outputs() const { return nout_; }

  /// Points the weights (nout, nin) then the bias (nout) at `p`, their gradients at `g`.
  void bind(T* p, T* g) {
    std::array<std::size_t, 2> ws{std::size_t(nout_), std::size_t(nin_)};
    w_ = make_view<T, 2>(p, ws);
    b_ = make_view<T, 1>(p + std::size_t(nout_) * nin_, {std::size_t(nout_)});
    dw_ = make_view<T, 2>(g, ws);
    db_ = make_view<T, 1>(g + std::size_t(nout_) * nin_, {std::size_t(nout_)});
  }
  view<T, 2>& weight() { return w_; }
  view<T, 1>& bias() { return b_; }

  void forward(T const* in, int batch, T* out) {
    in_ = in;
    gemm<T>(false, false, nout_, batch, nin_, T(1), w_.data(), in, T(0), out);
    for (int o = 0; o < nout_; ++o)
      for (int b = 0; b < batch; ++b) out[std::size_t(o) * batch + b] += b_(o);
  }
  /// Uses the input of the last forward, which must still be alive.
  void backward(T const* dout, int batch, T* din) {
    gemm<T>(false, true, nout_, nin_, batch, T(1), dout, in_, T(0), dw_.data());
    for (int o = 0; o < nout_; ++o) {
      T acc = 0;
      for (int b = 0; b < batch; ++b) acc += dout[std::size_t(o) * batch + b];
      db_(o) = acc;
    }
    if (din) gemm<T>(true, false, nin_, batch, nout_, T(1), w_.data(), dout, T(0), din);
  }

 private:
  int nin_, nout_;
  T const* in_ = nullptr;
  view<T, 2> w_ = make_view<T, 2>(nullptr, {0, 0}), dw_ = make_view<T, 2>(nullptr, {0, 0});
  view<T, 1> b_ = make_view<T, 1>(nullptr, {0}), db_ = make_view<T, 1>(nullptr, {0});
};

/// ReLU in place: `relu_forward(x, n)`; backward masks by the forward's output.
template <class T>
void relu_forward(T* x, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) x[i] = x[i] > T(0) ? x[i] : T(0);
}
/// din = dout where the forward output y > 0, else 0 (in place allowed: din == dout).
template <class T>
void relu_backward(T const* y, T const* dout, T* din, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) din[i] = y[i] > T(0) ? dout[i] : T(0);
}

/// 2 x 2 max pooling, stride 2, over `planes` planes of h x w (h, w even). Remembers the
/// winner of each window for backward.
///
///     lenet5::max_pool2<float> p; p.forward(x, 6 * batch, 28, 28, y);
template <class T>
class max_pool2 {
 public:
  void forward(T const* in, int planes, int h, int w, T* out) {
    planes_ = planes, h_ = h, w_ = w;
    int const oh = h / 2, ow = w / 2;
    arg_.resize(std::size_t(planes) * oh * ow);
    std::uint8_t* arg = arg_.data();
    for (int p = 0; p < planes; ++p) {
      T const* src = in + std::size_t(p) * h * w;
      for (int y = 0; y < oh; ++y) {
        T const* r0 = src + std::size_t(2 * y) * w;
        T const* r1 = r0 + w;
        for (int x = 0; x < ow; ++x, ++out, ++arg) {
          T best = r0[2 * x];
          std::uint8_t a = 0;
          if (r0[2 * x + 1] > best) best = r0[2 * x + 1], a = 1;
          if (r1[2 * x] > best) best = r1[2 * x], a = 2;
          if (r1[2 * x + 1] > best) best = r1[2 * x + 1], a = 3;
          *out = best;
          *arg = a;
        }
      }
    }
  }
  void backward(T const* dout, T* din) const {
    int const oh = h_ / 2, ow = w_ / 2;
    std::fill(din, din + std::size_t(planes_) * h_ * w_, T(0));
    std::uint8_t const* arg = arg_.data();
    for (int p = 0; p < planes_; ++p) {
      T* dst = din + std::size_t(p) * h_ * w_;
      for (int y = 0; y < oh; ++y)
        for (int x = 0; x < ow; ++x, ++dout, ++arg)
          dst[std::size_t(2 * y + (*arg >> 1)) * w_ + 2 * x + (*arg & 1)] = *dout;
    }
  }

 private:
  int planes_ = 0, h_ = 0, w_ = 0;
  std::vector<std::uint8_t> arg_;
};

/// Mean softmax cross-entropy of logits (classes, B) against labels; writes the gradient
/// (classes, B) into `dlogits` if not null. Returns the mean loss.
template <class T>
T softmax_cross_entropy(T const* logits, std::uint8_t const* labels, int classes, int batch,
                        T* dlogits) {
  double loss = 0;
  T const inv = T(1) / T(batch);
  for (int b = 0; b < batch; ++b) {
    T mx = -std::numeric_limits<T>::infinity();
    for (int c = 0; c < classes; ++c) mx = std::max(mx, logits[std::size_t(c) * batch + b]);
    T sum = 0;
    for (int c = 0; c < classes; ++c) sum += std::exp(logits[std::size_t(c) * batch + b] - mx);
    T const log_sum = std::log(sum);
    loss += double(log_sum - (logits[std::size_t(labels[b]) * batch + b] - mx));
    if (dlogits)
      for (int c = 0; c < classes; ++c) {
        T const p = std::exp(logits[std::size_t(c) * batch + b] - mx - log_sum);
        dlogits[std::size_t(c) * batch + b] = (p - T(c == labels[b])) * inv;
      }
  }
  return T(loss / batch);
}

}  // namespace lenet5
