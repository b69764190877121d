#pragma once
// Whether the ranks on one host outnumber its CPUs: the question behind the transports'
// defaults that depend on ranks sharing cores (shm's cross-memory attach, the sizes from which
// inproc and shm combine a message as it arrives).

#include <thread>

namespace gcl::detail {

// True when `ranks` are more than `per_cpu` times the CPUs std::thread::hardware_concurrency
// reports (looked up once); false when it cannot tell.
inline bool ranks_outnumber_cpus(int ranks, unsigned per_cpu = 1) noexcept {
  static unsigned const cpus = std::thread::hardware_concurrency();
  return cpus != 0 && ranks > 0 && static_cast<unsigned>(ranks) > per_cpu * cpus;
}

}  // namespace gcl::detail
