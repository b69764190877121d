#pragma once
/// \file
/// `shm_options`: who this rank is, which job it belongs to (the token names the job's
/// rendezvous socket), how long to wait, and the sizes of the shared rings. `from_env()` reads
/// the same environment as `tcp_options::from_env()` (GCL_RANK, GCL_WORLD_SIZE, GCL_TOKEN,
/// GCL_TIMEOUT, GCL_SPIN_US, or a launcher's equivalents, and GCL_SPREAD) and needs no address:
/// every rank is on this host.

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdlib>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "../../detail/env_flag.hpp"
#include "../../detail/host_cpus.hpp"
#include "../../detail/spread_over_cpus.hpp"
#include "../../error.hpp"
#include "../tcp/options.hpp"
#include "ring.hpp"

namespace gcl {

/// Options of `shm_transport`.
///
///     gcl::shm_options o{.rank = 1, .size = 4, .token = "my-job-42"};
///     gcl::communicator comm{gcl::shm_transport(o)};
///     auto o2 = gcl::shm_options::from_env();  // GCL_RANK, GCL_WORLD_SIZE, GCL_TOKEN, ...
struct shm_options {
  int rank = 0;  ///< this process's rank, in [0, size)
  int size = 1;  ///< number of ranks in the job, all on this host
  /// Names the job: its ranks meet on a Unix socket whose (abstract) name is derived from it,
  /// and present it when they join, so two jobs on one host never see each other and a process
  /// without it is refused. Required when size > 1 (there is no address to tell jobs apart).
  std::string token;
  /// Where `token` came from, for messages ("GCL_TOKEN", "SLURM_JOB_ID+SLURM_STEP_ID", ...).
  std::string token_source;
  /// Bound on the rendezvous and on every blocking call; exceeded -> `errc::timeout`, naming the
  /// ranks that hold the call up. 30 minutes by default, as tcp's. A killed rank is noticed
  /// within milliseconds whatever the timeout; only a stopped or hung one waits this long.
  std::chrono::milliseconds timeout{std::chrono::minutes{30}};
  /// How long a blocked call polls (yielding the core between looks, where each rank has a core
  /// only after its first 5 us: detail::polling_before_yielding) before it sleeps on its
  /// futex; also when ranks share cores (unlike tcp's). Unset (and GCL_SPIN_US unset): 2 ms
  /// where each rank has a core of its own, so that a rank that enters a call ahead of its
  /// peers (a training step's uneven work) is not woken from a sleep, 50 us where the ranks
  /// outnumber the cores (detail::default_spin says why).
  std::optional<std::chrono::microseconds> spin;
  /// Whether the ranks on this machine outnumber its CPUs, where something that sees more of
  /// the machine than this job says so: then a blocked call looks once, not 16 times, and
  /// yields the core from its first look rather than after 5 us of polling
  /// (detail::looks_before_yielding, polling_before_yielding). Unset (the default): this job's
  /// ranks against the CPUs. `hybrid_transport` sets it from its TCP rendezvous, which counts
  /// the ranks of the whole machine in every network namespace: two containers of two ranks on
  /// 2 cores are four ranks on 2 cores, though each shm side has two. Measured so
  /// (benchmark/two_hosts.sh's namespaces, 2026-12-06, default_vs_fixed, two jobs each): 4 B
  /// to 1 KiB all_reduce 17-19 us by the tree against 34-46, the default 23-25 against 48-57;
  /// from 64 KiB level.
  std::optional<bool> shares_cores;
  /// Bytes of each (sender, receiver) ring in the segment. 0: 4 MiB / size, clamped to
  /// [16 KiB, 1 MiB] (a rank's incoming rings take about 4 MiB, as Open MPI's shared memory
  /// takes per process, btl_vader_segment_size: 1 MiB each at P = 2 to 4, 512 KiB at P = 8).
  /// Larger rings stream large messages faster: all_reduce of 1-16 MiB at P = 2, 1 MiB rings
  /// took 0.6x the time of 256 KiB ones. Since ring's scatter-reduce forwards each partial
  /// chunk from ring to ring (`reduce_and_forward`), rings of four of a block's chunks rather
  /// than two were faster again. Measured on 2 cores (2026-11-28, all_reduce back to back,
  /// slowest rank's median, two rounds of five or six jobs each, alternated), the time of 4 MiB
  /// / P rings against 2 MiB / P at 1, 4 and 16 MiB: P = 4 0.91-0.92, 0.81-0.91 and 0.95-0.96;
  /// P = 8 0.73-0.93, 0.89-0.92 and 0.91-0.97; at 4 MiB P = 3 0.87 and P = 6 0.89; level from
  /// 4 to 512 KiB. 1 MiB at P = 8 and 2 MiB at P = 2 were slower again (the cache's loss).
  /// Rounded down to a multiple of 128 bytes (`ring_size()`), where messages start.
  std::size_t ring_bytes = 0;
  /// Where small messages (up to 1 KiB) go round only the first this many bytes of each lap of
  /// their ring: once a message ends past them, if the room left after skipping the rest of the
  /// lap would still be half of them, the sender goes on from the start of the next lap (its
  /// receiver skips the same bytes: shm_impl::rewinds_after). Else every message
  /// takes the next bytes of the ring, and where many rings share a core's caches its lines are
  /// cold (in memory) by the time small messages come round to them again: at P = 8 on 2 cores
  /// the rings take 28 MiB. 0: never. Unset (the default): 8 KiB where the ranks outnumber the
  /// cores, else never: where each rank has a core, the sender's writes to lines its receiver
  /// has just read wait for them to be invalidated there. Measured on 2 cores (2026-11-29,
  /// all_reduce back to back, the slowest rank's median, jobs alternated with it off): at P = 8
  /// 4 B and 1 KiB took 0.84x and 0.68x the time, at P = 4 1 KiB 0.80x, 4 B to 64 KiB otherwise
  /// level; at P = 2 nothing gained, and 1.1-1.8x the time with 1 KiB messages
  /// (benchmark/analysis.md). GCL_SHM_REWIND_BYTES sets it.
  std::optional<std::size_t> rewind_bytes;
  /// `rewind_bytes`, or its default for `size` ranks.
  std::size_t rewind_window() const noexcept {
    if (rewind_bytes.has_value()) return *rewind_bytes;
    return detail::ranks_outnumber_cpus(size) ? std::size_t{8} << 10 : 0;
  }
  /// Messages of at least this size go by cross-memory attach, when it is in use
  /// (`uses_cross_memory_attach`) and the kernel allows it: the receiver copies straight from
  /// the sender's buffer with process_vm_readv, one copy. Smaller ones, and all when it is not
  /// in use, stream through the ring: two copies, pipelined (the sender writes while the
  /// receiver reads, on two cores).
  std::size_t offer_bytes = 64 * 1024;
  /// The smallest message `sendrecv_reduce` combines as it arrives (drained from the ring, or
  /// read from the sender, a block at a time, each reduced while it is in the cache); smaller
  /// ones are received into scratch and reduced. 0: `combine_threshold`'s default.
  std::size_t combine_bytes = 0;
  /// Of the messages `sendrecv_reduce` combines, those read in place (from the pool, or from a
  /// thread's buffer) smaller than this are copied out first, which frees their sender, and
  /// combined after. 0: `combine_in_place_threshold`'s default.
  std::size_t combine_in_place_bytes = 0;
  /// Whether large messages go by cross-memory attach (true) or through the rings (false).
  /// Unset (the default): `uses_cross_memory_attach` decides from the ranks and the cores.
  /// GCL_SHM_CMA=1 or 0 sets it.
  std::optional<bool> cross_memory_attach;
  /// Bytes of each rank's pool in the segment (`shm_transport::allocate`), rounded up to a
  /// page; 0 (the default): no pool. Rank 0's value is the job's (it creates the segment).
  /// The segment grows by P times this, but a page takes memory only once its rank writes it.
  /// GCL_SHM_POOL_BYTES sets it (a number of bytes, or with a suffix K, M or G).
  std::size_t pool_bytes = 0;
  /// The smallest message from the pool that its receiver reads in place (one copy); smaller
  /// ones stream through the rings as other messages do. 0: `pool_offer_threshold`'s default.
  std::size_t pool_offer_bytes = 0;
  /// The number each rank has in the whole job, for messages (`global_ranks[r]` for rank r of
  /// this one), when this job is one host's part of a larger one (`hybrid_transport`). Empty:
  /// the ranks are named by their own numbers.
  std::vector<int> global_ranks;
  /// Whether a job whose ranks outnumber the CPUs they may use starts rank r on the (r mod n)-th
  /// of those n CPUs, free to move from there (a placement, not a binding: the kernel would
  /// otherwise leave 5 + 3 ranks on 2 cores in some jobs; detail/spread_over_cpus.hpp). Unset
  /// (the default): yes, unless GCL_SPREAD=0.
  std::optional<bool> spread_ranks;
  /// `spread_ranks`, or GCL_SPREAD's word (yes when unset).
  bool spreads_ranks() const {
    return spread_ranks.has_value() ? *spread_ranks : detail::spread_ranks_from_env();
  }

  /// Whether large messages go by cross-memory attach: `cross_memory_attach` if set, else
  /// never. Measured on 2 cores (all_reduce, 64 KiB - 64 MiB, back to back, against Open MPI's
  /// shared memory, which copies once by CMA): at P = 2 and 4 the rings were 1.1-3.4x Open MPI
  /// and CMA 0.7-1.5x (process_vm_readv pins and copies every page in the kernel, at about half
  /// memcpy's rate, while the rings' two copies run on both cores at once). At P = 8, where
  /// every core runs four ranks, CMA was the default until 2026-11-27 (0.9-1.8x Open MPI
  /// against the rings' 0.6-1.5x, measured before the rings' chunks fitted them whole and were
  /// reduced as they arrived); since, on another machine of 2 cores, three jobs interleaved,
  /// the rings took 0.4-0.7x CMA's time from 1 to 64 MiB at P = 8 (1.9-3.6x Open MPI's
  /// speed) and 0.55-0.75x at P = 16 (benchmark/analysis.md).
  bool uses_cross_memory_attach() const noexcept { return cross_memory_attach.value_or(false); }

  /// `combine_bytes`, or by default 64 KiB where large messages go through the rings and
  /// 4 MiB where they go by cross-memory attach (`uses_cross_memory_attach`). While the receiver
  /// combines, its sender waits (for room in the ring, or for its offer to be read), where a
  /// receive into scratch frees it after a copy; a message that fits the ring whole does not keep
  /// its sender waiting, and `shm_transport::default_all_reduce` makes the ring's chunks fit there.
  /// Measured on 2 cores (all_reduce, back to back, against receiving every message into scratch):
  /// at P = 2 through the rings 1.1-1.4x slower with 1 and 2 MiB messages (larger than a ring less
  /// its header) and 1.05-1.3x with 8 and 32 MiB ones, but 0.85x the time with 512 KiB ones, which
  /// fit; at P = 4 (rings) 1.1-1.3x faster with 4 and 16 MiB messages; at P = 8 (cross-memory
  /// attach) 1.1-1.3x slower with 512 KiB messages, 1.1-1.15x faster with 8 MiB. Since the
  /// rings' bytes are reduced where they lie (no staging copy), 64 KiB rather than 256: all_reduce
  /// at P = 8 took 0.8-0.9x the time from 1 to 16 MiB (the ring's 128 KiB chunks now combined),
  /// at P = 2 0.7-0.93x from 64 to 256 KiB (halving-doubling's messages); 4 KiB was level with
  /// 64 within the noise (benchmark/analysis.md).
  std::size_t combine_threshold() const noexcept {
    if (combine_bytes != 0) return combine_bytes;
    return uses_cross_memory_attach() ? std::size_t{4} << 20 : std::size_t{64} << 10;
  }

  /// `combine_in_place_bytes`, or by default inproc's rule for the same one-copy path
  /// (`inproc_options::combine_threshold`): 4 MiB where each rank has a core, 256 KiB where the
  /// ranks outnumber the cores (there a waiting sender yields its core to a rank that can use
  /// it). While the receiver combines, its sender waits; a copy is the fastest pass there is.
  /// Measured on 2 cores, P = 2, ring all_reduce of 1 MiB from the pool, back to back, ranks
  /// as threads: 52-56 us received into scratch first against 74-80 combined in place
  /// (inproc: 50-55 us; benchmark/analysis.md).
  std::size_t combine_in_place_threshold() const noexcept {
    if (combine_in_place_bytes != 0) return combine_in_place_bytes;
    return detail::ranks_outnumber_cpus(size) ? std::size_t{256} << 10 : std::size_t{4} << 20;
  }

  /// `pool_offer_bytes`, or by default `offer_bytes` where the ranks outnumber the cores, and
  /// where each rank has a core, above 256 KiB (or half a ring, if that is less). A message
  /// read in place leaves its lines in the receiver's cache too, and the sender's next write
  /// to them (the reduction's, a moment later) waits for each to be invalidated there: the
  /// rings, whose bytes are written again only after a ring's worth of messages, are faster
  /// for messages that fit them, as inproc's staging ring is for threads
  /// (`inproc_options::eager_threshold`). Measured on 2 cores, P = 2, pool buffers, ring
  /// all_reduce back to back, three rounds, means of 3,000 calls: 128 and 256 KiB took
  /// 12.5-14.2 and 20.1-25.2 us through the rings against 17.5-21.2 and 37.6-39.9 read in
  /// place, 512 KiB 36-59 against 39-64, 1 and 2 MiB level (benchmark/analysis.md).
  std::size_t pool_offer_threshold() const noexcept {
    if (pool_offer_bytes != 0) return pool_offer_bytes;
    if (detail::ranks_outnumber_cpus(size)) return offer_bytes;
    return std::max(offer_bytes, std::min(std::size_t{256} << 10, ring_size() / 2) + 1);
  }

  /// The ring size in use: `ring_bytes`, or its default for `size` ranks, rounded down to a
  /// multiple of 128 bytes (`detail::shm_line_pair`: messages start on such boundaries).
  std::size_t ring_size() const noexcept {
    std::size_t r = ring_bytes;
    if (r == 0) {
      r = (std::size_t{4} << 20) / static_cast<std::size_t>(size < 1 ? 1 : size);
      if (r < (std::size_t{16} << 10)) r = std::size_t{16} << 10;
      if (r > (std::size_t{1} << 20)) r = std::size_t{1} << 20;
    }
    return r / detail::shm_line_pair * detail::shm_line_pair;
  }

  /// Options from the environment, as `tcp_options::from_env` reads them (same variables, same
  /// messages for a missing or malformed one), without the address and port, plus GCL_SHM_CMA
  /// (0 or 1), GCL_SPREAD (0 or 1), GCL_SHM_RING_BYTES and GCL_SHM_REWIND_BYTES. A job of
  /// size > 1 without a token throws `usage_error`.
  static shm_options from_env() {
    return from_env([](char const* n) { return std::getenv(n); });
  }

  /// Same, reading variables through `get(name)` (returns `char const*` or null): for tests.
  template <class Getenv>
  static shm_options from_env(Getenv&& get) {
    // tcp_options' parser requires rank 0's address and port for a job of several ranks; they
    // mean nothing here, so it is handed placeholders when they are unset (and never used).
    auto get_shared = [&](char const* n) -> char const* {
      char const* v = get(n);
      if (v != nullptr && *v != '\0') return v;
      std::string_view name(n);
      if (name == "GCL_MASTER_ADDR") return "127.0.0.1";
      if (name == "GCL_MASTER_PORT") return "1";
      return v;
    };
    auto t = tcp_options::from_env(get_shared);
    shm_options o;
    o.rank = t.rank;
    o.size = t.size;
    o.token = t.token;
    o.token_source = t.token_source;
    o.timeout = t.timeout;
    // tcp polls only when each rank has a core (its I/O thread needs one too); shm has no such
    // thread, and a rank that yields between looks lets a rank sharing its core run, as Open
    // MPI's shared memory does when oversubscribed: measured at 4 and 8 ranks on 2 cores, a
    // 4 B all_reduce takes 3-5x less time polling 50 us than sleeping at once. GCL_SPIN_US decides
    // when set.
    if (char const* v = get("GCL_SPIN_US"); v != nullptr && *v != '\0') o.spin = t.spin;
    if (char const* v = get("GCL_SHM_CMA"); v != nullptr && *v != '\0')
      o.cross_memory_attach = detail::env_flag("GCL_SHM_CMA", v);
    if (char const* v = get("GCL_SPREAD"); v != nullptr && *v != '\0')
      o.spread_ranks = detail::spread_ranks_from(v);
    if (char const* v = get("GCL_SHM_RING_BYTES"); v != nullptr && *v != '\0')
      o.ring_bytes =
          parse_bytes("GCL_SHM_RING_BYTES", v, std::size_t{4} << 10, std::size_t{1} << 30);
    if (char const* v = get("GCL_SHM_REWIND_BYTES"); v != nullptr && *v != '\0')
      o.rewind_bytes = parse_bytes("GCL_SHM_REWIND_BYTES", v, 0, std::size_t{1} << 30);
    if (char const* v = get("GCL_SHM_POOL_BYTES"); v != nullptr && *v != '\0')
      o.pool_bytes = parse_pool_bytes(v);
    if (o.size > 1 && o.token.empty())
      throw usage_error(
          "gcl: shm_transport needs a job token to find the job's other ranks on this host: set "
          "GCL_TOKEN to a value that its ranks share and other jobs do not (tools/gcl-launch "
          "sets a random one)");
    return o;
  }

  /// GCL_SHM_POOL_BYTES's value: bytes, or K, M or G of them (powers of 1024), at most 2^40.
  static std::size_t parse_pool_bytes(char const* v) {
    return parse_bytes("GCL_SHM_POOL_BYTES", v, 0, std::size_t{1} << 40);
  }

  /// A byte count from the environment variable `name`: digits, optionally followed by K, M or G
  /// (powers of 1024, either case), in [lo, hi]; anything else throws `usage_error` naming the
  /// variable, its value and the range.
  static std::size_t parse_bytes(char const* name, char const* v, std::size_t lo, std::size_t hi) {
    char* end = nullptr;
    errno = 0;
    unsigned long long n = std::strtoull(v, &end, 10);
    unsigned shift = 0;
    if (end != v && *end != '\0' && end[1] == '\0') {
      switch (*end) {
        case 'K':
        case 'k':
          shift = 10;
          ++end;
          break;
        case 'M':
        case 'm':
          shift = 20;
          ++end;
          break;
        case 'G':
        case 'g':
          shift = 30;
          ++end;
          break;
        default:
          break;
      }
    }
    bool const ok = end != v && *end == '\0' && *v != '-' && errno == 0 && n <= (hi >> shift) &&
                    (n << shift) >= lo;
    if (!ok)
      throw usage_error("gcl: environment variable " + std::string(name) + "='" + std::string(v) +
                        "' is not a number of bytes (with K, M or G: powers of 1024) in [" +
                        bytes_text(lo) + ", " + bytes_text(hi) + "]");
    return static_cast<std::size_t>(n << shift);
  }

  /// 4096 as "4K", 2^40 as "1024G": a range bound for the messages above.
  static std::string bytes_text(std::size_t n) {
    for (auto [shift, suffix] : {std::pair{30u, "G"}, std::pair{20u, "M"}, std::pair{10u, "K"}})
      if (n != 0 && n % (std::size_t{1} << shift) == 0) return std::to_string(n >> shift) + suffix;
    return std::to_string(n);
  }

  /// Where the token came from, for messages.
  std::string token_origin() const {
    if (!token_source.empty()) return token_source;
    return token.empty() ? "none" : "shm_options::token";
  }
};

}  // namespace gcl
