// automatic_sweep: per size, what gcl::automatic picks on P threads and how much slower that is
// than the best fixed algorithm (issue 3's check: automatic should never pick an algorithm more
// than 10% slower than the best fixed one), for the tuned automatic (the default: it times its
// shortlist on the first calls of each size class) and for the model alone (`.trials = 0`).
// Every run starts fresh threads and a fresh tuning, so the picks of several runs show how
// steady the tuning is. Prints numbers; it asserts nothing (timing on a shared machine is noisy).
//
//     automatic_sweep --world-size 4 --min-bytes 8 --max-bytes 16M --factor 2 --iters 11 --runs 3

#include <CLI/CLI.hpp>

#include <array>
#include <cstdio>
#include <string>
#include <string_view>

#include "common/cli.hpp"
#include "model_check.hpp"

int main(int argc, char** argv) {
  CLI::App app{"What gcl::automatic picks per size, against the best fixed all_reduce algorithm"};
  int p = 4, reps = 15, runs = 3;
  double min_seconds = 0.05;
  bool show_runs = false;
  std::string bind = "core";
  gcl::automatic const defaults{};
  int trials = defaults.trials, max_trials = -1;
  std::size_t min_bytes = 64, max_bytes = 16 << 20, factor = 4;
  double shortlist = defaults.shortlist, race_seconds = defaults.min_race_seconds;
  gcl_cli::setup(app, "automatic_sweep");
  app.add_option("-p,--world-size", p, "ranks (threads)")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  gcl_cli::add_size_option(app, "-b,--min-bytes", min_bytes, "smallest message, bytes (float32)")
      ->check(CLI::Range(std::size_t{4}, std::size_t{1} << 34));
  gcl_cli::add_size_option(app, "-e,--max-bytes", max_bytes, "largest message, bytes")
      ->check(CLI::Range(std::size_t{4}, std::size_t{1} << 34));
  app.add_option("-f,--factor", factor, "ratio of consecutive sizes")
      ->check(CLI::Range(2, 1024))
      ->capture_default_str();
  app.add_option("-n,--iters,--repetitions", reps, "timed calls per size and algorithm (median)")
      ->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  app.add_option("--runs", runs, "independent runs (fresh threads, fresh tuning); medians of runs")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  app.add_option("--min-seconds", min_seconds,
                 "per size and run, time all algorithms in turn for at least this long")
      ->check(CLI::Range(0.0, 1e6));
  app.add_option("--trials", trials, "tuned automatic: fewest timed calls per candidate")
      ->check(CLI::Range(1, 100));
  app.add_option("--max-trials", max_trials,
                 "tuned automatic: most timed calls per candidate (default 3 x trials)")
      ->check(CLI::Range(1, 1000));
  app.add_option("--bind", bind,
                 "pin rank r's thread to core r mod cores: core (default: a fixed placement, "
                 "even when ranks outnumber cores), auto (only when they do not), none")
      ->check(CLI::IsMember({"core", "auto", "none"}));
  app.add_flag("--show-runs", show_runs, "also print every run's time (us) of every algorithm");
  app.add_option("--race-seconds", race_seconds,
                 "tuned automatic: decide nothing before the race has lasted this long")
      ->check(CLI::Range(0.0, 1e6));
  app.add_option("--shortlist", shortlist,
                 "tuned automatic: try the algorithms predicted within this factor of the best")
      ->check(CLI::Range(1.0, 1e6));
  GCL_CLI_PARSE(app, argc, argv);
  if (min_bytes > max_bytes)
    return gcl_cli::usage_error(app, "--min-bytes is larger than --max-bytes");
  if (max_trials >= 0 && max_trials < trials)
    return gcl_cli::usage_error(app, "--max-trials is smaller than --trials");
  if (auto why = gcl_cli::refuse_launcher(); !why.empty()) return gcl_cli::usage_error(app, why);

  // Progress (a line per calibration, then per size and run) on stderr; results on stdout.
  gcl::automatic const model_only{
      .model = model_check::calibrate_threads(p, 5, {}, "automatic_sweep"), .trials = 0};
  gcl::automatic const tuned{.model = model_only.model,
                             .trials = trials,
                             .max_trials = max_trials < 0 ? 3 * trials : max_trials,
                             .min_race_seconds = race_seconds,
                             .shortlist = shortlist};
  std::vector<std::size_t> counts;
  for (std::size_t b = std::max<std::size_t>(min_bytes, 4); b <= max_bytes; b *= factor)
    counts.push_back(b / 4);

  // 0 model alone, 1 tuned, 2.. the fixed algorithms in `choice` order, last tree again (the
  // noise: one algorithm timed twice in the same run). The tuned automatic settles on each size
  // before that size is timed (model_check::settle).
  auto algs = std::tuple{model_only,
                         tuned,
                         gcl::tree{},
                         gcl::ring{},
                         gcl::recursive_doubling{},
                         gcl::halving_doubling{},
                         gcl::direct{},
                         gcl::parameter_server{},
                         gcl::tree{}};
  auto const m = model_check::time_all_reduce(p, counts, algs,
                                              {.repetitions = reps,
                                               .runs = runs,
                                               .min_seconds = min_seconds,
                                               .bind = bind,
                                               .progress = "automatic_sweep"});
  auto const& t = m.seconds;
  std::size_t const again = t.size() - 1;
  // Short names for the picks column, in `choice` order.
  constexpr std::array<std::string_view, 6> short_names = {"tree", "ring",   "rd",
                                                           "hd",   "direct", "ps"};
  auto name = [](int c) { return std::string(gcl::automatic::choice_names[std::size_t(c)]); };

  std::printf(
      "# P = %d threads, float32 sum, median of at least %d calls and %g s per size x %d runs "
      "(fresh threads and tuning each); tuned: trials %d..%d per candidate, race at least %g s, "
      "shortlist %g; model alpha %.3g s beta %.3g s/B gamma %.3g s/B latency %.3g s "
      "parallelism %.2f\n",
      p, reps, min_seconds, runs, tuned.trials, tuned.max_trials, tuned.min_race_seconds,
      tuned.shortlist, tuned.model.alpha, tuned.model.beta, tuned.model.gamma, tuned.model.latency,
      tuned.model.parallelism);
  // The best fixed algorithm of a size is the one with the least median over runs. Ratios are
  // taken within each run (all algorithms of a run share its machine state: a run can be
  // slower as a whole, which a ratio of medians from different runs would charge to one
  // algorithm), then the median over runs is shown:
  //   automatic/best  automatic's own calls (once settled they add nothing to the algorithm it
  //                   picked) over the best fixed algorithm's: the check;
  //   model/best      the same for the model alone (.trials = 0);
  //   pick/best       the algorithm automatic picked in a run, timed as a fixed one, over that
  //                   run's own best: the worst run (near-ties flip from run to run);
  //   noise           tree timed twice in the same loop, slower / faster, the worst run.
  std::printf("%10s %-18s %10s | %-34s %10s %9s | %-18s %10s | %7s\n", "bytes", "best fixed",
              "best us", "tuned picks (rd, hd, ps: short)", "auto/best", "pick/best", "model picks",
              "model/best", "noise");
  double worst_tuned = 0, worst_pick = 0, worst_model = 0, worst_noise = 0;
  int tuned_ok = 0, model_ok = 0;
  auto best_of = [&](std::vector<std::vector<double>> const& x, std::size_t s) {
    std::size_t best = 2;
    for (std::size_t a = 3; a < again; ++a)
      if (x[a][s] < x[best][s]) best = a;
    return best;
  };
  for (std::size_t s = 0; s < counts.size(); ++s) {
    int const mp = static_cast<int>(model_only.choose(p, counts[s], 4, true));
    std::size_t const best = best_of(t, s);
    std::string picks;
    double pick = 0, noise = 0;
    std::vector<double> tuned_ratio, model_ratio;
    for (std::size_t r = 0; r < m.per_run.size(); ++r) {
      auto const& x = m.per_run[r];
      std::size_t const run_best = best_of(x, s);
      int const tp = m.picks[1][s][r];
      picks += (picks.empty() ? "" : " ") + std::string(short_names[static_cast<std::size_t>(tp)]);
      pick = std::max(pick, x[static_cast<std::size_t>(tp) + 2][s] / x[run_best][s]);
      tuned_ratio.push_back(x[1][s] / x[best][s]);
      model_ratio.push_back(x[0][s] / x[best][s]);
      noise = std::max(noise, std::max(x[again][s], x[2][s]) / std::min(x[again][s], x[2][s]));
    }
    double const tuned_r = bench::median(tuned_ratio);
    double const model_r = bench::median(model_ratio);
    worst_tuned = std::max(worst_tuned, tuned_r);
    worst_pick = std::max(worst_pick, pick);
    worst_model = std::max(worst_model, model_r);
    worst_noise = std::max(worst_noise, noise);
    tuned_ok += tuned_r <= 1.10;
    model_ok += model_r <= 1.10;
    std::printf("%10zu %-18s %10.2f | %-34s %10.3f %9.3f | %-18s %10.3f | %7.3f\n", counts[s] * 4,
                name(static_cast<int>(best) - 2).c_str(), t[best][s] * 1e6, picks.c_str(), tuned_r,
                pick, name(mp).c_str(), model_r, noise);
  }
  int const n = static_cast<int>(counts.size());
  std::printf(
      "# tuned automatic / best fixed: worst %.3f (%s 1.10), within 10%% at %d of %d sizes; "
      "worst pick timed as fixed in its own run %.3f\n",
      worst_tuned, worst_tuned <= 1.10 ? "<=" : ">", tuned_ok, n, worst_pick);
  std::printf("# model alone / best fixed: worst %.3f (%s 1.10), within 10%% at %d of %d sizes\n",
              worst_model, worst_model <= 1.10 ? "<=" : ">", model_ok, n);
  std::printf("# noise (tree timed twice in the same loop, slower / faster): worst %.3f\n",
              worst_noise);
  if (show_runs) {
    std::printf(
        "# every run, us: model, tuned, tree, ring, recursive_doubling, halving_doubling, "
        "direct, parameter_server, tree again\n");
    for (std::size_t s = 0; s < counts.size(); ++s)
      for (std::size_t r = 0; r < m.per_run.size(); ++r) {
        std::printf("%10zu run %zu:", counts[s] * 4, r);
        for (auto const& a : m.per_run[r]) std::printf(" %9.2f", a[s] * 1e6);
        std::printf("\n");
      }
  }
}
