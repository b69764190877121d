// One rank of a multi-process TCP job, configured from the environment (tools/gcl-launch,
// mpirun, srun, or by hand). Driven by test/transport/*.sh and benchmark/tcp/shaped.sh:
//
//   tcp_worker loop N [count]   N all_reduce (ring, sum) of `count` floats, each checked; writes
//                               $GCL_WORKER_DIR/<rank>.pid after the first (for kill tests)
//   tcp_worker algorithms       all_reduce with every algorithm and several sizes, checked exactly
//   tcp_worker pingpong         send/recv ping-pong between ranks 0 and 1: one-way us, GB/s
//   tcp_worker bench [reps] [max_bytes]  tree vs ring all_reduce time per size, beside the cost
//   model
//                               calibrated on this very link (rank 0 prints a table)
//
// Any gcl error is printed on stderr as "rank R: what" and the exit code is 1.

#include <gcl/algorithm/automatic.hpp>
#include <gcl/algorithm/direct.hpp>
#include <gcl/algorithm/halving_doubling.hpp>
#include <gcl/algorithm/parameter_server.hpp>
#include <gcl/algorithm/recursive_doubling.hpp>
#include <gcl/algorithm/ring.hpp>
#include <gcl/algorithm/tree.hpp>
#include <gcl/collective/all_reduce.hpp>
#include <gcl/collective/barrier.hpp>
#include <gcl/collective/broadcast.hpp>
#include <gcl/cost_model.hpp>
#include <gcl/transport/tcp.hpp>

#include <unistd.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

namespace {

using comm_t = gcl::communicator<gcl::tcp_transport>;

float value(int r, std::size_t i) {
  return static_cast<float>((r + 1) * static_cast<int>(i % 97 + 1));
}

bool check(comm_t& comm, std::vector<float> const& v, char const* what) {
  int p = comm.size();
  for (std::size_t i = 0; i < v.size(); ++i) {
    float want = static_cast<float>(p * (p + 1) / 2 * static_cast<int>(i % 97 + 1));
    if (v[i] != want) {
      std::fprintf(stderr, "rank %d: %s: element %zu is %g, want %g\n", comm.rank(), what, i,
                   static_cast<double>(v[i]), static_cast<double>(want));
      return false;
    }
  }
  return true;
}

template <class Alg>
bool one(comm_t& comm, Alg const& alg, std::size_t n, char const* name) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = value(comm.rank(), i);
  gcl::all_reduce(comm, v, gcl::sum{}, alg);
  std::string what = std::string("all_reduce ") + name + " n=" + std::to_string(n);
  return check(comm, v, what.c_str());
}

int loop(comm_t& comm, long iterations, std::size_t count) {
  for (long it = 0; it < iterations; ++it) {
    if (!one(comm, gcl::ring{}, count, "ring")) return 1;
    if (it == 0) {
      if (char const* dir = std::getenv("GCL_WORKER_DIR"))
        std::ofstream(std::string(dir) + "/" + std::to_string(comm.rank()) + ".pid") << getpid();
      std::printf("rank %d: started\n", comm.rank());
      std::fflush(stdout);
    }
  }
  std::printf("rank %d: %ld all_reduce done\n", comm.rank(), iterations);
  return 0;
}

// Ranks that disagree: `roots`, a broadcast whose root is the rank's parity (at 2 ranks each
// believes it is the root, and the broadcast is its last call); `collectives`, rank 0
// broadcasts while the others all-reduce.
int disagree(comm_t& comm, std::string const& how) {
  std::vector<int> v(10, comm.rank());
  if (how == "roots")
    gcl::broadcast(comm, v, comm.rank() % 2);
  else if (comm.rank() == 0)
    gcl::broadcast(comm, v, 0);
  else
    gcl::all_reduce(comm, v, gcl::sum{});
  std::printf("rank %d: returned\n", comm.rank());
  return 0;
}

int algorithms(comm_t& comm) {
  bool ok = true;
  int p = comm.size();
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t(p + 1), std::size_t{1000},
                        std::size_t{262147}}) {
    ok &= one(comm, gcl::tree{}, n, "tree");
    ok &= one(comm, gcl::ring{}, n, "ring");
    ok &= one(comm, gcl::direct{}, n, "direct");
    ok &= one(comm, gcl::parameter_server{}, n, "parameter_server");
    ok &= one(comm, gcl::recursive_doubling{}, n, "recursive_doubling");
    ok &= one(comm, gcl::halving_doubling{}, n, "halving_doubling");
    ok &= one(comm, gcl::automatic{}, n, "automatic");
  }
  if (ok) std::printf("rank %d: all_reduce with every algorithm on %d ranks: OK\n", comm.rank(), p);
  return ok ? 0 : 1;
}

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
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
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
    std::sort(t.begin(), t.end());
    double one_way = t[t.size() / 2];
    if (comm.rank() == 0)
      std::printf("%12zu %10.1f %10.3f\n", bytes, one_way * 1e6,
                  static_cast<double>(bytes) / one_way / 1e9);
    std::fflush(stdout);
  }
  return 0;
}

int bench(comm_t& comm, int reps, std::size_t max_bytes) {
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
  std::string mode = argc > 1 ? argv[1] : "";
  int rank = -1;
  try {
    comm_t comm(gcl::tcp_transport(gcl::tcp_options::from_env()));
    rank = comm.rank();
    if (mode == "loop")
      return loop(comm, argc > 2 ? std::atol(argv[2]) : 1000,
                  argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 1000);
    if (mode == "algorithms") return algorithms(comm);
    if (mode == "roots" || mode == "collectives") return disagree(comm, mode);
    if (mode == "bench")
      return bench(comm, argc > 2 ? std::atoi(argv[2]) : 20,
                   argc > 3 ? std::strtoull(argv[3], nullptr, 10) : std::size_t{16} << 20);
    if (mode == "pingpong") return pingpong(comm);
    std::fprintf(stderr,
                 "usage: %s loop N [count] | algorithms | roots | collectives | pingpong | "
                 "bench [reps] [max_bytes]\n",
                 argv[0]);
    return 2;
  } catch (std::exception const& e) {
    std::fprintf(stderr, "rank %d: %s\n", rank, e.what());
    return 1;
  }
}
