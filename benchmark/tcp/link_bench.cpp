// One rank of a TCP job that measures its links, configured from the environment (tools/gcl-launch,
// or benchmark/tcp/shaped.sh, which starts one rank per network namespace):
//
//   tcp_link_bench pingpong                  send/recv ping-pong between ranks 0 and 1: one-way us,
//                                            GB/s, per size
//   tcp_link_bench tree_vs_ring [-n reps] [-e max_bytes]   (or: tree_vs_ring REPS MAX_BYTES)
//                                            tree vs ring all_reduce time per size, beside the cost
//                                            model calibrated on this very link (rank 0 prints)
//
// Any gcl error is printed on stderr as "rank R: what" and the exit code is 1.

#include <gcl/algorithm/ring.hpp>
#include <gcl/algorithm/tree.hpp>
#include <gcl/collective/all_reduce.hpp>
#include <gcl/collective/barrier.hpp>
#include <gcl/cost_model.hpp>
#include <gcl/transport/tcp.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "../common.hpp"  // bench::median: the one median of the benchmarks
#include "common/cli.hpp"

namespace {

using comm_t = gcl::communicator<gcl::tcp_transport>;

template <class Alg>
double time_all_reduce(comm_t& comm, Alg const& alg, std::size_t n, int reps) {
  std::vector<float> v(n, 1.0f);
  std::vector<double> t;
  gcl::all_reduce(comm, v, gcl::sum{}, alg);  // warm up
  for (int i = 0; i < reps; ++i) {
    gcl::barrier(comm, gcl::tree{});
    auto start = std::chrono::steady_clock::now();
    gcl::all_reduce(comm, v, gcl::sum{}, alg);
    double mine = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    gcl::all_reduce(comm, mine, gcl::max{}, gcl::tree{});  // the slowest rank's time
    t.push_back(mine);
  }
  return bench::median(std::move(t));
}

// Point-to-point between ranks 0 and 1 (others idle): one-way time and bandwidth per size.
int pingpong(comm_t& comm) {
  if (comm.rank() == 0) std::printf("%12s %10s %10s\n", "bytes", "one-way_us", "GB/s");
  for (std::size_t bytes = 8; bytes <= (std::size_t{256} << 20); bytes *= 16) {
    std::vector<std::byte> buf(bytes);
    int reps = bytes >= (std::size_t{16} << 20) ? 5 : bytes >= (1 << 20) ? 30 : 1000;
    std::vector<double> t;
    for (int i = 0; i <= reps; ++i) {
      auto start = std::chrono::steady_clock::now();
      if (comm.rank() == 0) {
        comm.send(1, buf);
        comm.recv(1, buf);
      } else if (comm.rank() == 1) {
        comm.recv(0, buf);
        comm.send(0, buf);
      }
      if (i > 0)
        t.push_back(
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / 2);
    }
    double one_way = bench::median(std::move(t));
    if (comm.rank() == 0)
      std::printf("%12zu %10.1f %10.3f\n", bytes, one_way * 1e6,
                  static_cast<double>(bytes) / one_way / 1e9);
    std::fflush(stdout);
  }
  return 0;
}

int tree_vs_ring(comm_t& comm, int reps, std::size_t max_bytes) {
  auto model = gcl::calibrate(comm);
  int p = comm.size();
  if (comm.rank() == 0) {
    std::printf(
        "# P=%d, calibrated on this link: alpha=%.1f us, latency=%.1f us, beta=%.3f ns/B "
        "(%.1f MB/s), gamma=%.3f ns/B, parallelism=%.2f\n",
        p, model.alpha * 1e6, model.latency * 1e6, model.beta * 1e9, 1e-6 / model.beta,
        model.gamma * 1e9, model.parallelism);
    std::printf(
        "# model columns use parallelism 0: every rank has its own shaped link, as on "
        "separate machines (only the CPUs are shared here)\n");
    std::printf("%12s %12s %12s %12s %12s %8s %8s\n", "bytes", "tree_ms", "tree_model", "ring_ms",
                "ring_model", "faster", "model");
  }
  for (std::size_t bytes = 4; bytes <= max_bytes; bytes *= 8) {
    std::size_t n = bytes / sizeof(float);
    int r = bytes >= (std::size_t{1} << 20) ? std::max(3, reps / 4) : reps;
    double tree = time_all_reduce(comm, gcl::tree{}, n, r);
    double ring = time_all_reduce(comm, gcl::ring{}, n, r);
    model.parallelism = 0;
    double mt = model.predict(gcl::tree{}, p, bytes, sizeof(float));
    double mr = model.predict(gcl::ring{}, p, bytes, sizeof(float));
    if (comm.rank() == 0)
      std::printf("%12zu %12.3f %12.3f %12.3f %12.3f %8s %8s\n", bytes, tree * 1e3, mt * 1e3,
                  ring * 1e3, mr * 1e3, tree < ring ? "tree" : "ring", mt < mr ? "tree" : "ring");
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "One rank of a TCP job (tools/gcl-launch -p P -- tcp_link_bench MODE) that measures its "
      "links: pingpong (ranks 0 and 1: one-way time and GB/s per size) or tree_vs_ring (tree vs "
      "ring all_reduce per size, beside the cost model calibrated on this link)"};
  gcl_cli::setup(app, "tcp_link_bench");
  std::string mode;
  int reps = 20;
  std::size_t max_bytes = std::size_t{16} << 20;
  app.add_option("mode", mode, "pingpong or tree_vs_ring (required)")
      ->check(CLI::IsMember({"pingpong", "tree_vs_ring"}));
  // Positional too, as benchmark/tcp/shaped.sh passes them: tree_vs_ring REPS MAX_BYTES.
  app.add_option("reps", reps, "tree_vs_ring: timed calls per size (as -n)")
      ->check(CLI::Range(1, 1000000));
  app.add_option("max_bytes", max_bytes, "tree_vs_ring: largest size (as -e)")
      ->transform(CLI::AsSizeValue(false));
  app.add_option("-n,--iters", reps, "tree_vs_ring: timed calls per size")
      ->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  gcl_cli::add_size_option(app, "-e,--max-bytes", max_bytes, "tree_vs_ring: largest size");
  GCL_CLI_PARSE(app, argc, argv);
  // Checked here rather than by ->required(), which CLI11 would report before an unknown flag.
  if (mode.empty()) return gcl_cli::usage_error(app, "mode is required: pingpong or tree_vs_ring");
  int rank = -1;
  try {
    comm_t comm{gcl::tcp_transport(gcl::tcp_options::from_env())};
    rank = comm.rank();
    if (mode == "pingpong") return pingpong(comm);
    return tree_vs_ring(comm, reps, max_bytes);
  } catch (std::exception const& e) {
    std::fprintf(stderr, "rank %d: %s\n", rank, e.what());
    return 1;
  }
}
