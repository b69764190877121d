// automatic_sweep: per size, gcl::automatic's time divided by the best fixed algorithm's time,
// on P threads (issue 3's check: automatic should never be more than 10% slower than the best
// fixed algorithm). Prints numbers; it asserts nothing (timing on a shared machine is noisy).
//
//     automatic_sweep --world-size 4 --min-bytes 64 --max-bytes 16M --repetitions 15

#include <CLI/CLI.hpp>

#include <cstdio>

#include "model_check.hpp"

int main(int argc, char** argv) {
  CLI::App app{"Ratio of gcl::automatic's all_reduce time to the best fixed algorithm's, per size"};
  int p = 4, reps = 15, runs = 3;
  std::size_t min_bytes = 64, max_bytes = 16 << 20;
  app.add_option("-n,--world-size", p, "ranks (threads)")->check(CLI::Range(1, 64));
  app.add_option("--min-bytes", min_bytes, "smallest message, bytes (float32)");
  app.add_option("--max-bytes", max_bytes, "largest message, bytes");
  app.add_option("-r,--repetitions", reps, "timed calls per size and algorithm (median)");
  app.add_option("--runs", runs, "independent runs; the median of their medians is reported");
  CLI11_PARSE(app, argc, argv);

  gcl::automatic const autom{.model = model_check::calibrate_threads(p)};
  std::vector<std::size_t> counts;
  for (std::size_t b = std::max<std::size_t>(min_bytes, 4); b <= max_bytes; b *= 4)
    counts.push_back(b / 4);
  auto algs = std::tuple{autom,
                         gcl::tree{},
                         gcl::ring{},
                         gcl::recursive_doubling{},
                         gcl::halving_doubling{},
                         gcl::direct{},
                         gcl::parameter_server{}};
  auto t = model_check::time_all_reduce(p, counts, reps, algs, runs);

  std::printf(
      "# P = %d threads, float32 sum, median of %d x %d runs; model alpha %.3g s beta %.3g s/B "
      "gamma %.3g s/B latency %.3g s parallelism %.2f\n",
      p, reps, runs, autom.model.alpha, autom.model.beta, autom.model.gamma, autom.model.latency,
      autom.model.parallelism);
  // ratio: automatic's own call against the best fixed one. choice: the same comparison with
  // the fixed algorithm automatic picked, timed as a fixed algorithm, so that the two columns
  // differ only by timing noise (on a shared machine often more than 10%).
  std::printf("%12s %-18s %12s %-18s %12s %8s %8s\n", "bytes", "automatic picks", "auto us",
              "best fixed", "best us", "ratio", "choice");
  double worst = 0, worst_choice = 0;
  for (std::size_t s = 0; s < counts.size(); ++s) {
    std::size_t best = 1;
    for (std::size_t a = 2; a < t.size(); ++a)
      if (t[a][s] < t[best][s]) best = a;
    auto pick = static_cast<std::size_t>(autom.choose(p, counts[s], 4, true));
    double const ratio = t[0][s] / t[best][s], choice = t[pick + 1][s] / t[best][s];
    worst = std::max(worst, ratio);
    worst_choice = std::max(worst_choice, choice);
    std::printf("%12zu %-18s %12.2f %-18s %12.2f %8.3f %8.3f\n", counts[s] * 4,
                gcl::automatic::choice_names[pick].data(), t[0][s] * 1e6,
                gcl::automatic::choice_names[best - 1].data(), t[best][s] * 1e6, ratio, choice);
  }
  std::printf("# worst ratio of the pick, timed as a fixed algorithm, to the best: %.3f\n",
              worst_choice);
  std::printf("# worst ratio automatic / best fixed: %.3f (%s 1.10)\n", worst,
              worst <= 1.10 ? "<=" : ">");
}
