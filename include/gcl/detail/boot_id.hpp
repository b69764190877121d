#pragma once
// Which processes run on one booted kernel, and so on the same CPUs: those that read the same
// /proc/sys/kernel/random/boot_id (containers of one machine do; two machines, or two VMs, never).
// hybrid's host key starts with it; tcp's rendezvous groups ranks by it to count the ranks that
// share a machine's CPUs (transport/tcp/cores.hpp).

#include <array>
#include <cstdint>
#include <fstream>
#include <string>

namespace gcl::detail {

// The boot id's 16 bytes (its 32 hex digits, dashes skipped); all zero where it cannot be read.
inline std::array<std::uint8_t, 16> this_boot_id() {
  std::array<std::uint8_t, 16> id{};
  std::ifstream f("/proc/sys/kernel/random/boot_id");
  std::string text;
  std::getline(f, text);
  std::size_t at = 0;
  bool high = true;
  for (char c : text) {
    int v = c >= '0' && c <= '9'   ? c - '0'
            : c >= 'a' && c <= 'f' ? c - 'a' + 10
            : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                   : -1;
    if (v < 0 || at >= id.size()) continue;
    id[at] = static_cast<std::uint8_t>(high ? v << 4 : id[at] | v);
    if (!high) ++at;
    high = !high;
  }
  return id;
}

}  // namespace gcl::detail
