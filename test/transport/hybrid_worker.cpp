// One rank of a hybrid_transport job configured from the environment (GCL_RANK, GCL_WORLD_SIZE,
// GCL_MASTER_ADDR, GCL_MASTER_PORT, GCL_TOKEN, GCL_TRANSPORT, ...), for test/transport/
// hybrid_netns.sh:
//
//   hybrid_worker algorithms   prints "rank R: paths P" (one letter per peer: s = shared memory,
//                              t = TCP), then all_reduce with every algorithm and several sizes,
//                              checked exactly
//
// Any gcl error is printed on stderr as "rank R: what" and the exit code is 1.

#include <gcl/algorithm/automatic.hpp>
#include <gcl/algorithm/direct.hpp>
#include <gcl/algorithm/halving_doubling.hpp>
#include <gcl/algorithm/hierarchical.hpp>
#include <gcl/algorithm/parameter_server.hpp>
#include <gcl/algorithm/recursive_doubling.hpp>
#include <gcl/algorithm/ring.hpp>
#include <gcl/algorithm/tree.hpp>
#include <gcl/collective/all_reduce.hpp>
#include <gcl/transport/hybrid.hpp>

#include <cstdio>
#include <string>
#include <vector>

namespace {

using comm_t = gcl::communicator<gcl::hybrid_transport>;

float value(int r, std::size_t i) {
  return static_cast<float>((r + 1) * static_cast<int>(i % 97 + 1));
}

template <class Alg>
bool one(comm_t& comm, Alg const& alg, std::size_t n, char const* name) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = value(comm.rank(), i);
  gcl::all_reduce(comm, v, gcl::sum{}, alg);
  int const p = comm.size();
  for (std::size_t i = 0; i < n; ++i) {
    float want = static_cast<float>(p * (p + 1) / 2 * static_cast<int>(i % 97 + 1));
    if (v[i] != want) {
      std::fprintf(stderr, "rank %d: all_reduce %s n=%zu: element %zu is %g, want %g\n",
                   comm.rank(), name, n, i, static_cast<double>(v[i]), static_cast<double>(want));
      return false;
    }
  }
  return true;
}

int algorithms(comm_t& comm) {
  std::string paths;
  for (int r = 0; r < comm.size(); ++r)
    paths += comm.transport().path_to(r) == gcl::transport_path::shm ? 's' : 't';
  std::printf("rank %d: paths %s\n", comm.rank(), paths.c_str());
  bool ok = true;
  int const p = comm.size();
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t(p + 1), std::size_t{1000},
                        std::size_t{262147}}) {
    ok &= one(comm, gcl::tree{}, n, "tree");
    ok &= one(comm, gcl::ring{}, n, "ring");
    ok &= one(comm, gcl::direct{}, n, "direct");
    ok &= one(comm, gcl::parameter_server{}, n, "parameter_server");
    ok &= one(comm, gcl::recursive_doubling{}, n, "recursive_doubling");
    ok &= one(comm, gcl::halving_doubling{}, n, "halving_doubling");
    ok &= one(comm, gcl::hierarchical{}, n, "hierarchical");
    ok &= one(comm, gcl::automatic{}, n, "automatic");
  }
  if (ok) std::printf("rank %d: all_reduce with every algorithm on %d ranks: OK\n", comm.rank(), p);
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "";
  int rank = -1;
  try {
    comm_t comm{gcl::hybrid_transport(gcl::hybrid_options::from_env())};
    rank = comm.rank();
    if (mode == "algorithms") return algorithms(comm);
    std::fprintf(stderr, "usage: %s algorithms\n", argv[0]);
    return 2;
  } catch (std::exception const& e) {
    std::fprintf(stderr, "rank %d: %s\n", rank, e.what());
    return 1;
  }
}
