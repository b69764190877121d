// The same all-reduce with two algorithms: a binomial tree (reduce to rank 0, then broadcast;
// 2 ceil(log2 P) rounds of whole messages) and a ring (reduce-scatter, then all-gather;
// 2(P-1) rounds of 1/P-sized chunks). Both must give the same, exact result.
//
//     $ all_reduce_algorithms --world-size 4 --count 1000000
#include <gcl/algorithm/ring.hpp>
#include <gcl/algorithm/tree.hpp>
#include <gcl/collective/all_reduce.hpp>
#include <gcl/collective/barrier.hpp>
#include <gcl/op.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "common/launch.hpp"

namespace {

// Integer-valued floats: every partial sum is exact, so any order of additions gives the same
// bits, and the expected value is known.
float value(int rank, std::size_t i) {
  return static_cast<float>(rank + 1) + static_cast<float>(i % 7);
}
float expected(int p, std::size_t i) {
  return static_cast<float>(p * (p + 1) / 2) + static_cast<float>(p) * static_cast<float>(i % 7);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"All-reduce the same data with gcl::tree and gcl::ring; print results and times"};
  gcl_cli::setup(app, "all_reduce_algorithms");
  gcl_example::launch_options opts;
  gcl_example::add_launch_options(app, opts);
  std::size_t count = 1 << 20;
  int iterations = 5;
  app.add_option("--count", count, "floats per rank")
      ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 28))
      ->capture_default_str();
  app.add_option("-n,--iters,--iterations", iterations, "timed repetitions (the median is printed)")
      ->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  GCL_CLI_PARSE(app, argc, argv);

  return gcl_example::launch(app, opts, [&](auto& comm) {
    int const p = comm.size();
    std::vector<float> data(count);

    // Runs the all-reduce `iterations` times; returns the median of the slowest rank's times.
    auto run = [&](auto algorithm) {
      std::vector<double> seconds;
      for (int it = 0; it < iterations; ++it) {
        for (std::size_t i = 0; i < count; ++i) data[i] = value(comm.rank(), i);
        gcl::barrier(comm);
        auto start = std::chrono::steady_clock::now();
        gcl::all_reduce(comm, data, gcl::sum{}, algorithm);
        double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        gcl::all_reduce(comm, s, gcl::max{}, gcl::tree{});  // the slowest rank's time
        seconds.push_back(s);
      }
      std::nth_element(seconds.begin(), seconds.begin() + iterations / 2, seconds.end());
      return seconds[static_cast<std::size_t>(iterations / 2)];
    };
    auto check = [&] {
      std::size_t wrong = 0;
      for (std::size_t i = 0; i < count; ++i) wrong += data[i] != expected(p, i);
      return wrong;
    };
    auto show = [&](char const* name, double s, std::size_t wrong, std::vector<float> const& head) {
      if (comm.rank() != 0) return;
      std::string first;
      for (float x : head) first += std::to_string(static_cast<long>(x)) + " ";
      double mb = static_cast<double>(count * sizeof(float)) / 1e6;
      std::printf("%-4s P=%d count=%zu: result[0..%zu] = %s... %s; %.3f ms (%.1f MB/s algbw)\n",
                  name, p, count, head.size(), first.c_str(),
                  wrong == 0 ? "correct" : (std::to_string(wrong) + " WRONG").c_str(), s * 1e3,
                  s > 0 ? mb / s : 0.0);
    };
    auto head = [&] {
      return std::vector<float>(data.begin(), data.begin() + std::min<std::size_t>(count, 5));
    };

    double t_tree = run(gcl::tree{});
    std::size_t wrong_tree = check();
    auto tree_result = data;
    show("tree", t_tree, wrong_tree, head());

    double t_ring = run(gcl::ring{});
    std::size_t wrong_ring = check();
    show("ring", t_ring, wrong_ring, head());

    bool same = data == tree_result;
    if (comm.rank() == 0)
      std::printf("tree and ring results are %s; ring/tree time ratio %.2f\n",
                  same ? "identical" : "DIFFERENT", t_tree > 0 ? t_ring / t_tree : 0.0);
    if (wrong_tree || wrong_ring || !same)
      throw std::runtime_error("all_reduce gave a wrong result");
  });
}
