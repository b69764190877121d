#pragma once
/// \file
/// Distributed SGD for LeNet-5 on any gcl communicator. Every rank trains on its own shard of
/// the training set (rank-strided: images rank, rank + N, rank + 2N, ...) with its own batch,
/// and after each local step the ranks synchronise with `gcl::all_reduce`:
///
/// - `sync = params`: Algorithm 1 of doc/homework.md: x_n = x - lr G_n locally, then
///   x = (1/N) sum_n x_n (all_reduce of the parameter arena, then divide by N);
/// - `sync = grads`: as DDP: G = (1/N) sum_n G_n, then step. The gradient arena is all-reduced
///   in buckets of layers (buckets.hpp, `bucket_kib`), one all_reduce per bucket, last layers
///   first; with `overlap`, each bucket's `gcl::iall_reduce` starts as soon as the backward pass
///   has finished its layers, and the step waits for all of them. Both reduce the same buckets
///   with the same algorithm, so they end with the same bits.
///
/// For plain SGD both give the same iterates up to rounding. Ranks stay bit-identical because
/// all_reduce gives every rank the same bits; every evaluation checks it with an all_reduce of a
/// hash of the parameters (min and max), and throws if any rank differs.

#include <unistd.h>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <functional>
#include <numeric>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

#include <gcl/transport/shm/buffer.hpp>

#include "algorithms.hpp"
#include "buckets.hpp"
#include "idx.hpp"
#include "network.hpp"
#include "optimizer.hpp"

namespace lenet5 {

/// What to train and how; the command line of train_lenet5 fills it.
struct train_config {
  std::string algorithm = "ring";  ///< gcl algorithm for the all_reduce (see algorithms.hpp)
  std::string sync = "params";     ///< "params" (Algorithm 1) or "grads" (DDP)
  std::string optimizer = "sgd";   ///< sgd, momentum, sign, adam, adam_simplified
  float lr = 0.05f;
  float momentum = 0.9f;  ///< for momentum
  bool l1_scale = false;  ///< for sign: step lr ||g||_1 instead of lr
  int batch = 32;         ///< per rank
  std::uint64_t seed = 1;
  double target_accuracy = 0;  ///< stop at the first evaluation reaching it; 0 = never
  long eval_every = 100;       ///< iterations between evaluations
  long max_iterations = 100000;
  long eval_images = -1;          ///< test images per evaluation; -1 = all
  std::string log;                ///< CSV of every evaluation (rank 0 writes it)
  bool verbose = true;            ///< rank 0 prints evaluations (and progress, if `progress`)
  bool progress = true;           ///< rank 0 prints a progress line
  double progress_seconds = 1.0;  ///< how often the progress line refreshes
  /// Put a barrier before each all_reduce, so that the time spent waiting for the slowest rank
  /// (load imbalance, time-sharing of cores) is measured apart from the all_reduce itself.
  bool split_wait = false;
  /// sync = grads: gradient buckets of at most this many KiB (a layer is never split; 242 or
  /// more: the whole arena in one)
  std::size_t bucket_kib = 64;
  /// sync = grads: start each bucket's non-blocking all_reduce during the backward pass
  bool overlap = false;
  /// The parameter and gradient arenas in the transport's pool (shm and auto:
  /// `shm_transport::allocate`), which the host's other ranks read in place: a large message
  /// from there is one copy instead of two (doc/shm.md, "Buffers in the pool").
  bool pool = false;
};

/// One evaluation: after `iteration` steps, the accuracy on the test images.
struct evaluation {
  long iteration = 0;
  double epoch = 0, seconds = 0, train_seconds = 0, train_loss = 0, test_loss = 0, accuracy = 0;
};

/// What `train` returns on each rank.
struct train_result {
  long k_star = -1;               ///< iterations to the target accuracy; -1 if not reached
  double seconds_to_target = -1;  ///< wall seconds to that evaluation (evaluations included)
  long iterations = 0;
  double seconds = 0, train_seconds = 0;
  double images_per_second = 0;  ///< all ranks' training images / training seconds
  double comm_share = 0;         ///< this rank's share of step time in all_reduce (and barrier)
  double wait_share = 0;         ///< with split_wait: the share spent in the barrier before it
  double compute_seconds = 0, comm_seconds = 0, wait_seconds = 0;  ///< this rank's totals
  /// How long this rank's all_reduces of the steps ran (with overlap: the sum of the requests'
  /// run_time(); blocking: comm_seconds) and how much of it the steps waited for (with overlap:
  /// the time in wait(), which is comm_seconds then; blocking: all of it). hidden = max(0,
  /// run - exposed), the communication the backward pass hid.
  double comm_run_seconds = 0, comm_exposed_seconds = 0, comm_hidden_seconds = 0;
  double comm_hidden_share = 0;  ///< hidden / run (0 when nothing ran)
  std::size_t buckets = 0;       ///< sync = grads: all_reduces per step
  std::vector<evaluation> evaluations;
  std::vector<float> parameters;  ///< the final parameters of this rank
};

/// A 64-bit FNV-1a hash of the parameters' bytes: equal hashes on all ranks is how the trainer
/// checks that they are bit-identical.
///
///     std::uint64_t h = lenet5::parameter_hash(params);
inline std::uint64_t parameter_hash(std::span<float const> v) {
  std::uint64_t h = 1469598103934665603ull;
  auto const* p = reinterpret_cast<unsigned char const*>(v.data());
  for (std::size_t i = 0; i < v.size_bytes(); ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

namespace detail {

// Normalised float images (B, 28, 28) from the byte images at `index`.
inline void make_batch(image_set const& s, std::span<std::size_t const> index, float* x,
                       std::uint8_t* y) {
  std::size_t const n = s.rows * s.cols;
  float const scale = 1.f / (255.f * pixel_std), shift = pixel_mean / pixel_std;
  for (std::size_t b = 0; b < index.size(); ++b) {
    std::uint8_t const* src = s.pixels.data() + index[b] * n;
    for (std::size_t i = 0; i < n; ++i) x[b * n + i] = float(src[i]) * scale - shift;
    y[b] = s.labels[index[b]];
  }
}

using any_optimizer = std::variant<sgd<float>, momentum<float>, sign_descent<float>,
                                   adam_simplified<float>, adam<float>>;

inline any_optimizer make_optimizer(train_config const& c) {
  if (c.optimizer == "sgd") return sgd<float>{.lr = c.lr};
  if (c.optimizer == "momentum") return momentum<float>{.lr = c.lr, .mu = c.momentum};
  if (c.optimizer == "sign") return sign_descent<float>{.lr = c.lr, .l1_scale = c.l1_scale};
  if (c.optimizer == "adam_simplified") return adam_simplified<float>{.lr = c.lr};
  if (c.optimizer == "adam") return adam<float>{.lr = c.lr};
  throw std::invalid_argument("unknown --optimizer '" + c.optimizer +
                              "' (sgd, momentum, sign, adam, adam_simplified)");
}

}  // namespace detail

/// Trains on `data` with this rank's shard until the target accuracy or `max_iterations`.
/// Every rank of `comm` must call it with the same config and data.
///
///     auto r = gcl::spawn<gcl::inproc_transport>(4, [&](auto& comm) {
///       return lenet5::train(comm, data, {.algorithm = "ring", .target_accuracy = 0.97});
///     });
template <class Comm>
train_result train(Comm& comm, mnist const& data, train_config const& cfg) {
  using clock = std::chrono::steady_clock;
  int const rank = comm.rank(), world = comm.size();
  bool const talk = cfg.verbose && rank == 0;
  if (cfg.sync != "params" && cfg.sync != "grads")
    throw std::invalid_argument("unknown --sync '" + cfg.sync + "' (params or grads)");
  if (cfg.batch < 1) throw std::invalid_argument("--batch must be at least 1");
  if (cfg.overlap && cfg.sync != "grads")
    throw std::invalid_argument(
        "--overlap needs --sync grads (it overlaps the gradients' all_reduce with the "
        "backward pass)");
  if (cfg.bucket_kib < 1) throw std::invalid_argument("--bucket-kib must be at least 1");
  auto reduce = make_reducer(comm, cfg.algorithm);
  if (cfg.overlap && !reduce.has_isum())
    throw std::invalid_argument(
        "--overlap: this transport has no non-blocking all_reduce (inproc, shm and tcp have)");

  // The arenas: from the transport's pool with `pool`, else ordinary memory.
  auto arena = [&](std::size_t n) {
    if constexpr (requires { comm.transport().template allocate<float>(n); }) {
      if (cfg.pool) return comm.transport().template allocate<float>(n);
    } else if (cfg.pool) {
      throw std::invalid_argument("--pool: this transport has no pool (shm and auto have)");
    }
    return gcl::shm_buffer<float>::make(nullptr, n);
  };
  auto params_arena = arena(network<float>::parameter_count);
  auto grads_arena = arena(network<float>::parameter_count);
  std::span<float> const params = params_arena, grads = grads_arena;
  network<float> net(params, grads);
  net.init(cfg.seed);  // same seed on every rank: same start
  auto opt = detail::make_optimizer(cfg);

  // sync = grads: the buckets, and with overlap their requests, started from the backward pass.
  std::vector<bucket> const buckets =
      cfg.sync == "grads"
          ? make_buckets(network<float>::layer_parameters, cfg.bucket_kib * 1024, sizeof(float))
          : std::vector<bucket>{};
  auto const bucket_span = [&](bucket const& b) {
    return std::span<float>(grads).subspan(b.offset, b.count);
  };
  std::vector<gcl::collective_request> pending(buckets.size());
  std::size_t started = 0;  // buckets started in this step's backward pass
  auto const start_ready = [&](std::size_t layer) {
    if (started < buckets.size() && layer == buckets[started].first) {
      pending[started] = reduce.isum(bucket_span(buckets[started]));
      ++started;
    }
  };

  // This rank's shard, rank-strided, equal sizes on all ranks.
  std::size_t const shard = data.train.count / std::size_t(world);
  if (shard < std::size_t(cfg.batch))
    throw std::invalid_argument("each of the " + std::to_string(world) + " ranks gets " +
                                std::to_string(shard) + " training images, fewer than --batch " +
                                std::to_string(cfg.batch));
  std::vector<std::size_t> order(shard);
  for (std::size_t j = 0; j < shard; ++j) order[j] = std::size_t(rank) + j * std::size_t(world);
  long const per_epoch = long(shard / std::size_t(cfg.batch));
  std::mt19937_64 shuffle_rng(cfg.seed * 1000003u + std::uint64_t(rank));

  std::vector<float> x(std::size_t(cfg.batch) * 784);
  std::vector<std::uint8_t> y(std::size_t(cfg.batch));

  // This rank's slice of the test set for evaluation; the counts are summed with all_reduce.
  std::size_t const test_n =
      cfg.eval_images < 0 ? data.test.count
                          : std::min<std::size_t>(data.test.count, std::size_t(cfg.eval_images));
  std::size_t const t0 = test_n * std::size_t(rank) / std::size_t(world);
  std::size_t const t1 = test_n * std::size_t(rank + 1) / std::size_t(world);

  std::ofstream log;
  if (rank == 0 && !cfg.log.empty()) {
    log.open(cfg.log);
    if (!log) throw std::runtime_error("cannot write --log " + cfg.log);
    log << "world_size,iteration,epoch,images,seconds,train_seconds,train_loss,test_loss,test_"
           "accuracy\n";
  }

  train_result res;
  double compute_s = 0, comm_s = 0, wait_s = 0, eval_s = 0, loss_acc = 0;
  double run_s = 0;  // how long the all_reduces ran (comm_s: how long the steps waited for them)
  double loss_ema = -1;  // smoothed training loss for the progress line
  long loss_n = 0;
  bool const tty = isatty(1);
  {
    std::vector<float> go{1.f};
    reduce.sum(go);  // start the clocks together
  }
  auto const start = clock::now();
  auto last_progress = start;

  auto evaluate = [&](long k) {
    auto const e0 = clock::now();
    std::vector<std::size_t> idx;
    std::vector<float> tx;
    std::vector<std::uint8_t> ty;
    std::vector<double> stats{0, 0};  // correct, summed loss
    std::size_t const chunk = 100;    // keeps im2col's columns in cache
    for (std::size_t a = t0; a < t1; a += chunk) {
      std::size_t const n = std::min(chunk, t1 - a);
      idx.resize(n), tx.resize(n * 784), ty.resize(n);
      std::iota(idx.begin(), idx.end(), a);
      detail::make_batch(data.test, idx, tx.data(), ty.data());
      stats[0] += net.evaluate(tx.data(), ty.data(), int(n), stats[1]);
    }
    reduce.sum(stats);
    // Bit-identity of the ranks: min and max of a hash of the parameters must agree.
    std::uint64_t const h = parameter_hash(params);
    std::vector<std::uint64_t> mm{h, ~h};
    reduce.min(mm);
    if (mm[0] != ~mm[1])
      throw std::runtime_error("ranks diverged: parameter hashes differ after iteration " +
                               std::to_string(k) + " (rank " + std::to_string(rank) + " has " +
                               std::to_string(h) + ")");
    eval_s += std::chrono::duration<double>(clock::now() - e0).count();
    evaluation ev;
    ev.iteration = k;
    ev.epoch = double(k) / double(per_epoch);
    ev.seconds = std::chrono::duration<double>(clock::now() - start).count();
    ev.train_seconds = ev.seconds - eval_s;
    ev.train_loss = loss_n ? loss_acc / double(loss_n) : 0;
    ev.accuracy = stats[0] / double(test_n);
    ev.test_loss = stats[1] / double(test_n);
    loss_acc = 0, loss_n = 0;
    last_progress = clock::now();  // the next progress line comes after some training
    res.evaluations.push_back(ev);
    if (talk) {
      std::printf(
          "%s[eval] iteration %ld  epoch %.2f  test accuracy %.4f  test loss %.4f  "
          "(%.1f s, %.1f s training)\n",
          tty ? "\r\033[K" : "", k, ev.epoch, ev.accuracy, ev.test_loss, ev.seconds,
          ev.train_seconds);
      std::fflush(stdout);
    }
    if (log)
      log << world << ',' << k << ',' << ev.epoch << ',' << k * long(world) * cfg.batch << ','
          << ev.seconds << ',' << ev.train_seconds << ',' << ev.train_loss << ',' << ev.test_loss
          << ',' << ev.accuracy << '\n'
          << std::flush;
    return ev.accuracy;
  };

  long k = 0;
  while (k < cfg.max_iterations) {
    long const in_epoch = k % per_epoch;
    if (in_epoch == 0) {
      std::shuffle(order.begin(), order.end(), shuffle_rng);
      std::visit([](auto& o) { o.begin_epoch(); }, opt);
    }
    auto const a = clock::now();
    detail::make_batch(data.train,
                       std::span(order).subspan(std::size_t(in_epoch) * cfg.batch, cfg.batch),
                       x.data(), y.data());
    started = 0;
    float const loss = cfg.overlap
                           ? net.forward_backward(x.data(), y.data(), cfg.batch, start_ready)
                           : net.forward_backward(x.data(), y.data(), cfg.batch);
    auto const step = [&] { std::visit([&](auto& o) { o.step(params, grads); }, opt); };
    auto const b = clock::now();
    auto const wait = [&] {
      if (!cfg.split_wait) return;
      auto const w = clock::now();
      gcl::barrier(comm);
      wait_s += std::chrono::duration<double>(clock::now() - w).count();
    };
    if (cfg.sync == "params") {
      step();
      wait();
      auto const c = clock::now();
      reduce.sum(params);  // Algorithm 1, line 5
      auto const d = clock::now();
      for (auto& p : params) p /= float(world);
      comm_s += std::chrono::duration<double>(d - c).count();
      run_s += std::chrono::duration<double>(d - c).count();
      compute_s += std::chrono::duration<double>(c - a).count() +
                   std::chrono::duration<double>(clock::now() - d).count();
    } else {
      // With overlap every bucket is in flight already: the barrier of split_wait comes after
      // the backward pass, and the time in wait() is what the backward pass did not hide.
      wait();
      auto const b2 = clock::now();
      if (cfg.overlap) {
        if (started != buckets.size())
          throw std::logic_error("lenet5::train: the backward pass started " +
                                 std::to_string(started) + " of " + std::to_string(buckets.size()) +
                                 " buckets");
        for (auto& r : pending) r.wait();
        for (auto const& r : pending) run_s += std::chrono::duration<double>(r.run_time()).count();
      } else {
        for (auto const& bk : buckets) reduce.sum(bucket_span(bk));  // the same buckets, in order
      }
      auto const c = clock::now();
      for (auto& g : grads) g /= float(world);
      step();
      comm_s += std::chrono::duration<double>(c - b2).count();
      if (!cfg.overlap) run_s += std::chrono::duration<double>(c - b2).count();
      compute_s += std::chrono::duration<double>(b - a).count() +
                   std::chrono::duration<double>(clock::now() - c).count();
    }
    if (!std::isfinite(loss))
      throw std::runtime_error("the loss is " + std::to_string(loss) + " at iteration " +
                               std::to_string(k) + ": lower --lr");
    loss_acc += loss, ++loss_n;
    loss_ema = loss_ema < 0 ? loss : 0.95 * loss_ema + 0.05 * loss;
    ++k;
    if (talk && cfg.progress) {
      auto const now = clock::now();
      if (std::chrono::duration<double>(now - last_progress).count() >= cfg.progress_seconds) {
        last_progress = now;
        double const t = std::chrono::duration<double>(now - start).count() - eval_s;
        std::printf("%sepoch %.2f  iteration %ld  loss %.4f  %.0f images/s  comm %.0f%%%s",
                    tty ? "\r\033[K" : "", double(k) / double(per_epoch), k, loss_ema,
                    double(k) * cfg.batch * world / t,
                    100 * (comm_s + wait_s) / (comm_s + wait_s + compute_s), tty ? "" : "\n");
        std::fflush(stdout);
      }
    }
    if (k % cfg.eval_every == 0 || k == cfg.max_iterations) {
      double const acc = evaluate(k);
      if (cfg.target_accuracy > 0 && acc >= cfg.target_accuracy) {
        res.k_star = k;
        res.seconds_to_target = res.evaluations.back().seconds;
        break;
      }
    }
  }
  res.iterations = k;
  res.seconds = std::chrono::duration<double>(clock::now() - start).count();
  res.train_seconds = res.seconds - eval_s;
  res.images_per_second = double(k) * cfg.batch * world / res.train_seconds;
  double const step_s = std::max(1e-12, comm_s + wait_s + compute_s);
  res.comm_share = (comm_s + wait_s) / step_s;
  res.wait_share = wait_s / step_s;
  res.compute_seconds = compute_s, res.comm_seconds = comm_s, res.wait_seconds = wait_s;
  res.comm_run_seconds = run_s, res.comm_exposed_seconds = comm_s;
  res.comm_hidden_seconds = std::max(0.0, run_s - comm_s);
  res.comm_hidden_share = run_s > 0 ? res.comm_hidden_seconds / run_s : 0;
  res.buckets = buckets.size();
  res.parameters.assign(params.begin(), params.end());
  return res;
}

}  // namespace lenet5
