// The Gloo peer of gcl's sweeps: Gloo is the library torch.distributed runs collectives on
// when the tensors live on the CPU. The same sizes, data, result check, timing (back to back,
// or --barrier) and columns as gcl's programs and the Open MPI peer (benchmark/common.hpp), on
// gloo::allreduce, gloo::broadcast, gloo::allgather and gloo::alltoall, called as torch's
// ProcessGroupGloo calls them: fresh options per call with a new tag, in-place all_reduce with
// Gloo's default algorithm (ring), sum through gloo::sum<T>. Gloo has no reduce_scatter with
// this interface (nor has torch's Gloo backend one of its own), so that program is not built.
// Built once per collective with BENCH_COLLECTIVE set.
//
// One process per rank over TCP (gloo::transport::tcp), started by tools/gcl-launch, whose
// GCL_RANK and GCL_WORLD_SIZE it reads. The ranks meet through a gloo::rendezvous::FileStore in
// a directory named after the launch's GCL_TOKEN (or --store), which rank 0 removes once every
// rank is connected.
//
//   tools/gcl-launch -p 2 -- build-bench/benchmark/gloo/all_reduce --max-bytes 64M

#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/alltoall.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/config.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/transport/tcp/device.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <initializer_list>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "../bind.hpp"
#include "../common.hpp"
#include "common/cli.hpp"

namespace {

constexpr bench::collective kind = bench::collective::BENCH_COLLECTIVE;
static_assert(kind != bench::collective::reduce_scatter, "Gloo has no reduce_scatter to compare");

using context_ptr = std::shared_ptr<gloo::Context>;
using reduce_fn = void (*)(void*, void const*, void const*, std::size_t);

// Gloo's element-wise functions, as torch's ProcessGroupGloo picks them.
template <class T>
reduce_fn gloo_op(std::string const& op) {
  if (op == "sum") return &gloo::sum<T>;
  if (op == "prod") return &gloo::product<T>;
  if (op == "min") return &gloo::min<T>;
  return &gloo::max<T>;
}

// Every Gloo operation carries a tag; torch takes a new one for every collective.
class tags {
 public:
  std::uint32_t next() { return next_++; }

 private:
  std::uint32_t next_ = 0;
};

void barrier(context_ptr const& ctx, tags& t) {
  gloo::BarrierOptions opts(ctx);
  opts.setTag(t.next());
  gloo::barrier(opts);
}

template <class T>
void run_once(context_ptr const& ctx, tags& t, bench::buffers<T>& b, bench::options const& o) {
  switch (kind) {
    case bench::collective::all_reduce: {
      gloo::AllreduceOptions opts(ctx);
      opts.setOutput(b.in.data(), b.in.size());  // in place: the output is also the input
      opts.setReduceFunction(gloo_op<T>(o.op));
      opts.setTag(t.next());
      gloo::allreduce(opts);
      break;
    }
    case bench::collective::broadcast: {
      gloo::BroadcastOptions opts(ctx);
      opts.setOutput(b.in.data(), b.in.size());  // in place on the root too
      opts.setRoot(o.root);
      opts.setTag(t.next());
      gloo::broadcast(opts);
      break;
    }
    case bench::collective::all_gather: {
      gloo::AllgatherOptions opts(ctx);
      opts.setInput(b.in.data(), b.in.size());
      opts.setOutput(b.out.data(), b.out.size());
      opts.setTag(t.next());
      gloo::allgather(opts);
      break;
    }
    case bench::collective::all_to_all: {
      gloo::AlltoallOptions opts(ctx);
      opts.setInput(b.in.data(), b.in.size());
      opts.setOutput(b.out.data(), b.out.size());
      opts.setTag(t.next());
      gloo::alltoall(opts);
      break;
    }
    case bench::collective::reduce_scatter:
      break;
  }
}

// Element-wise maximum (doubles) or sum (counts) of every rank's values, on every rank: the
// harness's bookkeeping, outside the timed loop.
template <class T>
void reduce_all(context_ptr const& ctx, tags& t, std::vector<T>& v, reduce_fn f) {
  gloo::AllreduceOptions opts(ctx);
  opts.setOutput(v.data(), v.size());
  opts.setReduceFunction(f);
  opts.setTag(t.next());
  gloo::allreduce(opts);
}

int from_rank0(context_ptr const& ctx, tags& t, int n) {
  gloo::BroadcastOptions opts(ctx);
  opts.setOutput(&n, 1);
  opts.setRoot(0);
  opts.setTag(t.next());
  gloo::broadcast(opts);
  return n;
}

template <class T>
int sweep(context_ptr const& ctx, bench::options const& o) {
  int const rank = ctx->rank, world = ctx->size;
  tags t;
  bench::printer out(
      o, kind, world,
      "Gloo " + std::to_string(GLOO_VERSION_MAJOR) + "." + std::to_string(GLOO_VERSION_MINOR) +
          " tcp",
      kind == bench::collective::all_reduce ? "Gloo default (ring)" : "Gloo default");
  if (rank == 0) out.begin();
  for (std::uint64_t n : bench::sweep_counts(o, kind, world)) {
    bench::buffers<T> b(kind, n, world);
    std::vector<std::uint64_t> wrong{0};
    if (o.check) {
      bench::fill_check_input<T>(kind, o.op, rank, world, o.root, b.in);
      run_once(ctx, t, b, o);
      wrong[0] = bench::count_wrong<T>(kind, o.op, rank, world, o.root, b.result(),
                                       o.inject_wrong && rank == 0);
      reduce_all(ctx, t, wrong, &gloo::sum<std::uint64_t>);
      if (wrong[0] && rank == 0)
        std::fprintf(stderr, "error: Gloo %s of %llu bytes: %llu wrong elements over all ranks\n",
                     std::string(bench::name_of(kind)).c_str(),
                     static_cast<unsigned long long>(n * sizeof(T)),
                     static_cast<unsigned long long>(wrong[0]));
    }
    bench::fill_timed_input<T>(o.op, b.in);
    auto const call = [&] { run_once(ctx, t, b, o); };
    double const per_call = bench::warm_up(o.warmup, call);
    int const calls = from_rank0(ctx, t, bench::timed_calls(o, per_call));
    bench::loop_record slowest = bench::time_calls(
        o, rank, world, calls, [&] { barrier(ctx, t); }, call);
    reduce_all(ctx, t, slowest, &gloo::max<double>);
    if (rank == 0) out.print(out.make_row(n, slowest, wrong[0]));
  }
  if (rank == 0) out.end();
  return out.total_wrong() ? 1 : 0;
}

int env_int(std::initializer_list<char const*> names, char const* what) {
  for (char const* name : names)
    if (char const* v = std::getenv(name); v && *v) return std::stoi(v);
  throw std::runtime_error(
      std::string("no ") + what +
      " in the environment: start the ranks with tools/gcl-launch -p P -- ...");
}

}  // namespace

int main(int argc, char** argv) {
  bench::options o;
  // Not pinned by default, unlike gcl's and Open MPI's ranks: Gloo's TCP transport completes
  // receives on its device's event-loop thread, so a rank pinned to one core has two threads
  // taking turns on it, and each hand-over waits for a time slice (4 ms per small all_reduce
  // instead of 0.25 ms on a 2-core machine). torch.distributed does not pin its ranks either.
  std::string store, addr = "127.0.0.1", bind = "none";
  double timeout_s = 60;
  CLI::App app{"Gloo " + std::string(bench::name_of(kind)) +
               " sweep with nccl-tests columns (the peer of gcl's benchmark/" +
               std::string(bench::name_of(kind)) +
               "), one process per rank: tools/gcl-launch -p P -- " + argv[0]};
  gcl_cli::setup(app, "gloo " + std::string(bench::name_of(kind)));
  bench::add_common_options(app, o);
  app.add_option("--store", store,
                 "directory of the ranks' rendezvous (gloo FileStore; default: one under "
                 "$TMPDIR or /tmp named after GCL_TOKEN, removed once connected)");
  app.add_option("--addr", addr, "address this rank listens on (Gloo's tcp transport)")
      ->capture_default_str();
  app.add_option("--bind", bind,
                 "pin each rank (and Gloo's event-loop thread with it) to a core: none (as torch), "
                 "auto (when ranks <= cores), core")
      ->check(CLI::IsMember({"auto", "core", "none"}))
      ->capture_default_str();
  app.add_option("--timeout", timeout_s, "seconds any Gloo operation may wait")
      ->check(CLI::Range(0.001, 1e7))
      ->capture_default_str();
  GCL_CLI_PARSE(app, argc, argv);
  if (auto why = bench::check_options(o); !why.empty()) return gcl_cli::usage_error(app, why);

  int rank = 0;
  try {
    rank = env_int({"GCL_RANK", "RANK"}, "GCL_RANK");
    int const world = env_int({"GCL_WORLD_SIZE", "WORLD_SIZE"}, "GCL_WORLD_SIZE");
    if (o.root < 0 || o.root >= world)
      throw std::invalid_argument("--root " + std::to_string(o.root) +
                                  " is not a rank of a world of " + std::to_string(world));
    bool const own_store = store.empty();
    if (own_store) {
      char const* token = std::getenv("GCL_TOKEN");
      if (!token || !*token)
        throw std::runtime_error("no GCL_TOKEN to name the rendezvous directory: give --store DIR");
      char const* tmp = std::getenv("TMPDIR");
      store = std::string(tmp && *tmp ? tmp : "/tmp") + "/gcl-gloo-" + token;
    }
    std::error_code ec;  // every rank creates it: whoever comes first wins, the others see it
    std::filesystem::create_directories(store, ec);

    // Binding first: Gloo's device starts its event-loop thread, which inherits the core.
    bench::detail::bind_rank(bind, rank, world);
    gloo::transport::tcp::attr attr;
    attr.hostname = addr;
    auto dev = gloo::transport::tcp::CreateDevice(attr);
    auto ctx = std::make_shared<gloo::rendezvous::Context>(rank, world);
    ctx->setTimeout(std::chrono::milliseconds(static_cast<long long>(timeout_s * 1000)));
    {
      gloo::rendezvous::FileStore fs(store);
      ctx->connectFullMesh(fs, dev);
    }
    // Every rank has read every address once all are past this barrier: the files can go.
    {
      gloo::BarrierOptions opts(ctx);
      opts.setTag(~0u);
      gloo::barrier(opts);
    }
    if (own_store && rank == 0) std::filesystem::remove_all(store, ec);

    context_ptr c = ctx;
    int code = 0;
    if (o.dtype == "float")
      code = sweep<float>(c, o);
    else if (o.dtype == "double")
      code = sweep<double>(c, o);
    else if (o.dtype == "int32")
      code = sweep<std::int32_t>(c, o);
    else
      code = sweep<std::int64_t>(c, o);
    return code;
  } catch (std::exception const& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "error: rank %d: %s\n", rank, e.what());
    return 2;
  }
}
