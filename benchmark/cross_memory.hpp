#pragma once
/// \file
/// Cross-memory attach throughput: one process copying another's buffer into its own with
/// `process_vm_readv`, the one-copy path that shm_transport (and Open MPI's shared memory)
/// can take for large messages. Beside memcpy's rate it says what one copy by the kernel
/// costs against two by the processes: the kernel walks and pins the source's pages as it
/// copies, so on some machines (this 2-core VM among them) it copies at half memcpy's rate,
/// and the rings' two copies, pipelined on two cores, are faster. Nothing here knows gcl.

#include <sys/types.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "common.hpp"

namespace bench::cross_memory {

/// Median GB/s of `reps` copies of a `bytes` buffer of a child process into this one's, read
/// `piece` bytes per call (as shm_transport reads an offer it reduces); nullopt where the
/// kernel refuses (no CMA, or Yama's ptrace scope forbids it).
inline std::optional<double> throughput(std::size_t bytes, std::size_t piece, int reps) {
  int to_child[2], from_child[2];
  if (::pipe(to_child) != 0 || ::pipe(from_child) != 0)
    throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  pid_t const child = ::fork();
  if (child < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  if (child == 0) {
    // Owns the source buffer, touched, until the parent closes its pipe (its own copy of the
    // pipe's write end closed first, or the read would never end).
    ::close(to_child[1]);
    ::close(from_child[0]);
    std::vector<char> source(bytes, 1);
    char* address = source.data();
    (void)!::write(from_child[1], &address, sizeof address);
    char end;
    (void)!::read(to_child[0], &end, 1);
    ::_exit(0);
  }
  ::close(to_child[0]);
  ::close(from_child[1]);
  char* remote = nullptr;
  bool const told = ::read(from_child[0], &remote, sizeof remote) == sizeof remote;
  std::vector<char> into(bytes, 0);
  std::vector<double> rates;
  bool refused = !told;
  for (int rep = 0; rep < reps + 1 && !refused; ++rep) {
    auto t0 = clock::now();
    for (std::size_t done = 0; done < bytes && !refused;) {
      std::size_t const n = std::min(piece, bytes - done);
      iovec local{into.data() + done, n}, source{remote + done, n};
      auto got = ::process_vm_readv(child, &local, 1, &source, 1, 0);
      if (got <= 0) refused = true;
      done += got > 0 ? static_cast<std::size_t>(got) : 0;
    }
    if (rep > 0) rates.push_back(static_cast<double>(bytes) / seconds_since(t0) / 1e9);
  }
  ::close(to_child[1]);  // the child's read returns: it exits
  ::close(from_child[0]);
  ::waitpid(child, nullptr, 0);
  if (refused) return std::nullopt;
  return median(rates);
}

}  // namespace bench::cross_memory
