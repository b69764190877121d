// Instantiates gcl's templates, so that the header check's warnings (-Wconversion,
// -Wsign-conversion, -Wshadow, ...) look at their bodies: a TU that only includes a header
// checks none of a template's code until something uses it. Only compiled (by the front end,
// -fsyntax-only: test/headers/CMakeLists.txt), never linked nor run.
//
// Every blocking collective (in place and out of place) with every algorithm that implements
// it, for float, double, int32 and int64 and every built-in reduction operator (minloc and
// maxloc on value_index, and a user operator, commutative or not); the non-blocking
// collectives (default algorithms), the communicator's point-to-point members, split, dup,
// spawn, calibrate and the cost model; all of it over each transport: inproc, counting<inproc>,
// shm and, with TCP (GCL_HEADERS_TCP), tcp and hybrid.
//
// -DGCL_HEADERS_TRANSPORT=<type> instantiates it for that transport only (by default: every
// one), so that the header check compiles the transports in parallel TUs.

#include <gcl/gcl.hpp>
#include <gcl/transport/shm.hpp>
#if defined(GCL_HEADERS_TCP)
#include <gcl/transport/hybrid.hpp>
#include <gcl/transport/tcp.hpp>
#endif

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

namespace {

// A user operator that is not declared commutative (tree and direct keep rank order for it).
struct first_plus_second {
  template <class T>
  constexpr T operator()(T const& a, T const& b) const {
    return static_cast<T>(a + b);
  }
};

template <class Alg, class Op, class T>
constexpr bool accepts = gcl::reduction_op<Op, T> &&
                         (!Alg::needs_commutative || gcl::commutative_op<Op, T>);

// The collectives that take an operator.
template <class Comm, class Alg, class T, class Op>
void reducing(Comm& comm, Alg const& alg, Op const& op) {
  if constexpr (accepts<Alg, Op, T>) {
    std::vector<T> v(8), out(8), mine(2);
    std::vector<std::size_t> counts(4, 2);
    if constexpr (gcl::all_reduce_algorithm<Alg, Comm, T, Op>) {
      gcl::all_reduce(comm, v, op, alg);
      gcl::all_reduce(comm, std::span<T const>(v), out, op, alg);
      T one{};
      gcl::all_reduce(comm, one, op, alg);
    }
    if constexpr (gcl::reduce_algorithm<Alg, Comm, T, Op>) {
      gcl::reduce(comm, v, 0, op, alg);
      gcl::reduce(comm, std::span<T const>(v), out, 0, op, alg);
    }
    if constexpr (gcl::reduce_scatter_algorithm<Alg, Comm, T, Op>)
      gcl::reduce_scatter(comm, v, mine, op, alg);
    if constexpr (gcl::reduce_scatterv_algorithm<Alg, Comm, T, Op>)
      gcl::reduce_scatterv(comm, v, mine, counts, op, alg);
    if constexpr (gcl::scan_algorithm<Alg, Comm, T, Op>) gcl::scan(comm, v, op, alg);
    if constexpr (gcl::exscan_algorithm<Alg, Comm, T, Op>) gcl::exscan(comm, v, op, alg);
  }
}

// The collectives that move data without combining it.
template <class Comm, class Alg, class T>
void moving(Comm& comm, Alg const& alg) {
  std::vector<T> v(8), all(32), mine(2);
  std::vector<std::size_t> counts(4, 2);
  if constexpr (gcl::broadcast_algorithm<Alg, Comm, T>) {
    gcl::broadcast(comm, v, 0, alg);
    gcl::broadcast(comm, std::span<T const>(v), all, 0, alg);
  }
  if constexpr (gcl::all_gather_algorithm<Alg, Comm, T>) gcl::all_gather(comm, v, all, alg);
  if constexpr (gcl::gather_algorithm<Alg, Comm, T>) gcl::gather(comm, v, all, 0, alg);
  if constexpr (gcl::scatter_algorithm<Alg, Comm, T>) gcl::scatter(comm, all, v, 0, alg);
  if constexpr (gcl::all_to_all_algorithm<Alg, Comm, T>) gcl::all_to_all(comm, v, all, alg);
  if constexpr (gcl::gatherv_algorithm<Alg, Comm, T>) gcl::gatherv(comm, mine, v, counts, 0, alg);
  if constexpr (gcl::scatterv_algorithm<Alg, Comm, T>) gcl::scatterv(comm, v, mine, counts, 0, alg);
  if constexpr (gcl::all_gatherv_algorithm<Alg, Comm, T>)
    gcl::all_gatherv(comm, mine, v, counts, alg);
  if constexpr (gcl::all_to_allv_algorithm<Alg, Comm, T>)
    gcl::all_to_allv(comm, v, counts, all, counts, alg);
}

template <class Comm, class Alg, class T>
void every_op(Comm& comm, Alg const& alg) {
  moving<Comm, Alg, T>(comm, alg);
  reducing<Comm, Alg, T>(comm, alg, gcl::sum{});
  reducing<Comm, Alg, T>(comm, alg, gcl::prod{});
  reducing<Comm, Alg, T>(comm, alg, gcl::min{});
  reducing<Comm, Alg, T>(comm, alg, gcl::max{});
  reducing<Comm, Alg, T>(comm, alg, gcl::logical_and{});
  reducing<Comm, Alg, T>(comm, alg, gcl::logical_or{});
  reducing<Comm, Alg, T>(comm, alg, gcl::logical_xor{});
  reducing<Comm, Alg, T>(comm, alg, first_plus_second{});
  reducing<Comm, Alg, T>(comm, alg, gcl::commutative(first_plus_second{}));
  reducing<Comm, Alg, gcl::value_index<T>>(comm, alg, gcl::minloc{});
  reducing<Comm, Alg, gcl::value_index<T>>(comm, alg, gcl::maxloc{});
  if constexpr (std::is_floating_point_v<T>) {
    reducing<Comm, Alg, T>(comm, alg, gcl::avg{});
  } else {
    reducing<Comm, Alg, T>(comm, alg, gcl::bit_and{});
    reducing<Comm, Alg, T>(comm, alg, gcl::bit_or{});
    reducing<Comm, Alg, T>(comm, alg, gcl::bit_xor{});
  }
}

template <class Comm, class Alg>
void every_type(Comm& comm, Alg const& alg) {
  every_op<Comm, Alg, float>(comm, alg);
  every_op<Comm, Alg, double>(comm, alg);
  every_op<Comm, Alg, std::int32_t>(comm, alg);
  every_op<Comm, Alg, std::int64_t>(comm, alg);
  if constexpr (gcl::barrier_algorithm<Alg, Comm>) gcl::barrier(comm, alg);
  gcl::cost_model const model{};
  if constexpr (gcl::scheduled_algorithm<Alg>) (void)model.predict(alg, comm.size(), 1024, 4);
}

// Non-blocking collectives (each with its default algorithm) and the communicator's own members.
template <class Comm, class T>
void communicator_calls(Comm& comm) {
  std::vector<T> v(8), all(32), mine(2);
  std::vector<std::size_t> counts(4, 2);
  std::vector<gcl::collective_request> r;
  r.push_back(gcl::iall_reduce(comm, v, gcl::sum{}));
  r.push_back(gcl::ireduce(comm, v, 0, gcl::max{}));
  r.push_back(gcl::ibroadcast(comm, v, 0));
  r.push_back(gcl::iscan(comm, v, gcl::sum{}));
  r.push_back(gcl::iexscan(comm, v, gcl::sum{}));
  r.push_back(gcl::iall_gather(comm, v, all));
  r.push_back(gcl::igather(comm, v, all, 0));
  r.push_back(gcl::iscatter(comm, all, v, 0));
  r.push_back(gcl::iall_to_all(comm, v, all));
  r.push_back(gcl::ireduce_scatter(comm, v, mine, gcl::sum{}));
  r.push_back(gcl::igatherv(comm, mine, v, counts, 0));
  r.push_back(gcl::iscatterv(comm, v, mine, counts, 0));
  r.push_back(gcl::iall_gatherv(comm, mine, v, counts));
  r.push_back(gcl::iall_to_allv(comm, v, counts, all, counts));
  r.push_back(gcl::ireduce_scatterv(comm, v, mine, counts, gcl::sum{}));
  r.push_back(gcl::ibarrier(comm));
  for (auto& q : r) q.wait();

  comm.send(1, v);
  comm.recv(1, v);
  comm.send(1, T{});
  T one = comm.template recv<T>(1);
  comm.sendrecv(1, v, 1, mine);
  comm.sendrecv_reduce(1, std::span<T const>(v), 1, std::span<T>(v), gcl::sum{});
  auto s = comm.isend(1, one);
  auto t = comm.irecv(1, one);
  s.wait();
  (void)t.test();
  (void)comm.template scratch<T>(8, 1);
}

template <class Comm>
void every_algorithm(Comm& comm) {
  every_type(comm, gcl::tree{});
  every_type(comm, gcl::ring{});
  every_type(comm, gcl::direct{});
  every_type(comm, gcl::parameter_server{});
  every_type(comm, gcl::recursive_doubling{});
  every_type(comm, gcl::halving_doubling{});
  every_type(comm, gcl::automatic{});
  every_type(comm, gcl::by_size{});
  communicator_calls<Comm, float>(comm);
  communicator_calls<Comm, double>(comm);
  communicator_calls<Comm, std::int32_t>(comm);
  communicator_calls<Comm, std::int64_t>(comm);
  std::optional<Comm> part = comm.split(comm.rank() % 2, comm.rank());
  Comm copy = comm.dup();
  (void)part;
  (void)copy;
  (void)gcl::calibrate(comm);
  // Buffers in the pool, where the transport has one (shm, hybrid).
  if constexpr (requires { comm.transport().template allocate<float>(1); }) {
    auto pooled = comm.transport().template allocate<float>(8);
    gcl::all_reduce(comm, pooled, gcl::sum{});
    std::span<float const> read_only = std::as_const(pooled);
    (void)read_only;
  }
}

// Everything above, for one transport, through spawn as a user starts it.
template <class Transport>
void with(typename Transport::options const& opts = {}) {
  gcl::spawn<Transport>(
      2, [](gcl::communicator<Transport>& comm) { every_algorithm(comm); }, opts);
  (void)gcl::spawn<Transport>(
      2, [](gcl::communicator<Transport>& comm) { return comm.rank(); }, opts);
}

}  // namespace

// Not static: unused, it would be a warning.
void gcl_headers_instantiate() {
#if defined(GCL_HEADERS_TRANSPORT)
  with<GCL_HEADERS_TRANSPORT>();
#else
  with<gcl::inproc_transport>();
  with<gcl::counting<gcl::inproc_transport>>();
  with<gcl::shm_transport>();
#if defined(GCL_HEADERS_TCP)
  with<gcl::tcp_transport>();
  with<gcl::hybrid_transport>();
#endif
#endif
}
