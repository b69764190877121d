// automatic_sweep: per size, gcl::automatic's time divided by the best fixed algorithm's time,
// on P threads (issue 3's check: automatic should never be more than 10% slower than the best
// fixed algorithm), for the model's choice and for the measured (tuned) choice. Prints numbers;
// it asserts nothing (timing on a shared machine is noisy).
//
//     automatic_sweep --world-size 4 --min-bytes 8 --max-bytes 16777216 --factor 2 -r 11 --runs 3

#include <CLI/CLI.hpp>

#include <cstdio>
#include <limits>
#include <stdexcept>

#include "model_check.hpp"

int main(int argc, char** argv) {
  CLI::App app{"Ratio of gcl::automatic's all_reduce time to the best fixed algorithm's, per size"};
  int p = 4, reps = 15, runs = 3, trials = 3;
  std::size_t min_bytes = 64, max_bytes = 16 << 20, factor = 4;
  double shortlist = 4.0;
  app.add_option("-n,--world-size", p, "ranks (threads)")->check(CLI::Range(1, 64));
  app.add_option("--min-bytes", min_bytes, "smallest message, bytes (float32)");
  app.add_option("--max-bytes", max_bytes, "largest message, bytes");
  app.add_option("--factor", factor, "ratio of consecutive sizes")->check(CLI::Range(2, 1024));
  app.add_option("-r,--repetitions", reps, "timed calls per size and algorithm (median)");
  app.add_option("--runs", runs, "independent runs; the median of their medians is reported");
  app.add_option("--trials", trials, "tuned automatic: timed calls per candidate")
      ->check(CLI::Range(1, 100));
  app.add_option("--shortlist", shortlist,
                 "tuned automatic: try the algorithms predicted within this factor of the best");
  CLI11_PARSE(app, argc, argv);

  gcl::automatic const autom{.model = model_check::calibrate_threads(p)};
  gcl::automatic const tuned{.model = autom.model, .trials = trials, .shortlist = shortlist};
  std::vector<std::size_t> counts;
  for (std::size_t b = std::max<std::size_t>(min_bytes, 4); b <= max_bytes; b *= factor)
    counts.push_back(b / 4);

  // Tuning first, on its own (what a training loop's first iterations do): each size until
  // every rank has settled; each call is checked. Copies of `tuned` share what it learned.
  gcl::spawn<gcl::inproc_transport>(p, [&](auto& comm) {
    std::vector<float> v;
    for (std::size_t n : counts) {
      for (int call = 0; !tuned.tuned_choice(comm.rank(), p, n, 4, true); ++call) {
        if (call > 6 * trials) throw std::runtime_error("tuning did not settle");
        v.assign(n, static_cast<float>(comm.rank() + 1));
        gcl::all_reduce(comm, v, gcl::sum{}, tuned);
        if (!v.empty() && v.back() != static_cast<float>(p * (p + 1) / 2))
          throw std::runtime_error("wrong all_reduce result while tuning");
      }
    }
  });

  // 0 model, 1 tuned, 2.. the fixed algorithms in `choice` order, last tree again (the noise:
  // one algorithm timed twice in the same run).
  auto algs = std::tuple{autom,
                         tuned,
                         gcl::tree{},
                         gcl::ring{},
                         gcl::recursive_doubling{},
                         gcl::halving_doubling{},
                         gcl::direct{},
                         gcl::parameter_server{},
                         gcl::tree{}};
  auto t = model_check::time_all_reduce(p, counts, reps, algs, runs);
  std::size_t const again = t.size() - 1;

  std::printf(
      "# P = %d threads, float32 sum, median of %d x %d runs; tuned: %d trials per candidate, "
      "shortlist %g; model alpha %.3g s beta %.3g s/B gamma %.3g s/B latency %.3g s "
      "parallelism %.2f\n",
      p, reps, runs, trials, shortlist, autom.model.alpha, autom.model.beta, autom.model.gamma,
      autom.model.latency, autom.model.parallelism);
  // model/best, tuned/best: automatic's own calls against the best fixed one. "as fixed": the
  // algorithm it picked, timed as a fixed algorithm, over the best. noise: tree timed twice.
  std::printf("%10s %-18s %10s %-18s %7s %7s %-18s %7s %7s %7s\n", "bytes", "best fixed", "best us",
              "model picks", "m/best", "fixed", "tuned picks", "t/best", "fixed", "noise");
  double worst_model = 0, worst_tuned = 0, worst_noise = 0;
  for (std::size_t s = 0; s < counts.size(); ++s) {
    std::size_t best = 2;
    for (std::size_t a = 3; a < again; ++a)
      if (t[a][s] < t[best][s]) best = a;
    auto const mp = static_cast<std::size_t>(autom.choose(p, counts[s], 4, true));
    auto const tp = static_cast<std::size_t>(*tuned.tuned_choice(0, p, counts[s], 4, true));
    double const rm = t[0][s] / t[best][s], rt = t[1][s] / t[best][s];
    double const noise = std::max(t[again][s], t[2][s]) / std::min(t[again][s], t[2][s]);
    worst_model = std::max(worst_model, rm);
    worst_tuned = std::max(worst_tuned, rt);
    worst_noise = std::max(worst_noise, noise);
    std::printf("%10zu %-18s %10.2f %-18s %7.3f %7.3f %-18s %7.3f %7.3f %7.3f\n", counts[s] * 4,
                gcl::automatic::choice_names[best - 2].data(), t[best][s] * 1e6,
                gcl::automatic::choice_names[mp].data(), rm, t[mp + 2][s] / t[best][s],
                gcl::automatic::choice_names[tp].data(), rt, t[tp + 2][s] / t[best][s], noise);
  }
  std::printf("# worst automatic (model) / best fixed: %.3f (%s 1.10)\n", worst_model,
              worst_model <= 1.10 ? "<=" : ">");
  std::printf("# worst automatic (tuned) / best fixed: %.3f (%s 1.10)\n", worst_tuned,
              worst_tuned <= 1.10 ? "<=" : ">");
  std::printf("# worst noise (tree timed twice, slower / faster): %.3f\n", worst_noise);
}
