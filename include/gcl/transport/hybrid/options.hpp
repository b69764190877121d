#pragma once
/// \file
/// `hybrid_options`: what `tcp_options` says (who this rank is, where rank 0 listens, the
/// timeout, the job token), what `shm_options` adds, and which transport to use:
/// `GCL_TRANSPORT` = auto (shared memory to ranks of this host, TCP to the others), tcp or shm.

#include <chrono>
#include <cstddef>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "../../error.hpp"
#include "../shm/options.hpp"
#include "../tcp/options.hpp"

namespace gcl {

// In an inline namespace (still gcl::transport_mode): GCC's -Wshadow would otherwise take
// the enumerator `automatic` for a redeclaration of the algorithm gcl::automatic (an alias in
// the same namespace), although a scoped enumerator never hides it.
inline namespace hybrid_modes {
/// Which paths `hybrid_transport` takes (`GCL_TRANSPORT`).
enum class transport_mode {
  automatic,  ///< "auto": shared memory to ranks of this host, TCP to the others
  tcp,        ///< "tcp": TCP to every peer
  shm,        ///< "shm": every rank on this host, shared memory only (no address needed)
};
}  // namespace hybrid_modes

/// Options of `hybrid_transport`.
///
///     auto o = gcl::hybrid_options::from_env();  // GCL_RANK, ..., GCL_TRANSPORT
///     gcl::communicator comm{gcl::hybrid_transport(o)};
struct hybrid_options {
  /// Rank, size, rendezvous address and port, timeout, spin, token, interface: as for
  /// `tcp_transport` (its `host_key` and `connect_same_host` are the hybrid's to set).
  tcp_options tcp;
  transport_mode mode = transport_mode::automatic;
  /// Bytes of each shm ring (0: shm's default for the ranks of this host), see `shm_options`.
  std::size_t shm_ring_bytes = 0;
  /// Messages of at least this size between ranks of one host are copied once, straight from
  /// the sender's memory, where the kernel allows it (`shm_options::offer_bytes`).
  std::size_t shm_offer_bytes = 64 * 1024;
  /// The smallest message combined as it arrives between ranks of one host
  /// (`shm_options::combine_bytes`; 0: its default for the host's ranks).
  std::size_t shm_combine_bytes = 0;
  /// How long a wait on the shm side polls before it sleeps (`shm_options::spin`; `tcp.spin`
  /// is the TCP side's). Unset: shm's default, or in a job over several hosts the TCP side's
  /// where that is longer (a wait there may be for a TCP message).
  std::optional<std::chrono::microseconds> shm_spin;
  /// `shm_options::cross_memory_attach` of the shm side (GCL_SHM_CMA): unset, not used.
  std::optional<bool> shm_cross_memory_attach;
  /// `shm_options::rewind_bytes` of the shm side (GCL_SHM_REWIND_BYTES): unset, its default
  /// for the host's ranks.
  std::optional<std::size_t> shm_rewind_bytes;
  /// Bytes of each rank's pool on the shm side (`shm_options::pool_bytes`, GCL_SHM_POOL_BYTES;
  /// `hybrid_transport::allocate`): the host group's first rank's value is the group's.
  std::size_t shm_pool_bytes = 0;
  /// `shm_options::spread_ranks` of the shm side (GCL_SPREAD): unset, yes unless GCL_SPREAD=0.
  std::optional<bool> shm_spread_ranks;
  /// For tests whose ranks are threads of one process: rank r behaves as if it ran on host
  /// `test_hosts[r]` (its host key is made from that number instead of read from the system).
  /// Empty: the real host key (transport/hybrid/host_key.hpp).
  std::vector<int> test_hosts;

  /// `tcp_options::from_env()` (the same variables and messages), plus GCL_TRANSPORT (auto,
  /// tcp or shm; default auto) and shm's GCL_SHM_CMA, GCL_SHM_RING_BYTES, GCL_SHM_REWIND_BYTES
  /// and GCL_SPREAD. Under GCL_TRANSPORT=shm, as `shm_options::from_env()`: no address or port
  /// is needed, a token is. A malformed value throws `usage_error` naming the variable.
  static hybrid_options from_env() {
    return from_env([](char const* n) { return std::getenv(n); });
  }

  /// Same, reading variables through `get(name)` (returns `char const*` or null): for tests.
  template <class Getenv>
  static hybrid_options from_env(Getenv&& get) {
    hybrid_options o;
    if (char const* v = get("GCL_TRANSPORT"); v != nullptr && *v != '\0') {
      std::string_view s(v);
      if (s == "auto")
        o.mode = transport_mode::automatic;
      else if (s == "tcp")
        o.mode = transport_mode::tcp;
      else if (s == "shm")
        o.mode = transport_mode::shm;
      else
        throw usage_error("gcl: environment variable GCL_TRANSPORT='" + std::string(s) +
                          "' is not auto, tcp or shm");
    }
    shm_options s;
    if (o.mode == transport_mode::shm) {
      s = shm_options::from_env(get);  // requires the token, not the address
      o.tcp.rank = s.rank;
      o.tcp.size = s.size;
      o.tcp.token = s.token;
      o.tcp.token_source = s.token_source;
      o.tcp.timeout = s.timeout;
      o.tcp.spin = s.spin.value_or(o.tcp.spin);  // unused: no TCP side
    } else {
      o.tcp = tcp_options::from_env(get);
      // Only shm's own variables are taken from here; the token may be missing (see
      // hybrid_transport: the shm side then names itself after rank 0's address).
      s = shm_options::from_env([&](char const* n) -> char const* {
        if (std::string_view(n) == "GCL_TOKEN") return "unused";
        return get(n);
      });
    }
    o.shm_ring_bytes = s.ring_bytes;
    o.shm_spin = s.spin;
    o.shm_cross_memory_attach = s.cross_memory_attach;
    o.shm_rewind_bytes = s.rewind_bytes;
    o.shm_pool_bytes = s.pool_bytes;
    o.shm_spread_ranks = s.spread_ranks;
    return o;
  }
};

}  // namespace gcl
