// Must not compile: ring reorders operands, and this operator is not declared commutative.
// Built with -DGCL_CONTROL it must compile (the same call with gcl::tree), which shows the
// failure comes from the operator and nothing else.
#include <gcl/algorithm/ring.hpp>
#include <gcl/algorithm/tree.hpp>
#include <gcl/collective/all_reduce.hpp>
#include <gcl/transport/inproc.hpp>

#include <vector>

struct matmul_like {  // associative, not commutative, and says nothing about it
  int operator()(int a, int) const { return a; }
};

void f(gcl::communicator<gcl::inproc_transport>& comm) {
  std::vector<int> v(4);
#ifdef GCL_CONTROL
  gcl::all_reduce(comm, v, matmul_like{}, gcl::tree{});
#else
  gcl::all_reduce(comm, v, matmul_like{}, gcl::ring{});
#endif
}
