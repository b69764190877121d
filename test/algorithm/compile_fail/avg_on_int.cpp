// Must not compile: avg is for floating types (an integer mean would be rounded), and the call
// must say so at gcl's check of the operator. With -DGCL_CONTROL (double) it compiles.
#include <gcl/collective/all_reduce.hpp>
#include <gcl/transport/inproc.hpp>

#include <vector>

void f(gcl::communicator<gcl::inproc_transport>& comm) {
#ifdef GCL_CONTROL
  std::vector<double> v(4);
#else
  std::vector<int> v(4);
#endif
  gcl::all_reduce(comm, v, gcl::avg{});
}
