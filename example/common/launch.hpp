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
/// inproc: the ranks are threads of this process (gcl::spawn). tcp: not built yet (the TCP
/// transport's owner extends this helper).

#include <CLI/CLI.hpp>
#include <gcl/spawn.hpp>
#include <gcl/transport/inproc.hpp>

#include <cstdio>
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
    std::fprintf(stderr, "error: --transport %s is not built into this example yet\n",
                 opts.transport.c_str());
    return 2;
  } catch (std::exception const& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}

}  // namespace gcl_example
