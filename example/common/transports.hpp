#pragma once
/// \file
/// The one rule by which gcl's programs (examples, benchmarks, trainer) choose a transport:
/// `-t/--transport auto|inproc|shm|tcp`, checked against how the process was started, and
/// `run_ranks`, which runs a function on every rank of the chosen transport that lives in this
/// process.
///
/// | --transport | started alone (no launcher)           | started by a launcher of P ranks      |
/// |-------------|---------------------------------------|---------------------------------------|
/// | auto        | P threads over shared memory          | this process is one rank: shared      |
/// |             |                                       | memory to ranks of its host, TCP to   |
/// |             |                                       | the others (hybrid_transport; default)|
/// | inproc      | P threads, through memory (default)   | refused: P separate worlds            |
/// | shm         | P threads over one shared segment     | one rank; all P on this host          |
/// | tcp         | P threads over loopback sockets       | one rank; TCP to every peer           |
///
/// A launcher is gcl-launch, torchrun, mpirun or srun: rank and world-size variables are set
/// (`launcher_world()`). auto and tcp exist when the program is linked to gcl::tcp (Boost.Asio),
/// which its CMake target says by defining GCL_PROGRAM_TCP; without it the default under a
/// launcher is shm. See doc/cli.md.
///
/// Not part of the library: for gcl's programs only.

#include <gcl/spawn.hpp>
#include <gcl/transport/inproc.hpp>
#include <gcl/transport/shm.hpp>
#if defined(GCL_PROGRAM_TCP)
#include <gcl/transport/hybrid.hpp>
#include <gcl/transport/tcp.hpp>
#endif

#include <chrono>
#include <cstdlib>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "cli.hpp"

namespace gcl_cli {

/// Whether this program can use TCP.
inline constexpr bool has_tcp =
#if defined(GCL_PROGRAM_TCP)
    true;
#else
    false;
#endif

/// Adds `-t/--transport` to `app`, storing the name in `name` ("" when not given).
inline CLI::Option* add_transport_option(CLI::App& app, std::string& name) {
  return app
      .add_option("-t,--transport", name,
                  "auto (processes: shared memory within a host, TCP between hosts), inproc "
                  "(threads of this process), shm (processes of one host, shared memory) or tcp "
                  "(processes, TCP to every peer); started alone, auto, shm and tcp run the "
                  "ranks as threads over that transport. Default: auto when started by a "
                  "launcher (gcl-launch, torchrun, mpirun, srun), else inproc")
      ->check(CLI::IsMember({"auto", "inproc", "shm", "tcp"}));
}

/// Sets the default transport in `name` and refuses what cannot work; returns the error line's
/// text, or "" to go on. `world_size_given`: -p was on the command line (under a launcher it
/// must then match the launcher's size). `what`: what each process would do alone ("run",
/// "train"), for the message.
inline std::string resolve_transport(std::string& name, std::optional<launcher_job> const& job,
                                     int world_size, bool world_size_given,
                                     std::string const& what = "run") {
  bool const launched = job && job->size > 1;
  if (name.empty()) name = launched ? (has_tcp ? "auto" : "shm") : "inproc";
  if (launched && name == "inproc")
    return "--transport inproc: started as one of " + std::to_string(job->size) +
           " processes by a launcher (" + job->variable + "=" + std::to_string(job->size) +
           "), each would " + what +
           " a world of its own; use --transport auto (the default under a launcher), shm or "
           "tcp, or run without the launcher";
  if ((name == "tcp" || name == "auto") && !has_tcp)
    return "--transport " + name +
           ": this build has no TCP transport (it needs Boost.Asio, Debian libboost-dev); "
           "--transport shm runs processes of one host";
  if (launched && world_size_given && world_size != job->size)
    return "--world-size " + std::to_string(world_size) + " but the launcher started " +
           std::to_string(job->size) + " ranks (" + job->variable + ")";
  return {};
}

/// For the programs that measure one process per rank (the sweeps, overlap, default_vs_fixed):
/// "" where `name` is inproc or a launcher started this process, else the error line's text,
/// which says how to start it (`launch_flags`: gcl-launch's flags besides -p, such as
/// " --bind none").
inline std::string needs_launcher(std::string const& name, std::optional<launcher_job> const& job,
                                  int world_size, char const* program,
                                  std::string const& launch_flags = "") {
  if (name == "inproc" || job) return {};
  return "--transport " + name + " runs one process per rank: start it with tools/gcl-launch -p " +
         std::to_string(world_size) + launch_flags + " -- " + program + " --transport " + name +
         " ...";
}

/// A program's --pool (its buffers in the shm pool: shm_transport::allocate): refuses a
/// transport without a pool (returns the error line's text, or "" to go on), and sizes the pool
/// to `bytes` per rank unless GCL_SHM_POOL_BYTES says otherwise. Before the transport starts.
inline std::string use_pool(std::string const& transport, std::size_t bytes) {
  if (transport != "shm" && transport != "auto")
    return "--pool: --transport " + transport + " has no pool (shm and auto have)";
  if (std::getenv("GCL_SHM_POOL_BYTES") == nullptr)
    ::setenv("GCL_SHM_POOL_BYTES", std::to_string(bytes).c_str(), 1);
  return {};
}

namespace detail {
template <class Options>
void set_timeout(Options& o, std::chrono::milliseconds t) {
  if constexpr (requires { o.tcp.timeout; })
    o.tcp.timeout = t;  // hybrid_options: the one timeout of both sides
  else
    o.timeout = t;
}

// GCL_SHM_POOL_BYTES, which Options::from_env reads for a process, for ranks that are threads.
template <class Options>
void set_pool_from_env(Options& o) {
  char const* v = std::getenv("GCL_SHM_POOL_BYTES");
  if (v == nullptr || *v == '\0') return;
  if constexpr (requires { o.pool_bytes; })
    o.pool_bytes = gcl::shm_options::parse_pool_bytes(v);
  else if constexpr (requires { o.shm_pool_bytes; })
    o.shm_pool_bytes = gcl::shm_options::parse_pool_bytes(v);
}

template <class Transport, class Options, class F>
auto run_threads(int n, F& f, std::chrono::milliseconds timeout) {
  Options o;
  set_timeout(o, timeout);
  set_pool_from_env(o);
  return gcl::spawn<Transport>(n, f, o);
}

// This process is one rank of a launcher's job: the transport from the environment.
template <class Transport, class Options, class F>
auto run_process(F& f, std::chrono::milliseconds timeout) {
  auto o = Options::from_env();
  // A timeout given on the command line bounds a failing run, unless GCL_TIMEOUT says otherwise.
  if (!std::getenv("GCL_TIMEOUT")) set_timeout(o, timeout);
  gcl::communicator comm{Transport(o)};
  using result = std::invoke_result_t<F&, decltype(comm)&>;
  if constexpr (std::is_void_v<result>)
    f(comm);
  else
    return std::vector<result>{f(comm)};
}

template <class Transport, class Options, class F>
auto run(std::optional<launcher_job> const& job, int n, F& f, std::chrono::milliseconds timeout) {
  if (job) return run_process<Transport, Options>(f, timeout);
  return run_threads<Transport, Options>(n, f, timeout);
}
}  // namespace detail

/// Runs `f(comm)` on the ranks of the transport `name` (resolved by `resolve_transport`) that
/// live in this process: all `world_size` of them as threads when no launcher started it, this
/// process's one rank under a launcher. Returns their results in rank order (one element under
/// a launcher: this rank's), or nothing if `f` returns nothing. `f` must return the same type
/// on every transport. Errors are thrown, as by the transports.
template <class F>
auto run_ranks(std::string const& name, std::optional<launcher_job> const& job, int world_size,
               std::chrono::milliseconds timeout, F&& f) {
  if (name == "shm")
    return detail::run<gcl::shm_transport, gcl::shm_options>(job, world_size, f, timeout);
#if defined(GCL_PROGRAM_TCP)
  if (name == "auto")
    return detail::run<gcl::hybrid_transport, gcl::hybrid_options>(job, world_size, f, timeout);
  if (name == "tcp")
    return detail::run<gcl::tcp_transport, gcl::tcp_options>(job, world_size, f, timeout);
#endif
  if (job && job->size > 1)  // resolve_transport refuses this; never run P worlds silently
    throw gcl::usage_error("--transport " + name + " cannot run under a launcher");
  return detail::run_threads<gcl::inproc_transport, gcl::inproc_options>(world_size, f, timeout);
}

}  // namespace gcl_cli
