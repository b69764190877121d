// Must not compile: tree does not implement gatherv (direct does). With -DGCL_CONTROL it
// compiles.
#include <gcl/algorithm/direct.hpp>
#include <gcl/algorithm/tree.hpp>
#include <gcl/collective/gatherv.hpp>
#include <gcl/transport/inproc.hpp>

#include <cstddef>
#include <vector>

void f(gcl::communicator<gcl::inproc_transport>& comm) {
  std::vector<std::size_t> counts(static_cast<std::size_t>(comm.size()), 1);
  std::vector<int> in(1), out(counts.size());
#ifdef GCL_CONTROL
  gcl::gatherv(comm, in, out, counts, 0, gcl::direct{});
#else
  gcl::gatherv(comm, in, out, counts, 0, gcl::tree{});
#endif
}
