#pragma once
// Which ranks of a job may share memory: their host keys are equal. Decided by what the kernel
// sees, not by host names (two containers of one machine share memory; two VMs may share a
// name): the boot id (one booted kernel), the network namespace (whose abstract Unix sockets
// the shm rendezvous uses) and the uid (the shm rendezvous refuses another user).

#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cstdint>
#include <cstring>

#include "../../detail/boot_id.hpp"

namespace gcl::detail {

// 16 bytes of /proc/sys/kernel/random/boot_id, 4 of the device and 8 of the inode of
// /proc/self/ns/net, 4 of the uid. Never all zero (the uid part of root is, the rest is not).
inline std::array<std::uint8_t, 32> this_host_key() {
  std::array<std::uint8_t, 32> k{};
  auto const boot = this_boot_id();
  std::memcpy(k.data(), boot.data(), boot.size());
  struct stat st {};
  if (::stat("/proc/self/ns/net", &st) == 0) {
    auto dev = static_cast<std::uint32_t>(st.st_dev);
    auto ino = static_cast<std::uint64_t>(st.st_ino);
    std::memcpy(k.data() + 16, &dev, 4);
    std::memcpy(k.data() + 20, &ino, 8);
  }
  auto uid = static_cast<std::uint32_t>(::getuid());
  std::memcpy(k.data() + 28, &uid, 4);
  k[15] |= 1;  // never all zero, which means "no key" on the wire
  return k;
}

// A made-up key for pretend host `host` (hybrid_options::test_hosts): tests whose ranks are
// threads of one process, split into hosts.
inline std::array<std::uint8_t, 32> test_host_key(int host) {
  std::array<std::uint8_t, 32> k{};
  std::memcpy(k.data(), "gcl-test-host", 13);
  auto h = static_cast<std::uint32_t>(host);
  std::memcpy(k.data() + 16, &h, 4);
  return k;
}

}  // namespace gcl::detail
