#pragma once
// Shared by predict_vs_measure and automatic_sweep: time gcl::all_reduce for a list of
// algorithms and sizes on P threads, interleaving the algorithms inside each repetition so that
// the machine's background load (shared cores) hits them alike. Each algorithm's turn in a
// repetition is two calls and only the second is timed, so that it follows a call of its own
// algorithm as in a program that uses one (after another algorithm, the caches and the waiting
// threads are in that one's state, which at MiB sizes alone changes the time by half). The time of
// a call is the slowest rank's (barrier, t0, call, t); the reported time is the median over
// repetitions, of which there are at least enough to span `min_seconds` per size (threads that
// share cores run faster or slower for milliseconds at a time, so a short window measures luck). An
// algorithm that tunes itself (gcl::automatic) is first called until it has settled for the size,
// as a training loop's first iterations would, and its pick is reported. With a `progress`
// name, each step prints a line on stderr as it ends ("automatic_sweep: run 1 of 3: 64 KiB (5
// of 10 sizes), 12 s"), so that stdout keeps only the results.

#include <gcl/algorithm/automatic.hpp>
#include <gcl/collective/all_reduce.hpp>
#include <gcl/collective/barrier.hpp>
#include <gcl/cost_model.hpp>
#include <gcl/spawn.hpp>
#include <gcl/transport/inproc.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "bind.hpp"
#include "common.hpp"  // bench::median: the one median of the benchmarks

namespace model_check {

/// How to time: at least `repetitions` calls per algorithm and size, and at least enough to
/// last `min_seconds` per size; `runs` independent runs; rank threads pinned per `bind` ("auto":
/// to core rank mod cores when ranks do not outnumber cores, "core": always, "none").
struct timing_options {
  int repetitions = 11;
  int runs = 1;
  double min_seconds = 0;
  std::string bind = "auto";
  char const* progress = nullptr;  ///< the program's name: a line on stderr per size and run
};

/// "64 B", "4 KiB", "16 MiB": a size for the progress lines.
inline std::string size_text(std::size_t b) {
  if (b >= (1u << 20) && b % (1u << 20) == 0) return std::to_string(b >> 20) + " MiB";
  if (b >= (1u << 10) && b % (1u << 10) == 0) return std::to_string(b >> 10) + " KiB";
  return std::to_string(b) + " B";
}

/// "NAME: what, N s" on stderr (seconds since `start`), if `name` is set; flushed at once.
inline void progress_line(char const* name, std::string const& what,
                          std::chrono::steady_clock::time_point start) {
  if (name == nullptr) return;
  double const s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::fprintf(stderr, "%s: %s, %.0f s\n", name, what.c_str(), s);
  std::fflush(stderr);
}

/// Per algorithm a (index in the tuple) and size s: the median time, and for an algorithm that
/// tunes itself what it settled on in each run (a `gcl::automatic::choice` as int; -1 for the
/// others).
struct timings {
  std::vector<std::vector<double>> seconds;               // [a][s], the median over runs
  std::vector<std::vector<std::vector<int>>> picks;       // [a][s][run]
  std::vector<std::vector<std::vector<double>>> per_run;  // [run][a][s]
};

/// Rank r's input: r + 1 everywhere.
template <class Comm>
void fill_input(Comm const& comm, std::vector<float>& v) {
  std::fill(v.begin(), v.end(), static_cast<float>(comm.rank() + 1));
}

/// After a sum all_reduce of `fill_input`'s data every element is P(P+1)/2; throws `what` if the
/// first or last is not.
template <class Comm>
void check_result(Comm const& comm, std::vector<float> const& v, char const* what) {
  float const want = static_cast<float>(comm.size() * (comm.size() + 1) / 2);
  if (!v.empty() && (v.front() != want || v.back() != want)) throw std::runtime_error(what);
}

/// Calls `alg` until it reports a settled choice for `count` floats (at most `limit_seconds`,
/// agreed, then throws) and returns it; -1 for an algorithm that does not tune.
template <class Comm, class Alg>
int settle(Comm& comm, Alg const& alg, std::vector<float>& v, double limit_seconds = 60) {
  if constexpr (requires { alg.tuned_choice(comm, v.size(), sizeof(float), true); }) {
    auto const start = std::chrono::steady_clock::now();
    while (true) {
      if (auto c = alg.tuned_choice(comm, v.size(), sizeof(float), true))
        return static_cast<int>(*c);
      // Every rank settles on the same call, so every rank sees the same limit decision only
      // if it is agreed; the tuned automatic cannot be left half way.
      double elapsed =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      gcl::all_reduce(comm, std::span<double>(&elapsed, 1), gcl::max{}, gcl::tree{});
      if (elapsed > limit_seconds) throw std::runtime_error("automatic did not settle");
      fill_input(comm, v);
      gcl::all_reduce(comm, v, gcl::sum{}, alg);
      check_result(comm, v, "wrong all_reduce result while tuning");
    }
  } else {
    return -1;
  }
}

/// One run on fresh threads: seconds[a][s] and each tuning algorithm's pick (picks[a][s][0]).
/// Also checks every result (rank r holds r + 1, so each element must be P(P+1)/2).
template <class... Algs>
timings time_all_reduce_once(
    int p, std::vector<std::size_t> const& counts, std::tuple<Algs...> const& algs,
    timing_options const& o, std::string const& run_name = "",
    std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now()) {
  int const repetitions = o.repetitions;
  constexpr std::size_t na = sizeof...(Algs);
  struct rank_result {
    std::vector<std::vector<std::vector<double>>> t;  // [alg][size][rep]
    std::vector<std::vector<int>> picks;              // [alg][size]
  };
  auto per_rank = gcl::spawn<gcl::inproc_transport>(p, [&](auto& comm) {
    bench::detail::bind_rank(o.bind, comm.rank(), comm.size());
    rank_result r{std::vector<std::vector<std::vector<double>>>(
                      na, std::vector<std::vector<double>>(counts.size())),
                  std::vector<std::vector<int>>(na, std::vector<int>(counts.size(), -1))};
    std::vector<float> v;
    for (std::size_t s = 0; s < counts.size(); ++s) {
      v.assign(counts[s], 0.0f);
      std::size_t k = 0;
      std::apply([&](auto const&... alg) { ((r.picks[k++][s] = settle(comm, alg, v)), ...); },
                 algs);
      // Two warm-up rounds, timed to size the rest: enough rounds to last min_seconds, agreed.
      double reps = repetitions;
      auto const warm = std::chrono::steady_clock::now();
      for (int rep = -2; rep < reps; ++rep) {
        if (rep == 0 && o.min_seconds > 0) {
          double round =
              std::chrono::duration<double>(std::chrono::steady_clock::now() - warm).count() / 2;
          gcl::all_reduce(comm, std::span<double>(&round, 1), gcl::max{}, gcl::tree{});
          reps = std::clamp(std::ceil(o.min_seconds / std::max(round, 1e-9)), double(repetitions),
                            1e5);
        }
        std::size_t a = 0;
        std::apply(
            [&](auto const&... alg) {
              (
                  [&] {
                    for (int call = 0; call < 2; ++call) {  // the first is the turn's warm-up
                      fill_input(comm, v);
                      gcl::barrier(comm);
                      auto t0 = std::chrono::steady_clock::now();
                      gcl::all_reduce(comm, v, gcl::sum{}, alg);
                      double dt =
                          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
                              .count();
                      check_result(comm, v, "wrong all_reduce result");
                      if (rep >= 0 && call == 1) r.t[a][s].push_back(dt);
                    }
                    ++a;
                  }(),
                  ...);
            },
            algs);
      }
      if (comm.rank() == 0)
        progress_line(o.progress,
                      run_name + size_text(counts[s] * sizeof(float)) + " (" +
                          std::to_string(s + 1) + " of " + std::to_string(counts.size()) +
                          " sizes)",
                      start);
    }
    return r;
  });
  timings out{
      std::vector<std::vector<double>>(na, std::vector<double>(counts.size())),
      std::vector<std::vector<std::vector<int>>>(na, std::vector<std::vector<int>>(counts.size()))};
  for (std::size_t a = 0; a < na; ++a)
    for (std::size_t s = 0; s < counts.size(); ++s) {
      std::vector<double> slowest(per_rank[0].t[a][s].size(), 0.0);
      for (auto const& r : per_rank)
        for (std::size_t i = 0; i < slowest.size(); ++i)
          slowest[i] = std::max(slowest[i], r.t[a][s][i]);
      out.seconds[a][s] = bench::median(slowest);
      out.picks[a][s].push_back(per_rank[0].picks[a][s]);  // the same on every rank
    }
  return out;
}

/// The median over `o.runs` independent runs (fresh threads, fresh tuning each) of
/// `time_all_reduce_once`, and every run's picks: load from other processes comes in bursts
/// longer than one run.
template <class... Algs>
timings time_all_reduce(int p, std::vector<std::size_t> const& counts,
                        std::tuple<Algs...> const& algs, timing_options const& o) {
  std::vector<timings> all;
  auto const start = std::chrono::steady_clock::now();
  int const runs = std::max(o.runs, 1);
  for (int r = 0; r < runs; ++r)
    all.push_back(time_all_reduce_once(
        p, counts, algs, o, "run " + std::to_string(r + 1) + " of " + std::to_string(runs) + ": ",
        start));
  timings out = all[0];
  for (auto const& run : all) out.per_run.push_back(run.seconds);
  for (std::size_t a = 0; a < out.seconds.size(); ++a)
    for (std::size_t s = 0; s < out.seconds[a].size(); ++s) {
      std::vector<double> v;
      for (auto const& run : all) v.push_back(run.seconds[a][s]);
      out.seconds[a][s] = bench::median(v);
      for (std::size_t r = 1; r < all.size(); ++r) out.picks[a][s].push_back(all[r].picks[a][s][0]);
    }
  return out;
}

/// The model every rank agrees on, measured on `p` threads (median of `runs` calibrations).
/// With a `progress` name, a line on stderr per calibration.
inline gcl::cost_model calibrate_threads(int p, int runs = 5, gcl::calibrate_options opts = {},
                                         char const* progress = nullptr) {
  std::vector<double> al, be, ga, la, pa;
  auto const start = std::chrono::steady_clock::now();
  for (int i = 0; i < runs; ++i) {
    auto m = gcl::spawn<gcl::inproc_transport>(
        p, [&](auto& comm) { return gcl::calibrate(comm, opts); })[0];
    progress_line(progress,
                  "calibrating the cost model on " + std::to_string(p) +
                      " threads: " + std::to_string(i + 1) + " of " + std::to_string(runs),
                  start);
    al.push_back(m.alpha);
    be.push_back(m.beta);
    ga.push_back(m.gamma);
    la.push_back(m.latency);
    pa.push_back(m.parallelism);
  }
  return {bench::median(al), bench::median(be), bench::median(ga), bench::median(la),
          bench::median(pa)};
}

/// One-way time of a message of counts[s] floats between two threads: half the median round
/// trip of a ping-pong (the homework's "time to send D bytes from one worker to another").
/// With a `progress` name, a line on stderr per size.
inline std::vector<double> ping_pong(std::vector<std::size_t> const& counts, int repetitions,
                                     char const* progress = nullptr) {
  auto const start = std::chrono::steady_clock::now();
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
      out.push_back(bench::median(t) / 2);
      if (comm.rank() == 0)
        progress_line(progress, "ping-pong " + size_text(n * sizeof(float)), start);
    }
    return out;
  })[0];
}

}  // namespace model_check
