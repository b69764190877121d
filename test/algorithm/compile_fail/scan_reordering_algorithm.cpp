// Must not compile: an algorithm that declares it reorders operands (needs_commutative) gets a
// scan with an operator that is not declared commutative. Built with -DGCL_CONTROL it must
// compile: the same call with gcl::recursive_doubling, which keeps rank order.
#include <gcl/algorithm/recursive_doubling.hpp>
#include <gcl/collective/scan.hpp>
#include <gcl/transport/inproc.hpp>

#include <span>
#include <string_view>
#include <vector>

struct matmul_like {  // associative, not commutative, and says nothing about it
  int operator()(int a, int) const { return a; }
};

struct reordering_scan {
  static constexpr std::string_view name = "reordering";
  static constexpr bool needs_commutative = true;
  template <class Comm, class T, class Op>
  void scan(Comm&, std::span<T>, Op const&) const {}
};

void f(gcl::communicator<gcl::inproc_transport>& comm) {
  std::vector<int> v(4);
#ifdef GCL_CONTROL
  gcl::scan(comm, v, matmul_like{}, gcl::recursive_doubling{});
#else
  gcl::scan(comm, v, matmul_like{}, reordering_scan{});
#endif
}
