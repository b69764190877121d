// overlap: how much of a non-blocking all_reduce hides behind computation (issue 14).
//
//     overlap -p 2                                             # 2 ranks, threads (inproc)
//     tools/gcl-launch -p 4 --bind none -- overlap -t tcp      # 4 processes over TCP
//
// One configuration (world size, transport) per run; every time below is, per iteration, the
// slowest rank's, and the median over iterations:
//
//   C           a blocking gcl::all_reduce of --bytes (float sum), calls back to back;
//   T           a compute phase: rounds of a multiply-add over 32 floats that stay in L1
//               (CPU-bound, no memory traffic), as many as take C of one core's CPU time
//               (calibrated once by rank 0, so the work is identical on every rank), or
//               --compute-ms;
//   serial      barrier; compute T; blocking all_reduce;
//   overlapped  barrier; r = gcl::iall_reduce(...); compute T; r.wait();
//
//   hidden % = (serial - overlapped) / min(T, C) * 100, clamped to 0..100: the share of the
//   shorter phase that ran at the same time as the other (0: nothing overlapped, 100: the
//   shorter one was hidden entirely). T there is the compute phase as measured in the serial
//   iterations (with P ranks computing at once, which on fewer than P cores is longer than the
//   calibrated T).
//
// Serial and overlapped iterations alternate, so that a change of the machine's load weighs on
// both alike; each starts after a barrier with the ranks in step. Every all_reduce (untimed
// checks, C's calls, both kinds of iterations) is checked: integer-valued floats, whose sum is
// exact; a wrong value makes the exit code 1.
//
// Cores bound what can be hidden. The collective runs on the communicator's progress thread
// (besides the transport's own threads, TCP's I/O), so while P ranks of a host compute, P more
// threads want a core to communicate: only on 2P cores can all of it run at once. With fewer,
// computation and communication take turns on the cores, and what needs the CPU (inproc's
// copies and reductions, shm's, TCP's system calls and the kernel's loopback copies) cannot
// hide: on a 2-core machine, P = 2 leaves no core free while the ranks compute, and P = 4 has
// the ranks alone contending for 2 cores. The header says how many cores there are; read
// hidden % against it. Ranks are not pinned by default (--bind none): a pinned rank's progress
// thread inherits its mask, i.e. shares its one core with the computation.
#include <time.h>
#include <gcl/gcl.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <span>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "harness.hpp"

namespace {

// ---------------------------------------------------------------------------------------------
// The computation.

constexpr int lanes = 32;  // floats: 128 bytes, in L1 (in registers, mostly)
float volatile sink = 0;   // the result goes somewhere, so the loop is not removed

// `rounds` rounds of a[j] = a[j] * b[j] + c[j] over 32 floats: CPU-bound, no memory traffic
// beyond L1, and not foldable (floating point is not reassociated without -ffast-math). With
// b < 1 every a[j] converges to c / (1 - b): no overflow, no subnormals.
[[gnu::noinline]] void compute(std::uint64_t rounds) {
  alignas(64) float a[lanes], b[lanes], c[lanes];
  for (int j = 0; j < lanes; ++j) {
    a[j] = 1.0f + 0.01f * static_cast<float>(j);
    b[j] = 0.9f + 0.002f * static_cast<float>(j);
    c[j] = 0.001f * static_cast<float>(j + 1);
  }
  for (std::uint64_t r = 0; r < rounds; ++r)
    for (int j = 0; j < lanes; ++j) a[j] = a[j] * b[j] + c[j];
  float s = 0;
  for (int j = 0; j < lanes; ++j) s += a[j];
  sink = s;
}

// The CPU time of this thread, in seconds: what the calibration counts, so that a core shared
// with another program (the machine is rarely quiet) does not change the rounds it finds.
double cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

double cpu_seconds_of(std::uint64_t rounds) {
  double const t0 = cpu_seconds();
  compute(rounds);
  return cpu_seconds() - t0;
}

// The rounds that take `target` seconds of one core: the rate of the fastest of 5 runs of at
// least 10 ms of CPU time each.
std::uint64_t calibrate(double target) {
  std::uint64_t n = 1024;
  while (cpu_seconds_of(n) < 0.01 && n < (std::uint64_t{1} << 40)) n *= 2;
  double rate = 0;
  for (int i = 0; i < 5; ++i) rate = std::max(rate, static_cast<double>(n) / cpu_seconds_of(n));
  return std::max<std::uint64_t>(1, static_cast<std::uint64_t>(std::llround(target * rate)));
}

// ---------------------------------------------------------------------------------------------
// The data: the sweeps' sum pattern (common.hpp), which repeats every 8 elements for sum, so
// that filling and checking 64 MiB is a pass over memory.

void fill(std::span<float> d, int rank) {
  float v[8];
  for (int k = 0; k < 8; ++k) v[k] = static_cast<float>(bench::pattern("sum", rank, k));
  for (std::size_t i = 0; i < d.size(); ++i) d[i] = v[i % 8];
}

// Elements of `d` that differ from the exact sum over `world` ranks; `inject` spoils one.
std::uint64_t wrong_in(std::span<float const> d, int world, bool inject) {
  float e[8];
  for (int k = 0; k < 8; ++k) e[k] = static_cast<float>(bench::reduced("sum", world, k));
  std::uint64_t wrong = inject && !d.empty() ? 1 : 0;
  for (std::size_t i = 0; i < d.size(); ++i) wrong += d[i] != e[i % 8];
  return wrong;
}

// ---------------------------------------------------------------------------------------------
// Options, results.

struct options {
  std::string transport;  // "": tcp under a launcher (shm without TCP), else inproc
  std::string algorithm = "by_size";
  int world_size = 2;
  std::uint64_t bytes = std::uint64_t{64} << 20;
  double compute_ms = 0;        // 0: calibrated to C
  std::string compute = "cpu";  // or "sleep": computation elsewhere (a GPU's), the CPU free
  int iters = 10;
  int warmup = 2;
  std::string bind = "none";
  double timeout_s = 60;
  bool json = false;
  bool inject_wrong = false;
};

// Per timed iteration, in seconds: each rank's own, then (collect) the slowest rank's.
struct samples {
  std::vector<double> serial, serial_compute, serial_comm, serial_compute_cpu;
  std::vector<double> overlapped, start, compute, wait, run, compute_cpu;

  auto all() {
    return std::array{&serial,     &serial_compute, &serial_comm, &serial_compute_cpu,
                      &overlapped, &start,          &compute,     &wait,
                      &run,        &compute_cpu};
  }
};

double ms(double s) {
  return s * 1e3;
}

nlohmann::ordered_json ms_array(std::vector<double> const& v) {
  auto a = nlohmann::ordered_json::array();
  for (double s : v) a.push_back(ms(s));
  return a;
}

// "64M (16777216 floats)".
std::string size_text(std::uint64_t bytes) {
  return bench::format_size(bytes) + " (" + std::to_string(bytes / sizeof(float)) + " floats)";
}

// The ranks on this host: the launcher's LOCAL_WORLD_SIZE (gcl-launch, torchrun), else all.
int ranks_on_this_host(int world) {
  if (char const* s = std::getenv("LOCAL_WORLD_SIZE"); s && *s) {
    int n = std::atoi(s);
    if (n > 0) return n;
  }
  return world;
}

// ---------------------------------------------------------------------------------------------
// One rank.

template <class Comm, class Alg>
std::uint64_t run_rank(Comm& comm, options const& o, Alg const& alg, std::string const& how) {
  int const me = comm.rank(), p = comm.size();
  bool const inject = o.inject_wrong && me == 0;
  std::vector<float> data(static_cast<std::size_t>(o.bytes / sizeof(float)));
  std::span<float> const d(data);
  std::uint64_t wrong = 0;
  auto const barrier = [&] { bench::detail::barrier(comm); };
  auto const progress = [&](std::string const& line) {
    if (me == 0) std::fprintf(stderr, "overlap: %s\n", line.c_str());
  };

  // Both calls once on checked data; the first non-blocking call forms the communicator's
  // second connection set (collective), here and not in a timed iteration.
  fill(d, me);
  gcl::all_reduce(comm, d, gcl::sum{}, alg);
  wrong += wrong_in(d, p, inject);
  fill(d, me);
  gcl::iall_reduce(comm, d, gcl::sum{}, alg).wait();
  wrong += wrong_in(d, p, inject);

  // C: blocking calls back to back, on zeros (which stay zeros, and are checked after).
  std::fill(data.begin(), data.end(), 0.0f);
  auto const blocking = [&] { gcl::all_reduce(comm, d, gcl::sum{}, alg); };
  bench::warm_up(o.warmup, blocking);
  bench::loop_record c = bench::time_calls(bench::options{}, me, p, o.iters, barrier, blocking);
  wrong += static_cast<std::uint64_t>(
               std::count_if(data.begin(), data.end(), [](float v) { return v != 0.0f; })) +
           (inject ? 1 : 0);
  gcl::all_reduce(comm, c, gcl::max{});  // per call, the slowest rank
  c.pop_back();                          // the total
  double const c_s = bench::median(c);
  progress("C = " + std::to_string(ms(c_s)) + " ms (blocking all_reduce alone)");

  // T: rank 0 calibrates while the others wait, and every rank runs the same rounds.
  double const target_s = o.compute_ms > 0 ? o.compute_ms / 1e3 : c_s;
  bool const sleeping = o.compute == "sleep";
  std::uint64_t rounds = me == 0 && !sleeping ? calibrate(target_s) : 0;
  gcl::broadcast(comm, rounds, 0);
  // The compute phase; its CPU time (none while sleeping).
  auto const compute_phase = [&] {
    if (!sleeping) return cpu_seconds_of(rounds);
    std::this_thread::sleep_for(std::chrono::duration<double>(target_s));
    return 0.0;
  };
  progress("T = " + std::to_string(rounds) + " rounds, calibrated to " +
           std::to_string(ms(target_s)) + " ms of one core");

  // Serial and overlapped iterations, alternating; every result checked.
  samples mine;
  for (int i = 0; i < o.warmup + o.iters; ++i) {
    bool const timed = i >= o.warmup;

    fill(d, me);
    barrier();
    auto const s0 = bench::clock::now();
    double const s_cpu = compute_phase();
    auto const s1 = bench::clock::now();
    gcl::all_reduce(comm, d, gcl::sum{}, alg);
    auto const s2 = bench::clock::now();
    wrong += wrong_in(d, p, inject);

    fill(d, me);
    barrier();
    auto const o0 = bench::clock::now();
    gcl::collective_request r = gcl::iall_reduce(comm, d, gcl::sum{}, alg);
    auto const o1 = bench::clock::now();
    double const o_cpu = compute_phase();
    auto const o2 = bench::clock::now();
    r.wait();
    auto const o3 = bench::clock::now();
    wrong += wrong_in(d, p, inject);

    if (!timed) continue;
    auto const sec = [](auto a, auto b) { return std::chrono::duration<double>(b - a).count(); };
    mine.serial.push_back(sec(s0, s2));
    mine.serial_compute.push_back(sec(s0, s1));
    mine.serial_comm.push_back(sec(s1, s2));
    mine.serial_compute_cpu.push_back(s_cpu);
    mine.overlapped.push_back(sec(o0, o3));
    mine.start.push_back(sec(o0, o1));
    mine.compute.push_back(sec(o1, o2));
    mine.wait.push_back(sec(o2, o3));
    mine.run.push_back(std::chrono::duration<double>(r.run_time()).count());
    mine.compute_cpu.push_back(o_cpu);
  }
  for (auto* v : mine.all()) gcl::all_reduce(comm, *v, gcl::max{});
  gcl::all_reduce(comm, wrong, gcl::sum{});
  if (me != 0) return wrong;

  // Rank 0 reports.
  double const t_s = bench::median(mine.serial_compute);
  double const serial_s = bench::median(mine.serial);
  double const overlapped_s = bench::median(mine.overlapped);
  double const shorter = std::min(t_s, c_s);
  // Undefined for one rank, whose all_reduce is no communication at all: "-" in the table,
  // null in JSON.
  bool const defined = p > 1 && shorter > 0;
  double const raw = defined ? (serial_s - overlapped_s) / shorter * 100 : 0;
  double const hidden = std::clamp(raw, 0.0, 100.0);
  int const host_cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  int const my_cores = static_cast<int>(gcl::detail::allowed_cpus().size());  // 0: unknown
  int const local = ranks_on_this_host(p);
  std::string const alg_name(Alg::name);

  if (o.json) {
    nlohmann::ordered_json j;
    j["program"] = "overlap";
    j["transport"] = o.transport;
    j["ranks"] = p;
    j["ranks_on_host"] = local;
    j["host_cores"] = host_cores;
    j["rank0_cores"] = my_cores;
    j["bytes"] = o.bytes;
    j["dtype"] = "float";
    j["op"] = "sum";
    j["algorithm"] = alg_name;
    j["iters"] = o.iters;
    j["warmup"] = o.warmup;
    j["compute"] = o.compute;
    j["compute_rounds"] = rounds;
    j["t_target_ms"] = ms(target_s);
    j["c_ms"] = ms(c_s);
    j["t_ms"] = ms(t_s);
    j["serial_ms"] = ms(serial_s);
    j["overlapped_ms"] = ms(overlapped_s);
    j["hidden_pct"] = defined ? nlohmann::ordered_json(hidden) : nullptr;
    j["hidden_raw_pct"] = defined ? nlohmann::ordered_json(raw) : nullptr;
    j["wait_ms"] = ms(bench::median(mine.wait));
    j["t_overlapped_ms"] = ms(bench::median(mine.compute));
    j["run_ms"] = ms(bench::median(mine.run));
    j["start_ms"] = ms(bench::median(mine.start));
    j["serial_comm_ms"] = ms(bench::median(mine.serial_comm));
    j["t_cpu_ms"] = ms(bench::median(mine.serial_compute_cpu));
    j["t_overlapped_cpu_ms"] = ms(bench::median(mine.compute_cpu));
    j["iterations_ms"] = {{"c", ms_array(c)},
                          {"serial", ms_array(mine.serial)},
                          {"serial_compute", ms_array(mine.serial_compute)},
                          {"serial_comm", ms_array(mine.serial_comm)},
                          {"serial_compute_cpu", ms_array(mine.serial_compute_cpu)},
                          {"overlapped", ms_array(mine.overlapped)},
                          {"overlapped_start", ms_array(mine.start)},
                          {"overlapped_compute", ms_array(mine.compute)},
                          {"overlapped_wait", ms_array(mine.wait)},
                          {"overlapped_run", ms_array(mine.run)},
                          {"overlapped_compute_cpu", ms_array(mine.compute_cpu)}};
    j["wrong"] = wrong;
    std::printf("%s\n", j.dump(1).c_str());
    std::fflush(stdout);
    return wrong;
  }

  std::printf(
      "# overlap: all_reduce of %s, sum, %s; %d ranks, %s; median over %d iterations "
      "(after %d warm-up) of the slowest rank's time\n",
      size_text(o.bytes).c_str(), alg_name.c_str(), p, how.c_str(), o.iters, o.warmup);
  if (sleeping)
    std::printf(
        "# C: blocking all_reduce alone, calls back to back. T: compute phase, a sleep of "
        "%.3f ms%s (--compute sleep: computation elsewhere, as a GPU's, the CPU free), "
        "measured (wall clock) in the serial iterations\n",
        ms(target_s), o.compute_ms > 0 ? " (--compute-ms)" : " (= C)");
  else
    std::printf(
        "# C: blocking all_reduce alone, calls back to back. T: compute phase, %llu rounds "
        "of a multiply-add over %d floats in L1, calibrated to %.3f ms of one core's CPU "
        "time%s, measured (wall clock) in the serial iterations\n",
        static_cast<unsigned long long>(rounds), lanes, ms(target_s),
        o.compute_ms > 0 ? " (--compute-ms)" : " (= C)");
  std::printf(
      "# serial: barrier, compute T, blocking all_reduce. overlapped: barrier, "
      "r = iall_reduce, compute T, r.wait()\n");
  std::printf(
      "# hidden %% = (serial - overlapped) / min(T, C) * 100: the share of the shorter "
      "phase that ran at the same time as the other (0: none, 100: all of it), clamped "
      "to 0..100 (the raw value in parentheses when outside)\n");
  std::printf(
      "# wait: time in r.wait() (communication not hidden). T': the compute phase while "
      "the all_reduce runs. run: the all_reduce on the progress thread (r.run_time())\n");
  std::printf(
      "# cores: %d on this host (rank 0 may run on %d); while overlapping, %d ranks "
      "compute and %d progress threads communicate on it: %s\n",
      host_cores, my_cores, local, local,
      host_cores >= 2 * local
          ? "a core for each"
          : "fewer cores than threads, so hidden % is bounded by the free cores "
            "(communication that needs a CPU can hide only on a free one)");
  std::printf("#\n# %5s  %-9s  %8s  %10s  %10s  %10s  %10s  %14s  %10s  %10s  %10s\n", "ranks",
              "transport", "bytes", "C ms", "T ms", "serial ms", "overl. ms", "hidden %", "wait ms",
              "T' ms", "run ms");
  char hidden_text[64];
  if (!defined)
    std::snprintf(hidden_text, sizeof hidden_text, "-");
  else if (raw == hidden)
    std::snprintf(hidden_text, sizeof hidden_text, "%.1f", hidden);
  else
    std::snprintf(hidden_text, sizeof hidden_text, "%.1f (%.1f)", hidden, raw);
  std::printf("  %5d  %-9s  %8s  %10.3f  %10.3f  %10.3f  %10.3f  %14s  %10.3f  %10.3f  %10.3f\n", p,
              o.transport.c_str(), bench::format_size(o.bytes).c_str(), ms(c_s), ms(t_s),
              ms(serial_s), ms(overlapped_s), hidden_text, ms(bench::median(mine.wait)),
              ms(bench::median(mine.compute)), ms(bench::median(mine.run)));
  std::printf("# wrong values: %llu %s\n", static_cast<unsigned long long>(wrong),
              wrong ? "FAILED" : "OK");
  std::fflush(stdout);
  return wrong;
}

// The algorithm named `o.algorithm`, if it implements all_reduce on this communicator.
template <class Comm>
std::uint64_t with_algorithm(Comm& comm, options const& o, std::string const& how) {
  std::uint64_t wrong = 0;
  bool ran = false;
  std::string valid;
  std::apply(
      [&](auto... alg) {
        auto one = [&](auto a) {
          using Alg = decltype(a);
          if constexpr (gcl::all_reduce_algorithm<Alg, Comm, float, gcl::sum>) {
            valid += (valid.empty() ? "" : ", ") + std::string(Alg::name);
            if (Alg::name == o.algorithm) {
              ran = true;
              wrong = run_rank(comm, o, a, how);
            }
          }
        };
        (one(alg), ...);
      },
      bench::algorithm_list{});
  if (!ran)
    throw gcl::usage_error("algorithm '" + o.algorithm +
                           "' does not implement all_reduce; algorithms that do: " + valid);
  return wrong;
}

}  // namespace

int main(int argc, char** argv) {
  options o;
  CLI::App app{
      "How much of a non-blocking all_reduce hides behind computation: a blocking all_reduce "
      "alone (C), compute T then a blocking all_reduce (serial), and iall_reduce, compute T, "
      "wait (overlapped); hidden % = (serial - overlapped) / min(T, C) * 100. One world size "
      "and transport per run. See doc/benchmarks.md; the flags of every gcl program: "
      "doc/cli.md."};
  gcl_cli::setup(app, "overlap");
  // Not gcl_cli::add_transport_option: TCP, not auto, is the default under a launcher (what
  // issue 14 measures).
  app.add_option("-t,--transport", o.transport,
                 "inproc (threads of this process; the default when started alone), shm "
                 "(processes of one host, shared memory), tcp (processes, TCP to every peer; "
                 "the default under a launcher: gcl-launch, torchrun, mpirun, srun) or auto "
                 "(processes: shared memory within a host, TCP between); shm, tcp and auto run "
                 "one process per rank, started by tools/gcl-launch")
      ->check(CLI::IsMember({"inproc", "shm", "tcp", "auto"}));
  std::vector<std::string> names;
  std::apply([&](auto... a) { (names.emplace_back(a.name), ...); }, bench::algorithm_list{});
  app.add_option("-a,--algorithm", o.algorithm, "one of: " + bench::algorithm_names())
      ->check(CLI::IsMember(names))
      ->capture_default_str();
  app.add_option("-p,--world-size", o.world_size,
                 "number of ranks (inproc; shm and tcp take it from the launcher)")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  app.add_option("--bytes", o.bytes,
                 "size of each rank's buffer, bytes, a multiple of 4 (float); suffixes K, M, G: "
                 "powers of 1024")
      ->transform(CLI::AsSizeValue(false))
      ->check(CLI::Range(std::uint64_t{4}, std::uint64_t{1} << 36))
      ->capture_default_str();
  app.add_option("--compute-ms", o.compute_ms,
                 "the compute phase T in milliseconds on one core (default 0: calibrated to the "
                 "time of the blocking all_reduce alone, C)")
      ->check(CLI::Range(0.0, 1e7))
      ->capture_default_str();
  app.add_option("--compute", o.compute,
                 "cpu: a multiply-add loop on the rank's thread; sleep: the rank's thread "
                 "sleeps for T, as while a GPU computes, which leaves the CPU to the "
                 "communication")
      ->check(CLI::IsMember({"cpu", "sleep"}))
      ->capture_default_str();
  app.add_option("-n,--iters", o.iters,
                 "timed iterations: calls of C, and serial and overlapped iterations (medians)")
      ->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  app.add_option("-w,--warmup", o.warmup, "untimed iterations of each kind first")
      ->check(CLI::Range(0, 1000000))
      ->capture_default_str();
  app.add_option("--bind", o.bind,
                 "pin each rank to a core: none (default: a pinned rank's progress thread would "
                 "share its core), auto (when ranks <= cores), core")
      ->check(CLI::IsMember({"auto", "core", "none"}))
      ->capture_default_str();
  app.add_option("--timeout", o.timeout_s, "seconds any blocking call may wait")
      ->check(CLI::Range(0.001, 1e7))
      ->capture_default_str();
  app.add_flag("--json", o.json, "print one JSON object (with every iteration) instead of a table");
  app.add_flag("--inject-wrong", o.inject_wrong,
               "rank 0 spoils one result element before each check")
      ->group("");  // hidden: for the test that the check can fail
  GCL_CLI_PARSE(app, argc, argv);
  if (o.bytes % sizeof(float) != 0)
    return gcl_cli::usage_error(app, "--bytes " + std::to_string(o.bytes) +
                                         " is not a multiple of 4 (the elements are floats)");
  auto const job = gcl_cli::launcher_world();
  // Under a launcher, TCP to every peer by default: what the issue measures.
  bool const launched = job && job->size > 1;
  if (o.transport.empty() && launched) o.transport = gcl_cli::has_tcp ? "tcp" : "shm";
  if (o.transport == "inproc" && launched)
    return gcl_cli::usage_error(
        app, "--transport inproc: started as one of " + std::to_string(job->size) +
                 " processes by a launcher (" + job->variable + "=" + std::to_string(job->size) +
                 "), each would run a world of its own; use --transport tcp (the default under "
                 "a launcher) or shm, or run without the launcher");
  if (auto why = gcl_cli::resolve_transport(o.transport, job, o.world_size, false); !why.empty())
    return gcl_cli::usage_error(app, why);
  if (auto why = gcl_cli::needs_launcher(o.transport, job, o.world_size, argv[0], " --bind none");
      !why.empty())
    return gcl_cli::usage_error(app, why);
  std::string const how =
      o.transport + (job ? " (one process per rank)" : " (threads of one process)");
  if (job) bench::detail::bind_rank(o.bind, job->rank, job->size);

  std::uint64_t wrong = 0;
  try {
    auto const wrongs = gcl_cli::run_ranks(
        o.transport, job, o.world_size,
        std::chrono::milliseconds(static_cast<long long>(o.timeout_s * 1000)),
        [&](auto& comm) -> std::uint64_t {
          if (!job) bench::detail::bind_rank(o.bind, comm.rank(), comm.size());
          using transport = std::remove_cvref_t<decltype(comm.transport())>;
          if constexpr (gcl::forkable_transport<transport>)
            return with_algorithm(comm, o, how);
          else
            throw gcl::usage_error("--transport " + o.transport +
                                   ": this transport has no non-blocking collectives");
        });
    wrong = wrongs[0];
  } catch (std::exception const& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  }
  return wrong ? 1 : 0;
}
