// The Open MPI peer of gcl's sweeps: the same sizes, data, result check, timing method (back
// to back, or --barrier) and columns (benchmark/common.hpp), on MPI_Allreduce, MPI_Bcast,
// MPI_Reduce_scatter_block, MPI_Allgather and MPI_Alltoall. Built once per collective with
// BENCH_COLLECTIVE set.
//
//   mpirun -n 4 --mca btl self,vader benchmark/mpi/mpi_all_reduce --min-bytes 8 --max-bytes 64M

#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "../common.hpp"
#include "common/cli.hpp"

namespace {

constexpr bench::collective kind = bench::collective::BENCH_COLLECTIVE;

template <class T>
MPI_Datatype mpi_type();
template <>
MPI_Datatype mpi_type<float>() {
  return MPI_FLOAT;
}
template <>
MPI_Datatype mpi_type<double>() {
  return MPI_DOUBLE;
}
template <>
MPI_Datatype mpi_type<std::int32_t>() {
  return MPI_INT32_T;
}
template <>
MPI_Datatype mpi_type<std::int64_t>() {
  return MPI_INT64_T;
}

MPI_Op mpi_op(std::string const& op) {
  if (op == "sum") return MPI_SUM;
  if (op == "prod") return MPI_PROD;
  if (op == "min") return MPI_MIN;
  return MPI_MAX;
}

template <class T>
using buffers = bench::buffers<T>;

template <class T>
void run_once(buffers<T>& b, bench::options const& o, int world) {
  MPI_Datatype t = mpi_type<T>();
  int n_in = static_cast<int>(b.in.size());
  switch (kind) {
    case bench::collective::all_reduce:
      MPI_Allreduce(MPI_IN_PLACE, b.in.data(), n_in, t, mpi_op(o.op), MPI_COMM_WORLD);
      break;
    case bench::collective::broadcast:
      MPI_Bcast(b.in.data(), n_in, t, o.root, MPI_COMM_WORLD);
      break;
    case bench::collective::reduce_scatter:
      MPI_Reduce_scatter_block(b.in.data(), b.out.data(), static_cast<int>(b.out.size()), t,
                               mpi_op(o.op), MPI_COMM_WORLD);
      break;
    case bench::collective::all_gather:
      MPI_Allgather(b.in.data(), n_in, t, b.out.data(), n_in, t, MPI_COMM_WORLD);
      break;
    case bench::collective::all_to_all:
      MPI_Alltoall(b.in.data(), n_in / world, t, b.out.data(), n_in / world, t, MPI_COMM_WORLD);
      break;
  }
}

template <class T>
int sweep(bench::options const& o, int rank, int world) {
  std::string impl = "Open MPI";
  if (char const* l = std::getenv("BENCH_MPI_TRANSPORT")) impl += std::string(" ") + l;
  bench::printer out(o, kind, world, impl, "MPI default");
  if (rank == 0) out.begin();
  for (std::uint64_t n : bench::sweep_counts(o, kind, world)) {
    buffers<T> b(kind, n, world);
    std::uint64_t wrong = 0;
    if (o.check) {
      bench::fill_check_input<T>(kind, o.op, rank, world, o.root, b.in);
      run_once(b, o, world);
      std::uint64_t mine = bench::count_wrong<T>(kind, o.op, rank, world, o.root, b.result(),
                                                 o.inject_wrong && rank == 0);
      MPI_Reduce(&mine, &wrong, 1, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
    }
    bench::fill_timed_input<T>(o.op, b.in);
    auto const call = [&] { run_once(b, o, world); };
    double const per_call = bench::warm_up(o.warmup, call);
    int calls = bench::timed_calls(o, per_call);  // rank 0's count, for every rank
    MPI_Bcast(&calls, 1, MPI_INT, 0, MPI_COMM_WORLD);
    bench::loop_record times = bench::time_calls(
        o, rank, world, calls, [] { MPI_Barrier(MPI_COMM_WORLD); }, call);
    bench::loop_record slowest(times.size());
    MPI_Reduce(times.data(), slowest.data(), static_cast<int>(times.size()), MPI_DOUBLE, MPI_MAX, 0,
               MPI_COMM_WORLD);
    if (rank == 0) out.print(out.make_row(n, slowest, wrong));
  }
  if (rank == 0) out.end();
  return out.total_wrong() ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  // The command line first: --help, --version and errors before MPI starts anything.
  bench::options o;
  CLI::App app{"Open MPI " + std::string(bench::name_of(kind)) +
               " sweep with nccl-tests columns (the peer of gcl's benchmark/" +
               std::string(bench::name_of(kind)) + "), under mpirun"};
  gcl_cli::setup(app, "mpi " + std::string(bench::name_of(kind)));
  bench::add_common_options(app, o);
  GCL_CLI_PARSE(app, argc, argv);
  if (auto why = bench::check_options(o); !why.empty()) return gcl_cli::usage_error(app, why);

  MPI_Init(&argc, &argv);
  int rank = 0, world = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  int code = 0;
  try {
    if (o.root < 0 || o.root >= world)
      throw CLI::ValidationError("--root", "root " + std::to_string(o.root) +
                                               " is not a rank of a world of " +
                                               std::to_string(world));
    if (o.dtype == "float")
      code = sweep<float>(o, rank, world);
    else if (o.dtype == "double")
      code = sweep<double>(o, rank, world);
    else if (o.dtype == "int32")
      code = sweep<std::int32_t>(o, rank, world);
    else
      code = sweep<std::int64_t>(o, rank, world);
  } catch (std::exception const& e) {
    if (rank == 0) std::fprintf(stderr, "error: %s\n", e.what());
    code = 2;
  }
  MPI_Finalize();
  return code;
}
