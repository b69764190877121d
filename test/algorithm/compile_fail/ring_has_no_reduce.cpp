// Must not compile: ring does not implement reduce (tree does). With -DGCL_CONTROL it compiles.
#include <gcl/algorithm/ring.hpp>
#include <gcl/algorithm/tree.hpp>
#include <gcl/collective/reduce.hpp>
#include <gcl/transport/inproc.hpp>

#include <vector>

void f(gcl::communicator<gcl::inproc_transport>& comm) {
  std::vector<int> v(4);
#ifdef GCL_CONTROL
  gcl::reduce(comm, v, 0, gcl::sum{}, gcl::tree{});
#else
  gcl::reduce(comm, v, 0, gcl::sum{}, gcl::ring{});
#endif
}
