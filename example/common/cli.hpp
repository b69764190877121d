#pragma once
/// \file
/// What the command line of every gcl program shares (doc/cli.md has the table of all flags):
///
/// - `--help` prints the usage and exits 0, `--version` prints "PROGRAM (gcl X.Y.Z)" (from
///   <gcl/version.hpp>) and exits 0, both before anything else happens;
/// - a wrong flag or a bad value is one line on stderr naming the flag, exit code 2, before any
///   work: `hello: --world-size: Value 0 not in range [1 - 1024] (see --help)`;
/// - `launcher_world()` says whether a launcher (gcl-launch, torchrun, mpirun, srun) started
///   this process as one rank of a larger job, so that a program never runs one world of
///   threads per process without saying so.
///
///     CLI::App app{"what it does"};
///     gcl_cli::setup(app, "hello");
///     ... app.add_option(...) ...
///     GCL_CLI_PARSE(app, argc, argv);
///
/// Not part of the library: for gcl's examples, benchmarks and trainer (CLI11 only).

#include <CLI/CLI.hpp>
#include <gcl/version.hpp>

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

namespace gcl_cli {

/// "PROGRAM (gcl 0.1.0)".
inline std::string version_line(std::string const& program) {
  return program + " (gcl " + std::to_string(GCL_VERSION_MAJOR) + "." +
         std::to_string(GCL_VERSION_MINOR) + "." + std::to_string(GCL_VERSION_PATCH) + ")";
}

/// Names `app`, adds `--version`, and makes every parse error one line:
/// "PROGRAM: WHAT (see --help)".
inline void setup(CLI::App& app, std::string const& program) {
  app.name(program);
  app.set_version_flag("--version", version_line(program), "print the version and exit");
  app.failure_message([](CLI::App const* a, CLI::Error const& e) {
    std::string what = e.what();
    for (char& c : what)
      if (c == '\n') c = ' ';
    while (!what.empty() && what.back() == ' ') what.pop_back();
    return a->get_name() + ": " + what + " (see --help)\n";
  });
}

/// Parses; on --help or --version prints and returns 0, on an error prints one line and returns
/// 2; otherwise returns nullopt (go on).
inline std::optional<int> parse(CLI::App& app, int argc, char const* const* argv) {
  try {
    app.parse(argc, argv);
  } catch (CLI::ParseError const& e) {
    int const code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  return std::nullopt;
}

/// Prints "PROGRAM: WHAT (see --help)" on stderr and returns 2: a bad combination of values
/// found after parsing, still before any work.
inline int usage_error(CLI::App const& app, std::string const& what) {
  std::fprintf(stderr, "%s: %s (see --help)\n", app.get_name().c_str(), what.c_str());
  return 2;
}

/// A size in bytes through CLI11 (`CLI::AsSizeValue`: 8, 64K, 64KiB, 1.5M, 1G; K = 1024) into
/// an integer option.
inline CLI::Option* add_size_option(CLI::App& app, std::string const& names, std::size_t& bytes,
                                    std::string const& help) {
  return app.add_option(names, bytes, help + " (suffixes K, M, G: powers of 1024)")
      ->transform(CLI::AsSizeValue(false))
      ->capture_default_str();
}

/// A job a launcher started this process in: the variable that gave its world size, the size,
/// and this process's rank in it (-1 when unreadable).
struct launcher_job {
  std::string variable;
  int size = 0;
  int rank = -1;
};

/// The launcher's job, when a rank variable and a world-size variable are both set (the same
/// variables `gcl::tcp_options::from_env` reads: gcl-launch, torchrun, Open MPI, MPICH/PMI,
/// Slurm). An unreadable size counts as 2 (more than one rank): from_env then names it.
inline std::optional<launcher_job> launcher_world() {
  auto number = [](char const* s) {
    std::string_view t(s);
    int n = -1;
    auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), n);
    return ec != std::errc{} || end != t.data() + t.size() ? -1 : n;
  };
  std::optional<int> rank;
  for (char const* v : {"GCL_RANK", "RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"})
    if (char const* s = std::getenv(v); s && *s && !rank) rank = number(s);
  if (!rank) return std::nullopt;
  for (char const* v :
       {"GCL_WORLD_SIZE", "WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS"})
    if (char const* s = std::getenv(v); s && *s) {
      int n = number(s);
      return launcher_job{v, n < 1 ? 2 : n, *rank};
    }
  return std::nullopt;
}

/// For programs whose ranks are threads of one process: under a launcher with more than one
/// rank, N copies would each run a world of their own. Returns the error line's text, or "".
inline std::string refuse_launcher() {
  auto job = launcher_world();
  if (!job || job->size <= 1) return {};
  return "started as one of " + std::to_string(job->size) + " processes by a launcher (" +
         job->variable + "=" + std::to_string(job->size) +
         "), but its ranks are threads of one process: each process would run a world of its "
         "own; run it without the launcher (-p sets the number of threads)";
}

}  // namespace gcl_cli

/// CLI11_PARSE with gcl's conventions (see gcl_cli::parse): returns from main on --help,
/// --version or an error.
#define GCL_CLI_PARSE(app, argc, argv)                                                       \
  do {                                                                                       \
    if (auto gcl_cli_exit_ = ::gcl_cli::parse((app), (argc), (argv))) return *gcl_cli_exit_; \
  } while (false)
