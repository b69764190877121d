// The machine's limits that the collectives are measured against:
//  - memory bandwidth: a STREAM-like copy (memcpy of a buffer much larger than the caches) with
//    1..T threads, each copying its own buffers, reported as GB/s of bytes copied (read+write
//    traffic is twice that, as in STREAM's "Copy" column, which counts both: we print both);
//  - cross-memory attach (cross_memory.hpp): one process copying another's buffer of the same
//    size into its own with process_vm_readv, the one-copy path of large shared-memory messages;
//  - loopback TCP throughput (loopback.hpp): one connection one way, and two connections in
//    opposite directions at once (duplex, GB/s per direction), the ceiling of a ring's steps;
//  - a cache line's round trip between two cores (line_round_trip.hpp), the floor of a small
//    message between threads and its answer (column ns; the GB/s columns empty);
//  - a switch between tasks sharing one core (switch_cost.hpp), threads of one process and
//    processes, 2 and 4 tasks on the core ("threads" column), the floor of a small message
//    where ranks outnumber the cores (column ns).
//
//   benchmark/machine_limits --bytes 64M --threads 2 --tcp-bytes 1G

#include <CLI/CLI.hpp>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "common.hpp"
#include "common/cli.hpp"
#include "cross_memory.hpp"
#include "line_round_trip.hpp"
#include "loopback.hpp"
#include "switch_cost.hpp"

namespace {

// Median GB/s (bytes copied per second, summed over threads) of `reps` timed rounds.
double copy_bandwidth(std::size_t bytes, int threads, int reps) {
  std::vector<std::vector<char>> src(threads), dst(threads);
  for (int t = 0; t < threads; ++t) {
    src[t].assign(bytes, static_cast<char>(t + 1));  // touch every page before timing
    dst[t].assign(bytes, 0);
  }
  std::vector<double> rates;
  std::barrier sync(threads);
  std::vector<double> seconds(threads);
  for (int rep = 0; rep < reps + 1; ++rep) {
    std::vector<std::jthread> pool;
    for (int t = 0; t < threads; ++t)
      pool.emplace_back([&, t] {
        sync.arrive_and_wait();
        auto t0 = bench::clock::now();
        std::memcpy(dst[t].data(), src[t].data(), bytes);
        seconds[t] = bench::seconds_since(t0);
      });
    pool.clear();
    double slowest = *std::max_element(seconds.begin(), seconds.end());
    if (rep > 0)
      rates.push_back(static_cast<double>(bytes) * threads / slowest / 1e9);  // rep 0 warms up
  }
  return bench::median(rates);
}

// The congestion control new TCP connections get ("" where /proc does not say).
std::string system_congestion_control() {
  std::ifstream f("/proc/sys/net/ipv4/tcp_congestion_control");
  std::string name;
  std::getline(f, name);
  return name;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "Machine limits: memcpy bandwidth per thread count, cross-memory attach (process_vm_readv) "
      "between two processes, loopback TCP throughput one way and both ways at once, a cache "
      "line's round trip between two cores, a switch between tasks sharing one core"};
  gcl_cli::setup(app, "machine_limits");
  std::size_t b = std::size_t{256} << 20, tb = std::size_t{2} << 30;
  int threads = 2, reps = 5;
  bool csv = false;
  gcl_cli::add_size_option(app, "--bytes", b, "buffer per thread for the copy test")
      ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 36));
  app.add_option("--threads", threads, "copy with 1..this many threads")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  app.add_option("-n,--iters,--reps", reps, "timed repetitions (median reported)")
      ->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  gcl_cli::add_size_option(app, "--tcp-bytes", tb,
                           "bytes pushed through loopback TCP, per direction (0: skip)")
      ->check(CLI::Range(std::size_t{0}, std::size_t{1} << 40));
  app.add_flag("--csv", csv, "print CSV");
  GCL_CLI_PARSE(app, argc, argv);
  try {
    if (csv)
      std::printf("test,threads,bytes,GBps_copied,GBps_traffic,ns\n");
    else
      std::printf("# %-28s %7s %10s %14s %16s %8s\n", "test", "threads", "bytes", "copied (GB/s)",
                  "traffic (GB/s)", "ns");
    // 200,000 rounds a run: about 0.1 s where a round takes half a microsecond.
    if (auto ns = bench::line_round_trip::nanoseconds(200000, reps)) {
      if (csv)
        std::printf("line_round_trip,2,64,,,%.1f\n", *ns);
      else
        std::printf("  %-28s %7d %10s %14s %16s %8.1f\n", "cache line round trip", 2, "64 B", "",
                    "", *ns);
      std::fflush(stdout);
    } else {
      std::fprintf(stderr, "cache line round trip: fewer than two CPUs to pin to (no row)\n");
    }
    // While no other thread of this process runs (it forks). 20,000 switches a round:
    // 0.05 to 0.2 s where a switch takes 2.5 to 10 us.
    for (auto const kind :
         {bench::switch_cost::tasks_are::threads, bench::switch_cost::tasks_are::processes})
      for (int const tasks : {2, 4}) {
        bool const between_threads = kind == bench::switch_cost::tasks_are::threads;
        char const* const name = between_threads ? "switch_threads" : "switch_processes";
        if (auto ns = bench::switch_cost::nanoseconds(kind, tasks, 20000, reps)) {
          if (csv)
            std::printf("%s,%d,,,,%.1f\n", name, tasks, *ns);
          else
            std::printf(
                "  %-28s %7d %10s %14s %16s %8.1f\n",
                between_threads ? "switch, threads of 1 core" : "switch, processes of 1 core",
                tasks, "", "", "", *ns);
          std::fflush(stdout);
        } else {
          std::fprintf(stderr, "%s: tasks could not be started or pinned (no row)\n", name);
        }
      }
    for (int t = 1; t <= threads; ++t) {
      double r = copy_bandwidth(b, t, reps);
      if (csv)
        std::printf("memcpy,%d,%zu,%.3f,%.3f,\n", t, b, r, 2 * r);
      else
        std::printf("  %-28s %7d %10s %14.2f %16.2f\n", "memcpy", t, bench::format_size(b).c_str(),
                    r, 2 * r);
      std::fflush(stdout);
    }
    // Read 256 KiB per call, as shm_transport reads an offer it reduces.
    if (auto r = bench::cross_memory::throughput(b, std::size_t{256} << 10, reps)) {
      if (csv)
        std::printf("cross_memory_attach,1,%zu,%.3f,%.3f,\n", b, *r, 2 * *r);
      else
        std::printf("  %-28s %7d %10s %14.2f %16.2f\n", "cross-memory attach", 1,
                    bench::format_size(b).c_str(), *r, 2 * *r);
      std::fflush(stdout);
    } else {
      std::fprintf(stderr, "cross-memory attach: refused by the kernel (no row)\n");
    }
    if (tb > 0) {
      // One connection one way: copied = traffic = its GB/s. Duplex: copied = per direction,
      // traffic = both directions; "threads" is the number of connections. The first two send
      // from and receive into a 1 MiB buffer, which stays in the caches; the last from and
      // into 32 MiB ones, which do not, as a large message's buffers do not (on this 2-core
      // VM that halves the rate: the kernel's copies then run at memory speed).
      struct tcp_test {
        char const* name;
        char const* text;
        int conns;
        std::size_t buffer;
      };
      // Each with the system's congestion control, then with reno, which gcl's TCP transport
      // uses between ranks of one host (rows "..._reno"), unless the system's is reno.
      std::vector<std::string> congestion{""};
      if (system_congestion_control() != "reno") congestion.push_back("reno");
      for (auto const& cc : congestion)
        for (auto const& t : {tcp_test{"tcp_loopback", "tcp loopback (1 way)", 1, 1 << 20},
                              tcp_test{"tcp_loopback_duplex", "tcp duplex (per dir.)", 2, 1 << 20},
                              tcp_test{"tcp_loopback_duplex_32m", "tcp duplex 32M bufs", 2,
                                       std::size_t{32} << 20}}) {
          std::vector<double> rates;
          for (int i = 0; i < 3; ++i)
            rates.push_back(bench::loopback::throughput(t.conns, tb, t.buffer, cc));
          double r = bench::median(rates);
          std::string const name = std::string(t.name) + (cc.empty() ? "" : "_" + cc);
          std::string const text = std::string(t.text) + (cc.empty() ? "" : ", " + cc);
          if (csv)
            std::printf("%s,%d,%zu,%.3f,%.3f,\n", name.c_str(), t.conns, tb, r, t.conns * r);
          else
            std::printf("  %-28s %7d %10s %14.2f %16.2f\n", text.c_str(), t.conns,
                        bench::format_size(tb).c_str(), r, t.conns * r);
          std::fflush(stdout);
        }
    }
  } catch (std::exception const& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  }
}
