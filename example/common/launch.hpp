#pragma once
/// \file
/// The one place where the examples choose a transport: `--transport inproc|tcp` and
/// `--world-size N` on the command line, and `launch(opts, f)`, which runs `f(comm)` on every
/// rank of the chosen transport and returns the process exit code.
///
///     gcl_example::launch_options opts;
///     CLI::App app{"hello"};
///     gcl_example::add_launch_options(app, opts);
///     CLI11_PARSE(app, argc, argv);
///     return gcl_example::launch(opts, [](auto& comm) { /* comm.rank(), comm.size() ... */ });
///
/// inproc: the ranks are threads of this process (gcl::spawn). tcp (when built with
/// GCL_EXAMPLE_TCP, i.e. linked to gcl::tcp): under a launcher (tools/gcl-launch, mpirun, srun:
/// a rank variable such as GCL_RANK is set) this process is one rank and the job comes from
/// the environment (`tcp_options::from_env`, --world-size is ignored); otherwise the ranks are
/// threads of this process talking over loopback sockets.

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

namespace gcl_example {

/// What the command line chose.
struct launch_options {
  std::string transport = "inproc";
  int world_size = 4;
};

/// Adds `--transport` and `--world-size` (`-n`) to `app`.
inline void add_launch_options(CLI::App& app, launch_options& opts) {
  app.add_option("--transport", opts.transport, "inproc (threads of this process) or tcp")
      ->check(CLI::IsMember({"inproc", "tcp"}))
      ->capture_default_str();
  app.add_option("-n,--world-size", opts.world_size, "number of ranks")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
}

/// Runs `f(comm)` on every rank of the chosen transport; returns 0, or 1 after printing the
/// error that a rank threw.
template <class F>
int launch(launch_options const& opts, F&& f) {
  try {
    if (opts.transport == "inproc") {
      gcl::spawn<gcl::inproc_transport>(opts.world_size, f);
      return 0;
    }
#if defined(GCL_EXAMPLE_TCP)
    if (opts.transport == "tcp") {
      for (char const* v : {"GCL_RANK", "RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"})
        if (std::getenv(v) != nullptr) {  // started by a launcher: this process is one rank
          gcl::communicator comm(gcl::tcp_transport(gcl::tcp_options::from_env()));
          f(comm);
          return 0;
        }
      gcl::spawn<gcl::tcp_transport>(opts.world_size, f);
      return 0;
    }
#endif
    std::fprintf(stderr, "error: --transport %s is not built into this example yet\n",
                 opts.transport.c_str());
    return 2;
  } catch (std::exception const& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}

}  // namespace gcl_example
