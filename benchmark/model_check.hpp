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
std::vector<std::vector<double>> time_all_reduce(int p, std::vector<std::size_t> const& counts,
                                                 int repetitions, std::tuple<Algs...> const& algs) {
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

/// The model every rank agrees on, measured on `p` threads (median of `runs` calibrations).
inline gcl::cost_model calibrate_threads(int p, int runs = 5) {
  std::vector<double> al, be, ga, la, pa;
  for (int i = 0; i < runs; ++i) {
    auto m =
        gcl::spawn<gcl::inproc_transport>(p, [](auto& comm) { return gcl::calibrate(comm); })[0];
    al.push_back(m.alpha);
    be.push_back(m.beta);
    ga.push_back(m.gamma);
    la.push_back(m.latency);
    pa.push_back(m.parallelism);
  }
  return {median(al), median(be), median(ga), median(la), median(pa)};
}

}  // namespace model_check
