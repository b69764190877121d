// Must not compile: ring's reduce_scatter reorders operands, and this operator is not declared
// commutative. Built with -DGCL_CONTROL it must compile: the same call with gcl::direct, whose
// reduce_scatter keeps rank order.
#include <gcl/algorithm/direct.hpp>
#include <gcl/algorithm/ring.hpp>
#include <gcl/collective/reduce_scatter.hpp>
#include <gcl/transport/inproc.hpp>

#include <vector>

struct matmul_like {  // associative, not commutative, and says nothing about it
  int operator()(int a, int) const { return a; }
};

void f(gcl::communicator<gcl::inproc_transport>& comm) {
  std::vector<int> in(8), out(gcl::reduce_scatter_size(8, comm.rank(), comm.size()));
#ifdef GCL_CONTROL
  gcl::reduce_scatter(comm, in, out, matmul_like{}, gcl::direct{});
#else
  gcl::reduce_scatter(comm, in, out, matmul_like{}, gcl::ring{});
#endif
}
