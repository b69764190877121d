// The tcp component: 3 ranks, each a thread with its own TCP connections over loopback, pass
// their ranks around a ring and then all-reduce them.
#include <gcl/transport/tcp.hpp>
#include <gcl/gcl.hpp>

#include <chrono>
#include <cstdio>
#include <exception>
#include <vector>

int main() {
  try {
    auto got = gcl::spawn<gcl::tcp_transport>(
        3,
        [](auto& comm) {
          int right = (comm.rank() + 1) % comm.size(),
              left = (comm.rank() + comm.size() - 1) % comm.size();
          int from_left = -1;
          comm.sendrecv(right, comm.rank(), left, from_left);
          int sum = comm.rank();
          gcl::all_reduce(comm, sum, gcl::sum{});
          return from_left * 10 + sum;
        },
        {.timeout = std::chrono::seconds{30}});
    bool ok = got == std::vector<int>{23, 3, 13};
    std::printf("gcl %d.%d.%d test_package_tcp: %s\n", GCL_VERSION_MAJOR, GCL_VERSION_MINOR,
                GCL_VERSION_PATCH, ok ? "OK" : "FAIL");
    return ok ? 0 : 1;
  } catch (std::exception const& e) {
    std::printf("test_package_tcp: FAIL: %s\n", e.what());
    return 1;
  }
}
