// predict_vs_measure: the cost model's prediction beside the measured time of each all_reduce
// algorithm, across sizes, on P threads. Feeds doc/img/predict_vs_measure.png
// (scripts: doc/img/predict_vs_measure.sh).
//
//     predict_vs_measure --world-size 4 --min-bytes 64 --max-bytes 16M --iters 15
//
// The model is calibrated first (gcl::calibrate: ping-pong for alpha and beta, a local sum for
// gamma), or given with --alpha/--beta/--gamma. Columns: bytes, then predicted and measured
// microseconds per algorithm.

#include <CLI/CLI.hpp>

#include <cstdio>
#include <string>

#include "common/cli.hpp"
#include "model_check.hpp"

int main(int argc, char** argv) {
  CLI::App app{"Predicted (cost model) vs measured all_reduce time per algorithm on threads"};
  int p = 4, reps = 15, runs = 3;
  std::size_t min_bytes = 64, max_bytes = 16 << 20;
  double alpha = 0, beta = 0, gamma = 0;
  gcl_cli::setup(app, "predict_vs_measure");
  app.add_option("-p,--world-size", p, "ranks (threads)")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  gcl_cli::add_size_option(app, "-b,--min-bytes", min_bytes, "smallest message, bytes (float32)")
      ->check(CLI::Range(std::size_t{4}, std::size_t{1} << 34));
  gcl_cli::add_size_option(app, "-e,--max-bytes", max_bytes, "largest message, bytes")
      ->check(CLI::Range(std::size_t{4}, std::size_t{1} << 34));
  app.add_option("-n,--iters,--repetitions", reps, "timed calls per size and algorithm (median)")
      ->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  app.add_option("--runs", runs, "independent runs; the median of their medians is reported")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  app.add_option("--alpha", alpha, "seconds per message (0: calibrate)")
      ->check(CLI::Range(0.0, 1e3));
  app.add_option("--beta", beta, "seconds per byte (0: calibrate)")->check(CLI::Range(0.0, 1e3));
  app.add_option("--gamma", gamma, "seconds per reduced byte (0: calibrate)")
      ->check(CLI::Range(0.0, 1e3));
  GCL_CLI_PARSE(app, argc, argv);
  if (min_bytes > max_bytes)
    return gcl_cli::usage_error(app, "--min-bytes is larger than --max-bytes");
  if (auto why = gcl_cli::refuse_launcher(); !why.empty()) return gcl_cli::usage_error(app, why);

  // Calibrated with a large message the size of the sweep's largest: beta then includes the
  // memory traffic the large sizes pay (a small one would be served from cache).
  // Progress (a line per calibration, size and run) on stderr; results on stdout.
  gcl::cost_model m = model_check::calibrate_threads(
      p, 5, {.large_bytes = std::max<std::size_t>(max_bytes, 1 << 20)}, "predict_vs_measure");
  if (alpha > 0) m.alpha = alpha;
  if (beta > 0) m.beta = beta;
  if (gamma > 0) m.gamma = gamma;
  std::vector<std::size_t> counts;
  for (std::size_t b = std::max<std::size_t>(min_bytes, 4); b <= max_bytes; b *= 4)
    counts.push_back(b / 4);

  auto algs = std::tuple{gcl::tree{},
                         gcl::ring{},
                         gcl::recursive_doubling{},
                         gcl::halving_doubling{},
                         gcl::direct{},
                         gcl::parameter_server{}};
  char const* names[] = {
      "tree", "ring", "recursive_doubling", "halving_doubling", "direct", "parameter_server"};
  auto measured =
      model_check::time_all_reduce(
          p, counts, algs, {.repetitions = reps, .runs = runs, .progress = "predict_vs_measure"})
          .seconds;
  auto one_way = model_check::ping_pong(counts, reps, "predict_vs_measure");

  std::printf(
      "# all_reduce float32 sum on P = %d threads; model alpha = %.3g s, beta = %.3g s/B "
      "(%.2f GB/s), gamma = %.3g s/B, latency = %.3g s, parallelism = %.2f; median of %d x %d "
      "runs\n",
      p, m.alpha, m.beta, 1e-9 / m.beta, m.gamma, m.latency, m.parallelism, reps, runs);
  std::printf("# %-10s %14s %14s", "bytes", "send.pred", "send.meas");
  for (auto const* n : names)
    std::printf(" %14s %14s", (std::string(n) + ".pred").c_str(),
                (std::string(n) + ".meas").c_str());
  std::printf("\n");
  for (std::size_t s = 0; s < counts.size(); ++s) {
    std::size_t const bytes = counts[s] * 4;
    std::printf("%12zu %14.2f %14.2f", bytes,
                (m.latency + m.alpha + static_cast<double>(bytes) * m.beta) * 1e6,
                one_way[s] * 1e6);
    std::size_t a = 0;
    std::apply(
        [&](auto const&... alg) {
          ((std::printf(" %14.2f %14.2f", m.predict(alg, p, bytes, 4) * 1e6, measured[a][s] * 1e6),
            ++a),
           ...);
        },
        algs);
    std::printf("\n");
  }
  // The homework's crossover (doc/homework.md, Task 2, Step 3): tree = ring at
  // D* = t b (N - 1 - log2 N) / (log2 N - (N - 1) / N) with t = alpha, 1/b = beta (no gamma).
  double const lg = std::log2(static_cast<double>(p));
  if (p > 2)
    std::printf("# homework crossover D* (alpha-beta only) = %.0f bytes; with gamma: see doc\n",
                m.alpha / m.beta * (p - 1 - lg) / (lg - (p - 1.0) / p));
}
