#pragma once
/// \file
/// `gcl::calibrate`: measures the `cost_model` (cost_model.hpp) on a live communicator, so that
/// predictions and `gcl::automatic`'s shortlist use this transport's alpha, beta, gamma,
/// latency and parallelism rather than the defaults. Collective: every rank calls it, and
/// every rank gets rank 0's model.
///
///     auto m = gcl::calibrate(comm);
///     gcl::all_reduce(comm, v, gcl::sum{}, gcl::automatic{.model = m});
///
/// Kept apart from cost_model.hpp so that the model (pure arithmetic over the algorithms'
/// schedules) does not carry the measurement (messages, timing). cost_model.hpp still includes
/// this header, so existing code that calls `calibrate` after including only cost_model.hpp
/// compiles; hence no algorithm header here (its barrier is `detail::binomial_barrier`).

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <span>
#include <vector>

#include "call_info.hpp"
#include "communicator.hpp"
#include "cost_model.hpp"
#include "detail/binomial_barrier.hpp"
#include "detail/reduce_kernel.hpp"
#include "detail/statistics.hpp"
#include "op.hpp"

namespace gcl {

/// Options of `calibrate`.
///
///     auto m = gcl::calibrate(comm, {.repetitions = 50});
struct calibrate_options {
  std::size_t small_bytes = 8;        ///< ping-pong size for alpha
  std::size_t large_bytes = 1 << 22;  ///< ping-pong size for beta, and the reduction for gamma
  int repetitions = 11;               ///< round trips per size; the median is used
};

/// Measures the model on `comm`, collectively (every rank must call it):
///  - alpha, beta, latency: ranks 0 and 1 ping-pong messages of `small_bytes` and
///    `large_bytes` (median round trips: the two sizes give the per-byte time beta); a stream
///    of 33 small messages against a single one gives the per-message cost alpha (the slower
///    of sending and receiving one); the rest of the small one-way time is the latency;
///  - gamma: rank 0 alone times a float sum over `large_bytes`;
///  - parallelism: then every rank runs the same sum at once; if the slowest takes c times
///    rank 0's solo time, only P / c ranks really run at once (threads sharing cores);
///  - rank 0's model is sent to every rank, so all ranks return the same model.
/// On one rank only gamma is measured; alpha and beta keep their defaults.
///
///     auto m = gcl::calibrate(comm);
///     gcl::all_reduce(comm, v, gcl::sum{}, gcl::automatic{.model = m});
template <class Transport>
cost_model calibrate(communicator<Transport>& comm, calibrate_options const& opts = {}) {
  using clock = std::chrono::steady_clock;
  auto scope = comm.begin_call(
      make_call_info<std::byte>(call_kind::calibrate, opts.large_bytes, 0, "", "ping-pong"));
  auto seconds = [](clock::time_point t0) {
    return std::chrono::duration<double>(clock::now() - t0).count();
  };
  cost_model m;
  int const me = comm.rank(), p = comm.size();
  int const reps = std::max(opts.repetitions, 1);
  auto buf = comm.template scratch<std::byte>(std::max(opts.large_bytes, opts.small_bytes), 0);
  auto round_trip = [&](std::size_t bytes) {
    auto b = buf.first(bytes);
    std::vector<double> t;
    for (int i = -2; i < reps; ++i) {  // two warm-up round trips
      auto start = clock::now();
      if (me == 0) {
        comm.send(1, std::span<std::byte const>(b), detail::collective_tag);
        comm.recv(1, b, detail::collective_tag);
      } else {
        comm.recv(0, b, detail::collective_tag);
        comm.send(0, std::span<std::byte const>(b), detail::collective_tag);
      }
      if (i >= 0) t.push_back(seconds(start));
    }
    return detail::lower_median(t);
  };
  if (p > 1 && me <= 1) {
    double const small = round_trip(opts.small_bytes) / 2, large = round_trip(opts.large_bytes) / 2;
    double const extra = static_cast<double>(opts.large_bytes - opts.small_bytes);
    m.beta = std::max((large - small) / extra, 1e-13);
    // A stream of `burst` small messages answered by one reply, against a single message
    // answered by one reply: the difference is burst - 1 times the per-message cost of the
    // slower side of the pipeline (sender's or receiver's handling), the LogP "gap".
    constexpr int burst = 33;
    auto b = buf.first(opts.small_bytes);
    auto stream = [&](int k) {
      std::vector<double> t;
      for (int i = -1; i < std::max(reps, 3); ++i) {
        auto start = clock::now();
        if (me == 0) {
          for (int j = 0; j < k; ++j)
            comm.send(1, std::span<std::byte const>(b), detail::collective_tag);
          comm.recv(1, b, detail::collective_tag);
        } else {
          for (int j = 0; j < k; ++j) comm.recv(0, b, detail::collective_tag);
          comm.send(0, std::span<std::byte const>(b), detail::collective_tag);
        }
        if (i >= 0) t.push_back(seconds(start));
      }
      return detail::lower_median(t);
    };
    double const one = stream(1), many = stream(burst);
    double const one_way = small - static_cast<double>(opts.small_bytes) * m.beta;
    m.alpha = std::clamp((many - one) / (burst - 1), 1e-9, std::max(one_way, 1e-9));
    m.latency = std::max(one_way - m.alpha, 0.0);
  }
  std::size_t const n = std::max<std::size_t>(opts.large_bytes / sizeof(float), 1);
  auto a = comm.template scratch<float>(n, 1);
  auto b = comm.template scratch<float>(n, 2);
  std::fill(a.begin(), a.end(), 1.0f);
  std::fill(b.begin(), b.end(), 2.0f);
  auto reduction = [&] {
    std::vector<double> t;
    for (int i = -1; i < std::max(reps / 2, 3); ++i) {
      auto start = clock::now();
      detail::reduce_into(a.data(), b.data(), n, sum{});
      if (i >= 0) t.push_back(seconds(start));
    }
    return detail::lower_median(t);
  };
  double solo = 0;
  if (me == 0) solo = reduction();
  // Wall time for every rank to do the same work at once, from one barrier to the next (a
  // rank's own timing would miss the time it was descheduled while others ran).
  constexpr int batch = 4;
  detail::binomial_barrier(comm);
  auto start = clock::now();
  for (int i = 0; i < batch; ++i) detail::reduce_into(a.data(), b.data(), n, sum{});
  detail::binomial_barrier(comm);
  double const together = seconds(start) / batch;
  if (me == 0) {
    m.gamma = std::max(solo / static_cast<double>(n * sizeof(float)), 1e-13);
    double const slowdown = std::max(together / solo, 1.0);
    m.parallelism =
        p > 1 ? std::clamp(static_cast<double>(p) / slowdown, 1.0, static_cast<double>(p)) : 0.0;
    double const wire[5] = {m.alpha, m.beta, m.gamma, m.latency, m.parallelism};
    for (int r = 1; r < p; ++r) comm.send(r, wire, detail::collective_tag);
  } else {
    double wire[5];
    comm.recv(0, wire, detail::collective_tag);
    m = cost_model{wire[0], wire[1], wire[2], wire[3], wire[4]};
  }
  return m;
}

}  // namespace gcl
