#pragma once
/// \file
/// The examples' command line: `-t/--transport` (the rule of transports.hpp) and
/// `-p/--world-size N`, and `launch(app, opts, f)`, which runs `f(comm)` on every rank of the
/// chosen transport that lives in this process and returns the process exit code.
///
///     gcl_example::launch_options opts;
///     CLI::App app{"hello"};
///     gcl_cli::setup(app, "hello");
///     gcl_example::add_launch_options(app, opts);
///     GCL_CLI_PARSE(app, argc, argv);
///     return gcl_example::launch(app, opts, [](auto& comm) { /* comm.rank(), comm.size() */ });

#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <exception>
#include <string>

#include "cli.hpp"
#include "transports.hpp"

namespace gcl_example {

/// What the command line chose.
struct launch_options {
  std::string transport;  ///< "" (not given): tcp under a launcher, else inproc
  int world_size = 4;
  bool world_size_given = false;
};

/// Adds `-t/--transport` and `-p/--world-size` to `app`.
inline void add_launch_options(CLI::App& app, launch_options& opts) {
  gcl_cli::add_transport_option(app, opts.transport);
  app.add_option("-p,--world-size", opts.world_size,
                 "number of ranks (under a launcher: the launcher's)")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str()
      ->each([&opts](std::string const&) { opts.world_size_given = true; });
}

/// Runs `f(comm)` on every rank of the chosen transport in this process; returns 0, 2 for a
/// usage error (one line, before any work), or 1 after printing the error that a rank threw.
template <class F>
int launch(CLI::App const& app, launch_options opts, F&& f) {
  auto const job = gcl_cli::launcher_world();
  if (auto why =
          gcl_cli::resolve_transport(opts.transport, job, opts.world_size, opts.world_size_given);
      !why.empty())
    return gcl_cli::usage_error(app, why);
  try {
    // The transports' own default timeout (30 min) would let a broken example hang for long.
    gcl_cli::run_ranks(opts.transport, job, opts.world_size, std::chrono::minutes{2}, f);
    return 0;
  } catch (std::exception const& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}

}  // namespace gcl_example
