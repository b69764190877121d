// One rank of a multi-process TCP job, configured from the environment (tools/gcl-launch,
// mpirun, srun, or by hand). Driven by the tests test/transport/*.sh:
//
//   tcp_worker loop N [count]   N all_reduce (ring, sum) of `count` floats, each checked; writes
//                               $GCL_WORKER_DIR/<rank>.pid after the first (for kill tests)
//   tcp_worker algorithms       all_reduce with every algorithm and several sizes, checked exactly
//   tcp_worker roots|collectives  ranks that disagree about a call (for the mismatch tests)
//
// (Measuring links, ping-pong and tree vs ring, is benchmark/tcp/link_bench.cpp's.)
// Any gcl error is printed on stderr as "rank R: what" and the exit code is 1.

#include <gcl/algorithm/automatic.hpp>
#include <gcl/algorithm/direct.hpp>
#include <gcl/algorithm/halving_doubling.hpp>
#include <gcl/algorithm/parameter_server.hpp>
#include <gcl/algorithm/recursive_doubling.hpp>
#include <gcl/algorithm/ring.hpp>
#include <gcl/algorithm/tree.hpp>
#include <gcl/collective/all_reduce.hpp>
#include <gcl/collective/broadcast.hpp>
#include <gcl/transport/tcp.hpp>

#include <unistd.h>
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
  // What each connection runs (tcp_netns.sh checks that connections to other hosts keep the
  // system's congestion control).
  std::string cc;
  for (int peer = 0; peer < p; ++peer)
    if (peer != comm.rank())
      cc += " " + std::to_string(peer) + "=" + comm.transport().congestion_control(peer);
  std::printf("rank %d: congestion control:%s\n", comm.rank(), cc.c_str());
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "";
  int rank = -1;
  try {
    comm_t comm{gcl::tcp_transport(gcl::tcp_options::from_env())};
    rank = comm.rank();
    if (mode == "loop")
      return loop(comm, argc > 2 ? std::atol(argv[2]) : 1000,
                  argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 1000);
    if (mode == "algorithms") return algorithms(comm);
    if (mode == "roots" || mode == "collectives") return disagree(comm, mode);
    std::fprintf(stderr, "usage: %s loop N [count] | algorithms | roots | collectives\n", argv[0]);
    return 2;
  } catch (std::exception const& e) {
    std::fprintf(stderr, "rank %d: %s\n", rank, e.what());
    return 1;
  }
}
