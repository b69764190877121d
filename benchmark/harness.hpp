#pragma once
/// \file
/// The gcl side of the sweeps: command line, algorithm table, transports, synchronised timing.
/// Each program in benchmark/ is a few lines describing one collective:
///
///     struct all_reduce_call {
///       static constexpr bench::collective kind = bench::collective::all_reduce;
///       static constexpr std::string_view default_algorithm = "ring";
///       template <class Alg, class Comm, class T, class Op>
///       static constexpr bool supports = gcl::all_reduce_algorithm<Alg, Comm, T, Op>;
///       // Buffers: a bench::buffers<T, Storage> (Storage: a vector, or memory of a pool)
///       template <class Comm, class Buffers, class Op, class Alg>
///       static void run(Comm& c, Buffers& b, Op const& op, int, Alg const& a) {
///         gcl::all_reduce(c, b.in, op, a);
///       }
///     };
///     int main(int argc, char** argv) { return bench::run<all_reduce_call>(argc, argv); }
///
/// Timing, per size: one untimed call on integer-valued data whose result is checked exactly
/// (#wrong, summed over ranks); `--warmup` untimed calls, from which rank 0 decides how many
/// calls to time (up to `--iters`, about `--max-seconds` in all) and tells the others; then the
/// timed calls, back to back after one barrier (or, with `--barrier`, a barrier before each):
/// bench::time_calls. Rank 0 takes, per call, the slowest rank's time and reports the median
/// over calls, and the slowest rank's total over the number of calls (the mean).

#include <gcl/algorithm/automatic.hpp>
#include <gcl/algorithm/by_size.hpp>
#include <gcl/algorithm/direct.hpp>
#include <gcl/algorithm/halving_doubling.hpp>
#include <gcl/algorithm/hierarchical.hpp>
#include <gcl/algorithm/parameter_server.hpp>
#include <gcl/algorithm/recursive_doubling.hpp>
#include <gcl/algorithm/ring.hpp>
#include <gcl/algorithm/tree.hpp>
#include <gcl/collective/all_gather.hpp>
#include <gcl/collective/all_reduce.hpp>
#include <gcl/collective/all_to_all.hpp>
#include <gcl/collective/broadcast.hpp>
#include <gcl/collective/reduce_scatter.hpp>
#include <gcl/communicator.hpp>
#include <gcl/cost_model.hpp>
#include <gcl/op.hpp>
#include <gcl/spawn.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <thread>
#include <tuple>
#include <type_traits>
#include <vector>

#include "bind.hpp"
#include "common.hpp"
#include "common/cli.hpp"
#include "common/transports.hpp"

namespace bench {

/// Every algorithm the `--algorithm` option knows, in the order `--help` lists them.
using algorithm_list =
    std::tuple<gcl::tree, gcl::ring, gcl::direct, gcl::parameter_server, gcl::recursive_doubling,
               gcl::halving_doubling, gcl::automatic, gcl::by_size>;

/// "tree, ring, direct, ..." — the names `--algorithm` accepts.
inline std::string algorithm_names() {
  std::string s;
  std::apply([&](auto... a) { ((s += (s.empty() ? "" : ", ") + std::string(a.name)), ...); },
             algorithm_list{});
  return s;
}

/// gcl-specific options on top of the shared ones.
struct gcl_options : options {
  std::string transport;  ///< empty: tcp under a launcher of more than one rank, else inproc
  std::string algorithm;  ///< empty: the collective's default
  int world_size = 2;
  double timeout_s = 60;
  std::string bind = "auto";  ///< auto (as Open MPI: core if P <= cores, else none), core, none
  bool calibrate = false;     ///< calibrate the cost model on the live transport first
  std::uint64_t ring_segment_bytes = 0;  ///< ring's segment_bytes (0: unsegmented)
  std::uint64_t ring_block_bytes = 0;    ///< ring's block_bytes (0: the whole buffer at once)
  bool pool = false;  ///< message buffers from the transport's pool (shm_transport::allocate)
};

namespace detail {

// User tags for the harness's own messages (never a collective's): the top of the user range.
inline constexpr gcl::tag barrier_tag{gcl::tag_user_limit - 3};
inline constexpr gcl::tag times_tag{gcl::tag_user_limit - 2};
inline constexpr gcl::tag calls_tag{gcl::tag_user_limit - 1};

// Dissemination barrier on point-to-point messages: ceil(log2 P) rounds, and every rank leaves
// after the same number of message latencies, so ranks start timed iterations nearly together.
template <class Comm>
void barrier(Comm& comm) {
  int const p = comm.size(), me = comm.rank();
  char out = 0, in = 0;
  for (int k = 1; k < p; k *= 2)
    comm.sendrecv((me + k) % p, out, (me - k + p) % p, in, barrier_tag);
}

// Every rank gets rank 0's `n` (the number of timed calls: all ranks must make the same).
template <class Comm>
int from_rank0(Comm& comm, int n) {
  if (comm.rank() != 0) return comm.template recv<int>(0, calls_tag);
  for (int r = 1; r < comm.size(); ++r) comm.send(r, n, calls_tag);
  return n;
}

// Rank 0 gets the element-wise max of every rank's timed loop (loop_record: per call, then the
// total) and the sum of the wrong counts; other ranks send theirs.
template <class Comm>
std::uint64_t collect(Comm& comm, loop_record& times, std::uint64_t wrong) {
  if (comm.rank() != 0) {
    comm.send(0, times, times_tag);
    comm.send(0, wrong, times_tag);
    return wrong;
  }
  std::vector<double> theirs(times.size());
  for (int r = 1; r < comm.size(); ++r) {
    comm.recv(r, theirs, times_tag);
    max_into(times, theirs);
    wrong += comm.template recv<std::uint64_t>(r, times_tag);
  }
  return wrong;
}

// The cost model's all_reduce prediction in microseconds, or NaN where it has none.
template <class Call, class Alg>
double predicted_us(gcl::cost_model const& m, Alg const& alg, int p, std::uint64_t count,
                    std::size_t es) {
  if constexpr (Call::kind == collective::all_reduce &&
                requires { m.predict(alg, p, std::size_t{}, std::size_t{}); })
    return m.predict(alg, p, static_cast<std::size_t>(count * es), es) * 1e6;
  else
    return std::numeric_limits<double>::quiet_NaN();
}

// `automatic` decides from the same model the prediction column shows.
template <class Alg>
Alg with_model(Alg alg, gcl::cost_model const& m) {
  if constexpr (requires { alg.model = m; }) alg.model = m;
  return alg;
}

template <class Call, class Comm, class T, class Op, class Alg>
std::uint64_t sweep(Comm& comm, gcl_options const& o, Op const& op, Alg const& alg0,
                    std::string const& impl) {
  gcl::cost_model model{};
  if (o.calibrate) model = gcl::calibrate(comm);
  Alg const alg = with_model(alg0, model);
  int const me = comm.rank(), p = comm.size();
  constexpr collective kind = Call::kind;
  printer out(o, kind, p, impl, std::string(Alg::name));
  if (me == 0) out.begin();
  auto one_size = [&](std::uint64_t n, auto& b) {
    std::uint64_t wrong = 0;
    if (o.check) {
      fill_check_input<T>(kind, o.op, me, p, o.root, b.in);
      Call::run(comm, b, op, o.root, alg);
      wrong = count_wrong<T>(kind, o.op, me, p, o.root, b.result(), o.inject_wrong && me == 0);
    }
    fill_timed_input<T>(o.op, b.in);
    auto const call = [&] { Call::run(comm, b, op, o.root, alg); };
    double const per_call = warm_up(o.warmup, call);
    // An algorithm that tunes itself (automatic) first settles, as in a training loop's first
    // iterations: every rank settles on the same call, so every rank leaves this loop together.
    if constexpr (kind == collective::all_reduce &&
                  requires { alg.tuned_choice(comm, std::size_t{}, sizeof(T), true); })
      while (!alg.tuned_choice(comm, static_cast<std::size_t>(n), sizeof(T),
                               gcl::enable_commutative<Op>))
        call();
    int const calls = from_rank0(comm, timed_calls(o, per_call));
    loop_record times = time_calls(
        o, me, comm.size(), calls, [&] { barrier(comm); }, call);
    wrong = collect(comm, times, wrong);
    if (me == 0) {
      row r = out.make_row(n, times, wrong);
      r.pred_us = predicted_us<Call>(model, alg, p, n, sizeof(T));
      out.print(r);
    }
  };
  for (std::uint64_t n : sweep_counts(o, kind, p)) {
    // --pool: the buffers in the transport's pool, which the peers read in place (checked in run)
    if constexpr (requires { comm.transport().template allocate<T>(std::size_t{1}); }) {
      if (o.pool) {
        buffers<T, gcl::shm_buffer<T>> b(
            kind, n, p, [&](std::size_t k) { return comm.transport().template allocate<T>(k); });
        one_size(n, b);
        continue;
      }
    }
    buffers<T> b(kind, n, p);
    one_size(n, b);
  }
  if (me == 0) out.end();
  return out.total_wrong();
}

template <class T>
struct type_tag {
  using type = T;
};

template <class F>
void with_dtype(std::string_view t, F&& f) {
  if (t == "float")
    f(type_tag<float>{});
  else if (t == "double")
    f(type_tag<double>{});
  else if (t == "int32")
    f(type_tag<std::int32_t>{});
  else
    f(type_tag<std::int64_t>{});
}

// Non-reducing collectives ignore the op: only sum is compiled for them (each operator is a
// copy of every algorithm over every transport, most of a sweep program's compile time).
template <bool Reduces, class F>
void with_op(std::string_view op, F&& f) {
  if constexpr (!Reduces)
    f(gcl::sum{});
  else if (op == "sum")
    f(gcl::sum{});
  else if (op == "prod")
    f(gcl::prod{});
  else if (op == "min")
    f(gcl::min{});
  else
    f(gcl::max{});
}

// Runs the sweep on this rank's communicator; throws usage_error for an algorithm that is
// unknown or does not implement the collective.
template <class Call, class Comm>
std::uint64_t run_rank(Comm& comm, gcl_options const& o, std::string const& impl) {
  std::uint64_t wrong = 0;
  std::string const name = o.algorithm.empty() ? std::string(Call::default_algorithm) : o.algorithm;
  with_dtype(o.dtype, [&](auto t) {
    using T = typename decltype(t)::type;
    with_op<reduces(Call::kind)>(o.op, [&](auto op) {
      using Op = decltype(op);
      bool known = false, ran = false;
      std::string valid;
      std::apply(
          [&](auto... alg) {
            auto one = [&](auto a) {
              using Alg = decltype(a);
              if constexpr (std::is_same_v<Alg, gcl::ring>) {
                a.segment_bytes = static_cast<std::size_t>(o.ring_segment_bytes);
                a.block_bytes = static_cast<std::size_t>(o.ring_block_bytes);
              }
              if constexpr (Call::template supports<Alg, Comm, T, Op>) {
                valid += (valid.empty() ? "" : ", ") + std::string(Alg::name);
                if (Alg::name == name) {
                  known = ran = true;
                  wrong = sweep<Call, Comm, T, Op>(comm, o, op, a, impl);
                }
              } else if (Alg::name == name) {
                known = true;
              }
            };
            (one(alg), ...);
          },
          algorithm_list{});
      if (!known)
        throw gcl::usage_error("unknown algorithm '" + name +
                               "'; valid names: " + algorithm_names());
      if (!ran)
        throw gcl::usage_error("algorithm '" + name + "' does not implement " +
                               std::string(name_of(Call::kind)) + "; algorithms that do: " + valid);
    });
  });
  return wrong;
}

}  // namespace detail

/// main() of a gcl sweep program for the collective described by `Call`.
template <class Call>
int run(int argc, char** argv) {
  gcl_options o;
  std::string const cname(name_of(Call::kind));
  CLI::App app{"gcl " + cname +
               " sweep with nccl-tests columns (size, count, type, redop, root, time, algbw, "
               "busbw, #wrong) and the cost model's prediction. See doc/benchmarks.md; the "
               "flags of every gcl program: doc/cli.md."};
  gcl_cli::setup(app, cname);
  gcl_cli::add_transport_option(app, o.transport);
  std::vector<std::string> names;
  std::apply([&](auto... a) { (names.emplace_back(a.name), ...); }, algorithm_list{});
  app.add_option("-a,--algorithm", o.algorithm,
                 "one of: " + algorithm_names() +
                     " (default: " + std::string(Call::default_algorithm) + ")")
      ->check(CLI::IsMember(names));
  app.add_option("-p,--world-size", o.world_size,
                 "number of ranks (inproc; shm and tcp take it from the launcher)")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  app.add_option(
         "--bind", o.bind,
         "pin each rank to a core: auto (as Open MPI does: when ranks <= cores), core, none")
      ->check(CLI::IsMember({"auto", "core", "none"}))
      ->capture_default_str();
  app.add_option("--ring-segment", o.ring_segment_bytes,
                 "ring only: cut each step's message into segments of this many bytes, reducing "
                 "one while the next arrives (suffixes K, M; 0: whole chunks)")
      ->transform(CLI::AsSizeValue(false))
      ->capture_default_str();
  app.add_option("--ring-block", o.ring_block_bytes,
                 "ring only: all-reduce a buffer a block of this many bytes at a time, as by_size "
                 "runs ring (suffixes K, M; 0: the whole buffer at once)")
      ->transform(CLI::AsSizeValue(false))
      ->capture_default_str();
  app.add_flag("--pool", o.pool,
               "shm and auto: the message buffers in the transport's pool, which the other ranks "
               "of the host read in place (shm_transport::allocate; the pool is sized to fit "
               "them unless GCL_SHM_POOL_BYTES says otherwise)");
  app.add_flag("--calibrate", o.calibrate,
               "measure the cost model on this transport first (pred column, automatic)");
  app.add_option("--timeout", o.timeout_s, "seconds any blocking call may wait")
      ->check(CLI::Range(0.001, 1e7))
      ->capture_default_str();
  add_common_options(app, o);
  GCL_CLI_PARSE(app, argc, argv);
  if (auto why = check_options(o); !why.empty()) return gcl_cli::usage_error(app, why);
  auto const job = gcl_cli::launcher_world();
  if (auto why = gcl_cli::resolve_transport(o.transport, job, o.world_size, false); !why.empty())
    return gcl_cli::usage_error(app, why);
  // Processes are what shm and tcp are measured with: one per rank, started by a launcher.
  if (auto why = gcl_cli::needs_launcher(o.transport, job, o.world_size, argv[0]); !why.empty())
    return gcl_cli::usage_error(app, why);
  int const world = job ? job->size : o.world_size;
  if (o.root < 0 || o.root >= world)
    return gcl_cli::usage_error(app, "--root " + std::to_string(o.root) +
                                         " is not a rank of a world of " + std::to_string(world));
  // The pool holds the largest size's buffers (in and out), each rounded up to 64 bytes.
  if (o.pool)
    if (auto why = gcl_cli::use_pool(o.transport, 2 * o.max_bytes + (1u << 20)); !why.empty())
      return gcl_cli::usage_error(app, why);
  // A process is pinned before its transport starts (threads it starts inherit the mask).
  if (job) detail::bind_rank(o.bind, job->rank, job->size);

  std::uint64_t wrong = 0;
  try {
    std::string const label = "gcl " + o.transport + (o.pool ? " pool" : "");
    auto const wrongs = gcl_cli::run_ranks(
        o.transport, job, o.world_size,
        std::chrono::milliseconds(static_cast<long long>(o.timeout_s * 1000)), [&](auto& comm) {
          if (!job) detail::bind_rank(o.bind, comm.rank(), comm.size());
          return detail::run_rank<Call>(comm, o, label);
        });
    wrong = wrongs[0];
  } catch (std::exception const& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  }
  return wrong ? 1 : 0;
}

}  // namespace bench
