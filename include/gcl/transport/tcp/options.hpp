#pragma once
/// \file
/// `tcp_options`: who this rank is, where rank 0 listens, how long to wait, which job it
/// belongs to and which interface to use. `tcp_options::from_env()` reads them from the
/// environment that `tools/gcl-launch`, `torchrun`-style launchers, `mpirun` and `srun` set.
/// Needs no Boost, so a program can parse its options without including Asio.

#include <algorithm>
#include <array>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "../../detail/spread_over_cpus.hpp"
#include "../../error.hpp"

namespace gcl {

/// Which IP version the transport uses. `any` follows what `master_addr` resolves to.
enum class address_family : std::uint8_t { any, v4, v6 };

/// Options of `tcp_transport`.
///
///     gcl::tcp_options o{.rank = 1, .size = 4, .master_addr = "10.0.0.1", .master_port = 29500};
///     gcl::communicator comm{gcl::tcp_transport(o)};
///     auto o2 = gcl::tcp_options::from_env();  // GCL_RANK, GCL_WORLD_SIZE, ...
struct tcp_options {
  int rank = 0;  ///< this process's rank, in [0, size)
  int size = 1;  ///< number of ranks in the job
  /// Where rank 0 listens for the rendezvous (a host name or an address). Rank 0 binds it.
  std::string master_addr = "127.0.0.1";
  /// Rank 0's rendezvous port. 0 lets `tcp_transport::group` pick a free port (tests).
  std::uint16_t master_port = 0;
  /// Bound on the rendezvous and on every blocking call; exceeded -> `errc::timeout`. 30
  /// minutes by default, as torch.distributed's: a rank may legitimately spend minutes in
  /// evaluation or a checkpoint while the others wait in the next collective. A dead peer is
  /// noticed at once whatever the timeout; only a hung or stopped one waits this long.
  std::chrono::milliseconds timeout{std::chrono::minutes{30}};
  /// How long a blocked `send` or `recv` polls before sleeping on a condition variable. While
  /// it polls, `recv` reads its peer's socket itself, so a message is taken the moment it
  /// arrives, with no thread woken; after that, this rank's I/O thread reads for it. 0 (the
  /// struct's default): read once, then sleep. `from_env` sets `default_spin` when each rank of
  /// the job on this host has a core of its own, `shared_core_spin` when they share cores and
  /// `over_two_per_cpu_spin` when they are more than twice the CPUs (see there), as Open MPI
  /// polls in every case. Where ranks share cores, polling yields the core between looks, so a
  /// rank that shares a core with the one that would send does not keep it from running; where
  /// each has a core of its own, it pauses (no system call) instead. With spin > 0 where ranks
  /// share cores, the rank's I/O thread runs at the lowest priority (nice 19), so that it never
  /// preempts a polling caller: measured on 2 cores (before the I/O thread rested while its
  /// caller polls), a 4-byte all_reduce at P = 2 took 8-19 us so, 35-58 us when the I/O thread
  /// preempted the poller, 60-100 us without polling. Where each rank has a core of its own the
  /// I/O thread keeps the process's priority (it reads for a caller that sleeps, and at nice 19
  /// any other busy program on the core would hold it off). Where rank 0 can judge from the ranks'
  /// CPUs whether they share cores (`cpus`), that judgement replaces `from_env`'s guess at the
  /// rendezvous (`spin_follows_cores`).
  std::chrono::microseconds spin{0};
  /// What `from_env` sets `spin` to when ranks have cores of their own: 2 ms, as inproc and
  /// shm poll there (detail::own_core_spin). A rank that enters a call ahead of its peer (a
  /// training step whose ranks finish their work at different times) then takes the message
  /// when it comes, instead of a wake-up of its I/O thread and then of itself. Measured on 2
  /// cores, P = 2 under gcl-launch, all_reduce, rank 1 working 1 ms before each call, the time
  /// a call adds beyond it (medians over 8 rounds of medians of 500 calls): 4 B 6.8 us against
  /// 18.5 with the 50 us of before (Open MPI TCP 9.9), 2 KiB 7.2 against 19.6 (12.9), 1 MiB
  /// 341 against 408 (340); back to back, level (4 B 7.5 both; Open MPI 7.6). doc/tcp.md,
  /// "Polling".
  static constexpr std::chrono::microseconds default_spin{2000};
  /// What `from_env` sets `spin` to when the ranks on this host outnumber its CPUs: longer, as
  /// the sender must first be scheduled. Measured on 2 cores, all_reduce back to back, medians
  /// against the same build with no polling: P = 4, 4 B to 16 KiB, 93-215 us against 215-392
  /// (Open MPI TCP 84-268 in the same minutes); P = 8, 357-712 against 711-1875 (Open MPI
  /// 322-937); from 256 KiB to 64 MiB within the spread of either. 50 us polled too briefly at
  /// P = 4 (115-260 us); 1000 us was no better than 200.
  static constexpr std::chrono::microseconds shared_core_spin{200};
  /// What `from_env` sets `spin` to when the ranks on this host are more than twice its CPUs:
  /// longer again. With three or more ranks to a core, the sender of what a rank waits for
  /// is often queued behind the others on its core for longer than `shared_core_spin`; a rank
  /// that then sleeps must be woken and wait for its core again, where one that polls
  /// (yielding the core between looks) keeps its place in the core's turns. Measured on 2
  /// cores, all_reduce back to back, medians of four to eight interleaved jobs, against 200 us
  /// in the same minutes: P = 8, 1 MiB 1665-2005 us against 1983-2820 (Open MPI TCP 1854 and
  /// 2539 in two of those runs), 4 MiB 0.8-0.85x, 256 KiB and below level; P = 6, 4 B to
  /// 16 KiB 0.75-0.9x, 1 MiB 0.86x, 4 MiB 0.75x; P = 16, 256 KiB and 1 MiB 0.8x. At P = 4 (two
  /// ranks to a core) 2 ms was level below 1 MiB but 0.99-1.26x at 1 MiB and 1.03-1.15x at 16
  /// MiB in four runs, so 200 us stays there (benchmark/analysis.md).
  static constexpr std::chrono::microseconds over_two_per_cpu_spin{2000};
  /// Job token: every connection must present the same one, else it is refused. Not a secret
  /// against an attacker on the wire (it is hashed, not encrypted): it keeps jobs apart. Empty
  /// here; `from_env` fills it from GCL_TOKEN or the launcher's job identity, and
  /// `tcp_transport::group` picks a random one when it is empty.
  std::string token;
  /// Where `token` came from, for messages: the variables `from_env` took it from
  /// ("GCL_TOKEN", "SLURM_JOB_ID+SLURM_STEP_ID", ...), "random" for a group's own. Empty when
  /// the program set `token` itself or there is none: see `token_origin()`.
  std::string token_source;
  /// Local address to bind this rank's listener and outgoing connections to ("" = the address
  /// of the interface that reaches rank 0; rank 0 binds `master_addr`).
  std::string bind_address;
  /// Network interface whose address to use, for example "eth1" (overrides `bind_address`).
  std::string interface_name;
  /// IPv4, IPv6, or whatever `master_addr` resolves to first.
  address_family family = address_family::any;
  /// This rank's index among the ranks of the job on its host, as the launcher says (`from_env`;
  /// -1: it says nothing). gcl does not use it; a program may, to pick a core or a device.
  int local_rank = -1;
  /// How many ranks of the job run on this host, as the launcher says (`from_env`; 0: it says
  /// nothing). `from_env` sets `spin` and `shares_cores` from it.
  int local_size = 0;
  /// Whether this rank shares a core with other ranks of the job: the ranks on its host
  /// outnumber the CPUs it may use. `from_env` sets it from `local_size`, unless the launcher
  /// bound the rank to a core of its own (GCL_BOUND_CPU). Sent at the rendezvous: every rank
  /// learns whether any rank of the job shares a core (`tcp_transport::ranks_share_cores`), and
  /// then the default all_reduce (`gcl::by_size`) takes the binomial tree for small messages
  /// (fewer messages: on shared cores each costs the sender's scheduling; see
  /// `tcp_transport::default_all_reduce`).
  bool shares_cores = false;
  /// Whether the ranks on this rank's host are more than twice the CPUs it may use (and so
  /// `shares_cores`). `from_env` sets it from `local_size`; sent at the rendezvous like
  /// `shares_cores` (`tcp_transport::ranks_over_two_per_cpu`), and then the default all_reduce
  /// keeps the binomial tree to larger sizes
  /// (`all_reduce_thresholds::tree_below_if_over_two_per_cpu`).
  bool over_two_per_cpu = false;
  /// Whether the ranks on this rank's host are at least twice the CPUs it may use (and so
  /// `shares_cores`): every core runs two or more. `from_env` sets it from `local_size`; sent
  /// at the rendezvous like `shares_cores` (`tcp_transport::ranks_crowd_cores`), and then the
  /// default all_reduce takes the parameter server for small messages
  /// (`all_reduce_thresholds::parameter_server_below_if_cores_crowded`).
  bool crowds_cores = false;
  /// The CPUs this rank may run on, sent to rank 0 at the rendezvous with its machine's boot id.
  /// Rank 0 counts the ranks of each machine against the CPUs their masks allow together, and
  /// where every rank of a machine gave its CPUs, that judgement replaces their
  /// `shares_cores`, `over_two_per_cpu` and `crowds_cores` (tcp/cores.hpp): a rank's own mask
  /// cannot tell a launcher that bound each rank to a CPU of its own (mpirun's default at two
  /// ranks, srun's `--cpu-bind=cores`) from one CPU that all of them share. `from_env` sets it from
  /// the affinity mask (`sched_getaffinity`); empty (the default, and a group's): not known.
  std::vector<int> cpus;
  /// Whether the rendezvous's judgement of this rank's cores (see `cpus`) sets `spin` as
  /// `from_env` would from it: `from_env` sets it unless GCL_SPIN_US says how long to poll.
  bool spin_follows_cores = false;
  /// This rank's host key, sent in its join hello; rank 0's address table carries every rank's
  /// (`tcp_impl::host_keys()`). Which ranks may share memory: `hybrid_transport` fills it
  /// (transport/hybrid/host_key.hpp); all zero for a plain `tcp_transport`.
  std::array<std::uint8_t, 32> host_key{};
  /// Whether ranks with equal, non-zero host keys get a data connection. `hybrid_transport`
  /// sets it false: such ranks talk through shared memory, and the join connection of one on
  /// rank 0's host is closed after the rendezvous.
  bool connect_same_host = true;
  /// The TCP congestion control of connections whose two ends are on one host (over the
  /// kernel's loopback); empty: the system's (net.ipv4.tcp_congestion_control). "reno" by
  /// default, which any process may choose: BBR, the default of many cloud images, paces
  /// loopback connections and took 1.6 to 2.3 times reno's for a 4 to 64 MiB all_reduce here
  /// (transport/tcp/congestion.hpp has the numbers). Connections to other hosts keep the
  /// system's. A name the kernel refuses makes the constructor throw `usage_error`, naming it.
  std::string same_host_congestion_control = "reno";

  /// The CPUs this process may run on (its affinity mask), at least 1.
  static unsigned usable_cpus() {
    return static_cast<unsigned>(std::max<std::size_t>(1, detail::allowed_cpus().size()));
  }

  /// The polling `from_env` chooses for a rank whose cores are shared or not, as judged.
  static constexpr std::chrono::microseconds spin_for_cores(bool shares_cores,
                                                            bool over_two_per_cpu) noexcept {
    return !shares_cores      ? default_spin
           : over_two_per_cpu ? over_two_per_cpu_spin
                              : shared_core_spin;
  }

  /// Options from the environment. First match wins:
  ///
  /// | field       | variables                                                                 |
  /// |-------------|---------------------------------------------------------------------------|
  /// | rank        | GCL_RANK, RANK, OMPI_COMM_WORLD_RANK, PMI_RANK, SLURM_PROCID              |
  /// | size        | GCL_WORLD_SIZE, WORLD_SIZE, OMPI_COMM_WORLD_SIZE, PMI_SIZE, SLURM_NTASKS  |
  /// | master_addr | GCL_MASTER_ADDR, MASTER_ADDR (required when size > 1)                     |
  /// | master_port | GCL_MASTER_PORT, MASTER_PORT (required when size > 1)                     |
  /// | token       | GCL_TOKEN, else the launcher's job identity (see below)                   |
  /// | timeout     | GCL_TIMEOUT (seconds, may be fractional; default 30 minutes)              |
  /// | spin        | GCL_SPIN_US (microseconds, 0 to 1000000; default: see `spin`)             |
  /// | bind        | GCL_BIND_ADDR, GCL_INTERFACE, GCL_ADDRESS_FAMILY (4, 6, v4, v6, any)      |
  /// | congestion  | GCL_SAME_HOST_CONGESTION (same_host_congestion_control; "system": "")     |
  /// | local_rank  | LOCAL_RANK (torchrun, gcl-launch), OMPI_COMM_WORLD_LOCAL_RANK (Open MPI),   |
  /// |             | PMIX_LOCAL_RANK (PMIx), SLURM_LOCALID (Slurm), MPI_LOCALRANKID (MPICH)    |
  /// | local_size  | LOCAL_WORLD_SIZE (torchrun, gcl-launch), OMPI_COMM_WORLD_LOCAL_SIZE,      |
  /// |             | PMIX_LOCAL_SIZE, Slurm's SLURM_STEP_TASKS_PER_NODE, SLURM_TASKS_PER_NODE  |
  /// |             | (the entry of SLURM_NODEID in "2(x3),1") or SLURM_NTASKS_PER_NODE,        |
  /// |             | MPI_LOCALNRANKS (MPICH)                                                   |
  /// | shares_cores| local_size above the usable CPUs, and no GCL_BOUND_CPU                    |
  /// | over_two_per_cpu (field) | local_size above twice the usable CPUs, no GCL_BOUND_CPU     |
  /// | crowds_cores | local_size at least twice the usable CPUs, and no GCL_BOUND_CPU          |
  /// | cpus        | the affinity mask (sched_getaffinity)                                     |
  ///
  /// Without GCL_TOKEN the token is derived from the first of these that is set, which every
  /// rank of one job shares and other jobs do not: TORCHELASTIC_RUN_ID (torchrun; not its
  /// default "none"), PMIX_NAMESPACE (Open MPI 5, PMIx launchers such as srun --mpi=pmix),
  /// OMPI_MCA_ess_base_jobid or OMPI_MCA_orte_ess_jobid (Open MPI 4 and older), SLURM_JOB_ID
  /// with SLURM_STEP_ID (srun). MPICH's Hydra exports no job identity, so under plain
  /// `mpiexec` the token stays empty, and so does it with none of these: then any local process
  /// can claim a rank during the rendezvous (set GCL_TOKEN, or use tools/gcl-launch, which sets
  /// a random one). `token_source` says which variables gave the token.
  ///
  /// A missing or malformed variable throws `gcl::usage_error` naming it.
  ///
  ///     auto comm = gcl::communicator(gcl::tcp_transport(gcl::tcp_options::from_env()));
  static tcp_options from_env() {
    return from_env([](char const* n) { return std::getenv(n); });
  }

  /// Same, reading variables through `get(name)` (returns `char const*` or null): for tests.
  template <class Getenv>
  static tcp_options from_env(Getenv&& get) {
    using list = std::initializer_list<char const*>;
    auto first = [&](list names) -> std::optional<std::pair<char const*, std::string>> {
      for (char const* n : names)
        if (char const* v = get(n); v != nullptr && *v != '\0') return std::pair{n, std::string(v)};
      return std::nullopt;
    };
    auto integer = [](std::pair<char const*, std::string> const& v, long long lo, long long hi) {
      long long x = 0;
      auto const& s = v.second;
      auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), x);
      if (ec != std::errc{} || end != s.data() + s.size() || x < lo || x > hi)
        throw usage_error("gcl: environment variable " + std::string(v.first) + "='" + s +
                          "' is not an integer in [" + std::to_string(lo) + ", " +
                          std::to_string(hi) + "]");
      return x;
    };
    auto names_of = [](list names) {
      std::string s;
      for (char const* n : names) s += (s.empty() ? "" : ", ") + std::string(n);
      return s;
    };

    tcp_options o;
    list rank_vars{"GCL_RANK", "RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"};
    list size_vars{"GCL_WORLD_SIZE", "WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE",
                   "SLURM_NTASKS"};
    auto size = first(size_vars);
    auto rank = first(rank_vars);
    if (!size)
      throw usage_error("gcl: the world size is not set: set one of " + names_of(size_vars) +
                        " (tools/gcl-launch sets GCL_WORLD_SIZE)");
    o.size = static_cast<int>(integer(*size, 1, 1 << 20));
    if (!rank)
      throw usage_error("gcl: the rank is not set: set one of " + names_of(rank_vars) +
                        " (tools/gcl-launch sets GCL_RANK)");
    o.rank = static_cast<int>(integer(*rank, 0, o.size - 1));

    list addr_vars{"GCL_MASTER_ADDR", "MASTER_ADDR"}, port_vars{"GCL_MASTER_PORT", "MASTER_PORT"};
    if (auto a = first(addr_vars))
      o.master_addr = a->second;
    else if (o.size > 1)
      throw usage_error("gcl: rank 0's address is not set: set " + names_of(addr_vars) +
                        " to a host name or address that every rank can reach");
    if (auto p = first(port_vars))
      o.master_port = static_cast<std::uint16_t>(integer(*p, 1, 65535));
    else if (o.size > 1)
      throw usage_error("gcl: rank 0's port is not set: set " + names_of(port_vars) +
                        " to a free TCP port on " + o.master_addr);

    if (auto t = first({"GCL_TOKEN"})) {
      o.token = t->second;
      o.token_source = t->first;
    } else {
      job_identity(get, o);
    }
    if (auto t = first({"GCL_TIMEOUT"})) {
      char* end = nullptr;
      double s = std::strtod(t->second.c_str(), &end);
      if (end == t->second.c_str() || *end != '\0' || !std::isfinite(s) || s <= 0 || s > 1e7)
        throw usage_error("gcl: environment variable GCL_TIMEOUT='" + t->second +
                          "' is not a positive number of seconds");
      o.timeout = std::chrono::milliseconds(static_cast<long long>(std::ceil(s * 1000)));
    }
    // The ranks on this host: each launcher's own variables (the first one set wins).
    if (auto l = first({"LOCAL_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE", "PMIX_LOCAL_SIZE"}))
      o.local_size = static_cast<int>(integer(*l, 1, 1 << 20));
    else if (auto t = first({"SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE"}))
      o.local_size = slurm_tasks_on_node(*t, first({"SLURM_NODEID"}), 1 << 20);
    else if (auto n = first({"SLURM_NTASKS_PER_NODE", "MPI_LOCALNRANKS"}))
      o.local_size = static_cast<int>(integer(*n, 1, 1 << 20));
    if (auto r = first({"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "PMIX_LOCAL_RANK",
                        "SLURM_LOCALID", "MPI_LOCALRANKID"}))
      o.local_rank =
          static_cast<int>(integer(*r, 0, o.local_size > 0 ? o.local_size - 1 : 1 << 20));
    // A core of its own: the launcher bound this rank to one (gcl-launch says which in
    // GCL_BOUND_CPU), or it says how many ranks share this host (local_size) and this process
    // may use at least as many CPUs. Known to share cores: the launcher says how many ranks
    // share the host, and they outnumber the CPUs. Neither (nothing says how many): no polling.
    o.cpus = detail::allowed_cpus();
    auto const usable = std::max<std::size_t>(1, o.cpus.size());  // as usable_cpus()
    bool const own_core = first({"GCL_BOUND_CPU"}).has_value() ||
                          (o.local_size > 0 && static_cast<std::size_t>(o.local_size) <= usable);
    o.shares_cores = !own_core && o.local_size > 0;
    o.over_two_per_cpu = o.shares_cores && static_cast<std::size_t>(o.local_size) > 2 * usable;
    o.crowds_cores = o.shares_cores && static_cast<std::size_t>(o.local_size) >= 2 * usable;
    auto const told_spin = first({"GCL_SPIN_US"});
    if (told_spin)
      o.spin = std::chrono::microseconds(integer(*told_spin, 0, 1000000));
    else if (own_core || o.shares_cores)
      o.spin = spin_for_cores(o.shares_cores, o.over_two_per_cpu);
    o.spin_follows_cores = !told_spin;
    if (auto c = first({"GCL_SAME_HOST_CONGESTION"}))
      o.same_host_congestion_control = c->second == "system" ? std::string{} : c->second;
    if (auto b = first({"GCL_BIND_ADDR"})) o.bind_address = b->second;
    if (auto i = first({"GCL_INTERFACE"})) o.interface_name = i->second;
    if (auto f = first({"GCL_ADDRESS_FAMILY"})) {
      auto const& v = f->second;
      if (v == "4" || v == "v4" || v == "ipv4")
        o.family = address_family::v4;
      else if (v == "6" || v == "v6" || v == "ipv6")
        o.family = address_family::v6;
      else if (v == "any")
        o.family = address_family::any;
      else
        throw usage_error("gcl: environment variable GCL_ADDRESS_FAMILY='" + v +
                          "' is not one of 4, 6, v4, v6, any");
    }
    return o;
  }

  /// Where the token came from, for messages: `token_source`, else "none" for an empty token,
  /// else "tcp_options::token" (set by the program).
  std::string token_origin() const {
    if (!token_source.empty()) return token_source;
    return token.empty() ? "none" : "tcp_options::token";
  }

 private:
  // Slurm's tasks per node, "2(x3),1" (nodes 0-2 run 2 tasks, node 3 one): the entry of this
  // node (SLURM_NODEID; without it, the only count the list holds, if it holds one).
  static int slurm_tasks_on_node(std::pair<char const*, std::string> const& v,
                                 std::optional<std::pair<char const*, std::string>> const& node,
                                 int most) {
    auto bad = [&] {
      return usage_error("gcl: environment variable " + std::string(v.first) + "='" + v.second +
                         "' is not a Slurm task count list such as 4 or 2(x3),1 whose counts "
                         "are in [1, " +
                         std::to_string(most) + "]");
    };
    long long want = -1;
    if (node) {
      auto const& s = node->second;
      auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), want);
      if (ec != std::errc{} || end != s.data() + s.size() || want < 0)
        throw usage_error("gcl: environment variable SLURM_NODEID='" + s +
                          "' is not a node number");
    }
    std::string_view rest = v.second;
    long long index = 0;
    int only = 0;
    while (!rest.empty()) {
      std::string_view item = rest.substr(0, rest.find(','));
      rest.remove_prefix(std::min(rest.size(), item.size() + 1));
      long long count = 0, repeat = 1;
      auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), count);
      if (ec != std::errc{} || count < 1 || count > most) throw bad();
      std::string_view tail(end, static_cast<std::size_t>(item.data() + item.size() - end));
      if (!tail.empty()) {
        if (tail.size() < 4 || tail.substr(0, 2) != "(x" || tail.back() != ')') throw bad();
        auto [e2, ec2] = std::from_chars(tail.data() + 2, tail.data() + tail.size() - 1, repeat);
        if (ec2 != std::errc{} || e2 != tail.data() + tail.size() - 1 || repeat < 1) throw bad();
      }
      if (want >= index && want < index + repeat) return static_cast<int>(count);
      index += repeat;
      only = (only == 0 || only == count) ? static_cast<int>(count) : -1;
    }
    if (only == 0) throw bad();
    return want < 0 && only > 0 ? only : 0;  // no SLURM_NODEID and several counts: unknown
  }

  // The launcher's identity of this job, as a token: the first launcher whose variables are
  // set. Innermost launchers come first (torchrun or mpirun inside a Slurm allocation: two of
  // them in one allocation share SLURM_JOB_ID, and possibly the step). The variables' names go
  // into the token too, so that equal numbers from two launchers do not match.
  template <class Getenv>
  static void job_identity(Getenv& get, tcp_options& o) {
    struct launcher {
      char const* id;        // required
      char const* detail;    // appended if set, or null
      char const* unusable;  // a value that does not identify a job, or null
    };
    // torchrun's --rdzv-id defaults to "none" outside --standalone: every such job has it.
    static constexpr launcher launchers[] = {
        {"TORCHELASTIC_RUN_ID", nullptr, "none"},
        {"PMIX_NAMESPACE", nullptr, nullptr},
        {"OMPI_MCA_ess_base_jobid", nullptr, nullptr},
        {"OMPI_MCA_orte_ess_jobid", nullptr, nullptr},
        {"SLURM_JOB_ID", "SLURM_STEP_ID", nullptr},
    };
    auto value = [&](char const* n) -> std::optional<std::string> {
      if (char const* v = get(n); v != nullptr && *v != '\0') return std::string(v);
      return std::nullopt;
    };
    for (auto const& l : launchers) {
      auto id = value(l.id);
      if (!id || (l.unusable != nullptr && *id == l.unusable)) continue;
      o.token = std::string("gcl-job:") + l.id + "=" + *id;
      o.token_source = l.id;
      if (l.detail != nullptr) {
        if (auto d = value(l.detail)) {
          o.token += std::string(",") + l.detail + "=" + *d;
          o.token_source += std::string("+") + l.detail;
        }
      }
      return;
    }
  }
};

}  // namespace gcl
