// Must not compile: bit_and has no meaning for double, and the call must say so at the call
// (gcl's check of the operator), not deep inside the operator. With -DGCL_CONTROL (int) it
// compiles.
#include <gcl/algorithm/tree.hpp>
#include <gcl/collective/all_reduce.hpp>
#include <gcl/transport/inproc.hpp>

#include <vector>

void f(gcl::communicator<gcl::inproc_transport>& comm) {
#ifdef GCL_CONTROL
  std::vector<int> v(4);
#else
  std::vector<double> v(4);
#endif
  gcl::all_reduce(comm, v, gcl::bit_and{}, gcl::tree{});
}
