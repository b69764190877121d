#pragma once
// Whether the ranks on each machine of a job share cores, judged by rank 0 at the rendezvous
// from every rank's machine and CPUs (wire.hpp, hello_cpus). One rank cannot tell from its own
// CPU mask: a launcher that binds each rank to a CPU of its own (mpirun's default at two ranks,
// srun's --cpu-bind=cores) leaves it a mask of one CPU, as a container of one CPU running every
// rank does. Counted over the machine, ranks share cores when they outnumber the CPUs that
// their masks together allow (measured, P = 2 under mpirun -n 2 on 2 cores: judged from a
// rank's own mask, 4 B all_reduce took 9.8-11.1 us, as for shared cores; judged here, 6.1-7.6
// in nine rounds of ten, as with gcl-launch, which says it bound the rank; doc/tcp.md).

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <vector>

#include "wire.hpp"

namespace gcl::detail {

// `cpus` as hello_cpus' bitmap; all zero (not known) when it is empty or names a CPU outside
// the bitmap (0 to 1023).
inline std::array<std::uint8_t, 128> cpu_bitmap(std::span<int const> cpus) {
  std::array<std::uint8_t, 128> bits{};
  for (int c : cpus) {
    if (c < 0 || static_cast<std::size_t>(c) >= bits.size() * 8) return {};
    bits[static_cast<std::size_t>(c) / 8] |= static_cast<std::uint8_t>(1u << (c % 8));
  }
  return bits;
}

struct cores_judgement {
  bool shares_cores = false;      // the machine's ranks outnumber the CPUs they may run on
  bool over_two_per_cpu = false;  // ... and are more than twice them
  bool crowds_cores = false;      // ... and are at least twice them (two or more a CPU)
};

// For each rank, from every rank's machine and CPUs: whether the ranks of its machine share
// cores. Nothing for a rank whose machine is not known, or where a rank of its machine did not
// give its CPUs: the rank's own guess (tcp_options::shares_cores) stands for it.
inline std::vector<std::optional<cores_judgement>> judge_cores(std::span<hello_cpus const> ranks) {
  auto known = [](auto const& bytes) {
    return std::any_of(bytes.begin(), bytes.end(), [](std::uint8_t b) { return b != 0; });
  };
  std::map<std::array<std::uint8_t, 16>, std::vector<std::size_t>> machines;
  for (std::size_t r = 0; r < ranks.size(); ++r)
    if (known(ranks[r].machine)) machines[ranks[r].machine].push_back(r);
  std::vector<std::optional<cores_judgement>> out(ranks.size());
  for (auto const& [machine, members] : machines) {
    std::array<std::uint8_t, 128> together{};
    bool all_known = true;
    for (std::size_t r : members) {
      all_known = all_known && known(ranks[r].cpus);
      for (std::size_t b = 0; b < together.size(); ++b) together[b] |= ranks[r].cpus[b];
    }
    if (!all_known) continue;
    std::size_t cpus = 0;
    for (std::uint8_t b : together) cpus += static_cast<std::size_t>(std::popcount(b));
    cores_judgement const j{members.size() > cpus, members.size() > 2 * cpus,
                            members.size() >= 2 * cpus};
    for (std::size_t r : members) out[r] = j;
  }
  return out;
}

}  // namespace gcl::detail
