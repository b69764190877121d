#pragma once
// Shared by predict_vs_measure and automatic_sweep: time gcl::all_reduce for a list of
// algorithms and sizes on P threads, interleaving the algorithms inside each repetition so that
// the machine's background load (shared cores) hits them alike. Per repetition the time of a
// call is the slowest rank's (barrier, t0, call, t); the reported time is the median over
// repetitions.

#include <gcl/algorithm/automatic.hpp>
#include <gcl/collective/all_reduce.hpp>
#include <gcl/collective/barrier.hpp>
#include <gcl/cost_model.hpp>
#include <gcl/spawn.hpp>
#include <gcl/transport/inproc.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <stdexcept>
#include <tuple>
#include <vector>

namespace model_check {

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

/// seconds[a][s]: median time of algorithm a (index in `algs`) at sizes[s] (float32 elements).
/// Also checks every result (rank r holds r + 1, so each element must be P(P+1)/2).
template <class... Algs>
std::vector<std::vector<double>> time_all_reduce_once(int p, std::vector<std::size_t> const& counts,
                                                      int repetitions,
                                                      std::tuple<Algs...> const& algs) {
  constexpr std::size_t na = sizeof...(Algs);
  // per rank: [alg][size][rep]
  auto per_rank = gcl::spawn<gcl::inproc_transport>(p, [&](auto& comm) {
    std::vector<std::vector<std::vector<double>>> t(
        na, std::vector<std::vector<double>>(counts.size()));
    std::vector<float> v;
    for (std::size_t s = 0; s < counts.size(); ++s) {
      v.assign(counts[s], 0.0f);
      for (int rep = -2; rep < repetitions; ++rep) {  // two warm-up calls
        std::size_t a = 0;
        std::apply(
            [&](auto const&... alg) {
              (
                  [&] {
                    std::fill(v.begin(), v.end(), static_cast<float>(comm.rank() + 1));
                    gcl::barrier(comm);
                    auto t0 = std::chrono::steady_clock::now();
                    gcl::all_reduce(comm, v, gcl::sum{}, alg);
                    double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
                                    .count();
                    float const want = static_cast<float>(comm.size() * (comm.size() + 1) / 2);
                    if (!v.empty() && (v.front() != want || v.back() != want))
                      throw std::runtime_error("wrong all_reduce result");
                    if (rep >= 0) t[a][s].push_back(dt);
                    ++a;
                  }(),
                  ...);
            },
            algs);
      }
    }
    return t;
  });
  std::vector<std::vector<double>> out(na, std::vector<double>(counts.size()));
  for (std::size_t a = 0; a < na; ++a)
    for (std::size_t s = 0; s < counts.size(); ++s) {
      std::vector<double> slowest(static_cast<std::size_t>(repetitions), 0.0);
      for (auto const& r : per_rank)
        for (int i = 0; i < repetitions; ++i) slowest[i] = std::max(slowest[i], r[a][s][i]);
      out[a][s] = median(slowest);
    }
  return out;
}

/// The median over `runs` independent runs (fresh threads each) of `time_all_reduce_once`: load
/// from other processes comes in bursts longer than one run.
template <class... Algs>
std::vector<std::vector<double>> time_all_reduce(int p, std::vector<std::size_t> const& counts,
                                                 int repetitions, std::tuple<Algs...> const& algs,
                                                 int runs = 1) {
  std::vector<std::vector<std::vector<double>>> all;
  for (int r = 0; r < std::max(runs, 1); ++r)
    all.push_back(time_all_reduce_once(p, counts, repetitions, algs));
  auto out = all[0];
  for (std::size_t a = 0; a < out.size(); ++a)
    for (std::size_t s = 0; s < out[a].size(); ++s) {
      std::vector<double> v;
      for (auto const& run : all) v.push_back(run[a][s]);
      out[a][s] = median(v);
    }
  return out;
}

/// The model every rank agrees on, measured on `p` threads (median of `runs` calibrations).
inline gcl::cost_model calibrate_threads(int p, int runs = 5, gcl::calibrate_options opts = {}) {
  std::vector<double> al, be, ga, la, pa;
  for (int i = 0; i < runs; ++i) {
    auto m = gcl::spawn<gcl::inproc_transport>(
        p, [&](auto& comm) { return gcl::calibrate(comm, opts); })[0];
    al.push_back(m.alpha);
    be.push_back(m.beta);
    ga.push_back(m.gamma);
    la.push_back(m.latency);
    pa.push_back(m.parallelism);
  }
  return {median(al), median(be), median(ga), median(la), median(pa)};
}

/// One-way time of a message of counts[s] floats between two threads: half the median round
/// trip of a ping-pong (the homework's "time to send D bytes from one worker to another").
inline std::vector<double> ping_pong(std::vector<std::size_t> const& counts, int repetitions) {
  return gcl::spawn<gcl::inproc_transport>(2, [&](auto& comm) {
    std::vector<double> out;
    std::vector<float> v;
    for (std::size_t n : counts) {
      v.assign(n, 1.0f);
      std::vector<double> t;
      for (int rep = -2; rep < repetitions; ++rep) {
        auto t0 = std::chrono::steady_clock::now();
        if (comm.rank() == 0) {
          comm.send(1, v);
          comm.recv(1, v);
        } else {
          comm.recv(0, v);
          comm.send(0, v);
        }
        if (rep >= 0)
          t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      }
      out.push_back(median(t) / 2);
    }
    return out;
  })[0];
}

}  // namespace model_check
