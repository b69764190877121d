// Must not compile: ring does not implement exscan (recursive_doubling does). With
// -DGCL_CONTROL it compiles.
#include <gcl/algorithm/recursive_doubling.hpp>
#include <gcl/algorithm/ring.hpp>
#include <gcl/collective/exscan.hpp>
#include <gcl/transport/inproc.hpp>

#include <vector>

void f(gcl::communicator<gcl::inproc_transport>& comm) {
  std::vector<int> v(4);
#ifdef GCL_CONTROL
  gcl::exscan(comm, v, gcl::sum{}, gcl::recursive_doubling{});
#else
  gcl::exscan(comm, v, gcl::sum{}, gcl::ring{});
#endif
}
