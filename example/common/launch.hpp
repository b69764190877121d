#pragma once
/// \file
/// The one place where the examples choose a transport: `-t/--transport inproc|tcp` and
/// `-p/--world-size N` on the command line, and `launch(opts, f)`, which runs `f(comm)` on every
/// rank of the chosen transport and returns the process exit code.
///
///     gcl_example::launch_options opts;
///     CLI::App app{"hello"};
///     gcl_cli::setup(app, "hello");
///     gcl_example::add_launch_options(app, opts);
///     GCL_CLI_PARSE(app, argc, argv);
///     return gcl_example::launch(app, opts, [](auto& comm) { /* comm.rank(), comm.size() */ });
///
/// inproc: the ranks are threads of this process (gcl::spawn). tcp (when built with
/// GCL_EXAMPLE_TCP, i.e. linked to gcl::tcp): under a launcher (tools/gcl-launch, torchrun,
/// mpirun, srun: rank and world-size variables are set) this process is one rank and the job
/// comes from the environment (`tcp_options::from_env`; a --world-size that differs from the
/// launcher's is an error); otherwise the ranks are threads of this process talking over
/// loopback sockets. Without --transport: tcp under a launcher of more than one rank, inproc
/// otherwise; --transport inproc under such a launcher is an error (each process would run a
/// world of its own): see doc/cli.md.

#include <CLI/CLI.hpp>
#include <gcl/spawn.hpp>
#include <gcl/transport/inproc.hpp>

#if defined(GCL_EXAMPLE_TCP)
#include <gcl/transport/tcp.hpp>
#endif

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "cli.hpp"

namespace gcl_example {

/// What the command line chose.
struct launch_options {
  std::string transport;  ///< "" (not given): tcp under a launcher, else inproc
  int world_size = 4;
  bool world_size_given = false;
};

/// Adds `-t/--transport` and `-p/--world-size` to `app`.
inline void add_launch_options(CLI::App& app, launch_options& opts) {
  app.add_option("-t,--transport", opts.transport,
                 "inproc (threads of this process) or tcp; default: tcp when started by a "
                 "launcher (gcl-launch, torchrun, mpirun, srun), else inproc")
      ->check(CLI::IsMember({"inproc", "tcp"}));
  app.add_option("-p,--world-size", opts.world_size,
                 "number of ranks (under a launcher: the launcher's)")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str()
      ->each([&opts](std::string const&) { opts.world_size_given = true; });
}

/// Runs `f(comm)` on every rank of the chosen transport; returns 0, 2 for a usage error (one
/// line, before any work), or 1 after printing the error that a rank threw.
template <class F>
int launch(CLI::App const& app, launch_options opts, F&& f) {
  auto const job = gcl_cli::launcher_world();
  bool const launched = job && job->size > 1;
  if (opts.transport.empty()) opts.transport = launched ? "tcp" : "inproc";
  if (launched && opts.transport == "inproc")
    return gcl_cli::usage_error(
        app, "--transport inproc: started as one of " + std::to_string(job->size) +
                 " processes by a launcher (" + job->variable + "=" +
                 std::to_string(job->size) +
                 "), each would run a world of its own; use --transport tcp (the default under "
                 "a launcher) or run without the launcher");
  if (launched && opts.world_size_given && opts.world_size != job->size)
    return gcl_cli::usage_error(app, "--world-size " + std::to_string(opts.world_size) +
                                         " but the launcher started " +
                                         std::to_string(job->size) + " ranks (" + job->variable +
                                         ")");
  try {
    if (opts.transport == "inproc") {
      gcl::spawn<gcl::inproc_transport>(opts.world_size, f);
      return 0;
    }
#if defined(GCL_EXAMPLE_TCP)
    if (opts.transport == "tcp") {
      if (job) {  // started by a launcher: this process is one rank
        gcl::communicator comm(gcl::tcp_transport(gcl::tcp_options::from_env()));
        f(comm);
        return 0;
      }
      gcl::spawn<gcl::tcp_transport>(opts.world_size, f);
      return 0;
    }
#endif
    return gcl_cli::usage_error(app, "--transport " + opts.transport +
                                         ": this build has no TCP transport (it needs Boost.Asio)");
  } catch (std::exception const& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}

}  // namespace gcl_example
