// One rank of a shm job, configured from the environment as a user's program is
// (shm_options::from_env: tools/gcl-launch, torchrun, mpirun, srun, or by hand). Driven by
// test/transport/shm_launch.sh:
//
//   shm_worker collectives   every collective with every algorithm (test/support/
//                            every_collective.hpp), compared bit for bit with what the same calls
//                            give over inproc, computed in this process for the job's size
//   shm_worker loop N [count]  N all_reduce (ring, sum) of `count` floats, each checked; writes
//                            $GCL_WORKER_DIR/<rank>.pid after the first (for kill tests)
//
// Any gcl error is printed on stderr as "rank R: what" and the exit code is 1.

#include <gcl/spawn.hpp>
#include <gcl/transport/inproc.hpp>
#include <gcl/transport/shm.hpp>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "../support/every_collective.hpp"

namespace {

using comm_t = gcl::communicator<gcl::shm_transport>;

// A size past offer_bytes (lowered to 16 KiB, as test/transport/shm_collectives.cpp does, so
// that the offered path is taken without generating megabytes) and past a 16 KiB ring, which
// shm_launch.sh sets in its streamed run (GCL_SHM_RING_BYTES).
constexpr std::size_t large = 6000;

int collectives(comm_t& comm) {
  int const p = comm.size(), me = comm.rank();
  auto got = gcl_test::run_all(comm, large);
  // inproc's answer for the whole job, computed here: every rank compares its own records.
  auto want = gcl::spawn<gcl::inproc_transport>(
      p, [](auto& c) { return gcl_test::run_all(c, large); })[static_cast<std::size_t>(me)];
  if (got.size() != want.size() || got.size() < 100) {
    std::fprintf(stderr, "rank %d: %zu results, inproc gave %zu\n", me, got.size(), want.size());
    return 1;
  }
  for (std::size_t k = 0; k < got.size(); ++k) {
    auto const& [name, g] = got[k];
    auto const& w = want[k].second;
    if (name != want[k].first || g.size() != w.size() ||
        (!g.empty() && std::memcmp(g.data(), w.data(), g.size() * sizeof(float)) != 0)) {
      std::fprintf(stderr, "rank %d: %s differs from inproc's %s\n", me, name.c_str(),
                   want[k].first.c_str());
      return 1;
    }
  }
  bool const once = p > 1 && comm.transport().copies_once_from((me + 1) % p);
  std::printf(
      "rank %d: every collective and algorithm on %d ranks over shm: bit-identical to "
      "inproc (%zu results; large messages %s)\n",
      me, p, got.size(), once ? "copied once" : "streamed");
  return 0;
}

int loop(comm_t& comm, long iterations, std::size_t count) {
  int const p = comm.size();
  for (long it = 0; it < iterations; ++it) {
    std::vector<float> v(count, 1.0f);
    gcl::all_reduce(comm, v, gcl::sum{}, gcl::ring{});
    if (v[0] != static_cast<float>(p) || v[count - 1] != static_cast<float>(p)) {
      std::fprintf(stderr, "rank %d: wrong sum %g\n", comm.rank(), static_cast<double>(v[0]));
      return 1;
    }
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

}  // namespace

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "";
  int rank = -1;
  try {
    auto o = gcl::shm_options::from_env();
    o.offer_bytes = 16 * 1024;
    comm_t comm{gcl::shm_transport(o)};
    rank = comm.rank();
    if (mode == "collectives") return collectives(comm);
    if (mode == "loop")
      return loop(comm, argc > 2 ? std::atol(argv[2]) : 1000,
                  std::max<std::size_t>(1, argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 1000));
    std::fprintf(stderr, "usage: %s collectives | loop N [count]\n", argv[0]);
    return 2;
  } catch (std::exception const& e) {
    std::fprintf(stderr, "rank %d: %s\n", rank, e.what());
    return 1;
  }
}
