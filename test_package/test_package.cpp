// The smallest real use of the package: 3 ranks on threads pass their ranks around a ring.
#include <gcl/gcl.hpp>

#include <cstdio>

int main() {
  auto got = gcl::spawn<gcl::inproc_transport>(3, [](auto& comm) {
    int right = (comm.rank() + 1) % comm.size(),
        left = (comm.rank() + comm.size() - 1) % comm.size();
    int from_left = -1;
    comm.sendrecv(right, comm.rank(), left, from_left);
    return from_left;
  });
  bool ok = got == std::vector<int>{2, 0, 1};
  std::printf("gcl %d.%d.%d test_package: %s\n", GCL_VERSION_MAJOR, GCL_VERSION_MINOR,
              GCL_VERSION_PATCH, ok ? "OK" : "FAIL");
  return ok ? 0 : 1;
}
