// Must not compile: a transport without fork cannot run non-blocking collectives (their
// progress thread needs a lane of its own). With -DGCL_CONTROL the transport has one.
#include <gcl/collective/nonblocking.hpp>
#include <gcl/transport/inproc.hpp>

#include <vector>

struct no_fork {
  gcl::inproc_transport inner;
  int rank() const { return inner.rank(); }
  int size() const { return inner.size(); }
  void send(int peer, gcl::tag tg, std::span<std::byte const> out) { inner.send(peer, tg, out); }
  void recv(int peer, gcl::tag tg, std::span<std::byte> in) { inner.recv(peer, tg, in); }
#ifdef GCL_CONTROL
  no_fork fork(gcl::fork_bootstrap& b) {
    return {inner.fork(b)};
  }
#endif
};

void f(gcl::communicator<no_fork>& comm) {
  std::vector<int> v(4);
  gcl::iall_reduce(comm, v, gcl::sum{}).wait();
}
