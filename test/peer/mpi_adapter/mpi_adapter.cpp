/// \file
/// The MPI adapter (mpi.h) over gcl: one `gcl::communicator<gcl::shm_transport>` per MPI_Comm,
/// each rank one process started by tools/gcl-launch. A test harness for running other
/// libraries' MPI test programs unchanged (test/peer/), not part of the library.
///
/// Reductions are gcl's typed calls, chosen by a runtime switch on the datatype and the
/// operator; collectives that only move data (broadcast, gather, scatter, all_gather,
/// all_to_all and their v forms) move `count * size` bytes as `std::byte`, so that only the
/// sizes of the send and receive types have to agree, as MPI's type signatures do for the
/// predefined types. MPI's displacements become a copy to or from a contiguous buffer, the
/// layout gcl's v collectives use. Whatever is not supported stops the program with a message
/// naming the call (`fail`); a gcl error does too.

#include "mpi.h"

#include <gcl/collective/nonblocking.hpp>
#include <gcl/gcl.hpp>
#include <gcl/transport/shm.hpp>

#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

namespace {

using comm_t = gcl::communicator<gcl::shm_transport>;

struct adapter_state {
  std::vector<std::unique_ptr<comm_t>> comms;  // by MPI_Comm; [0] is MPI_COMM_NULL
  std::map<MPI_Request, gcl::collective_request> requests;
  MPI_Request next_request = 1;
  bool initialized = false;
  bool finalized = false;
  int world_rank = -1;
};

adapter_state& state() {
  static adapter_state s;
  return s;
}

/// Stops this rank with a message naming the call: an unsupported use, a wrong argument, or an
/// error gcl threw. gcl-launch then stops the other ranks.
[[noreturn]] void fail(char const* call, std::string const& why) {
  std::fflush(stdout);
  std::fprintf(stderr, "mpi_adapter: rank %d: %s: %s\n", state().world_rank, call, why.c_str());
  std::fflush(stderr);
  std::_Exit(EXIT_FAILURE);
}

/// Runs `f`, turning an exception into `fail(call, ...)`.
template <class F>
int guarded(char const* call, F&& f) {
  if (!state().initialized || state().finalized)
    fail(call, state().finalized ? "called after MPI_Finalize" : "called before MPI_Init");
  try {
    f();
  } catch (std::exception const& e) {
    fail(call, e.what());
  }
  return MPI_SUCCESS;
}

comm_t& get_comm(MPI_Comm c, char const* call) {
  auto& comms = state().comms;
  if (c <= MPI_COMM_NULL || static_cast<std::size_t>(c) >= comms.size() || !comms[c])
    fail(call, c == MPI_COMM_NULL ? "MPI_COMM_NULL passed as the communicator"
                                  : "invalid communicator " + std::to_string(c));
  return *comms[c];
}

MPI_Comm add_comm(comm_t&& c) {
  auto& comms = state().comms;
  for (std::size_t i = 3; i < comms.size(); ++i)
    if (!comms[i]) {
      comms[i] = std::make_unique<comm_t>(std::move(c));
      return static_cast<MPI_Comm>(i);
    }
  comms.push_back(std::make_unique<comm_t>(std::move(c)));
  return static_cast<MPI_Comm>(comms.size() - 1);
}

// --- datatypes ----------------------------------------------------------------------------

struct type_entry {
  char const* name;
  std::size_t size;
};

template <class T, class I = int>
using pair_t = gcl::value_index<T, I>;

// Indexed by the MPI_Datatype values of mpi.h.
type_entry const types[] = {
    {"MPI_DATATYPE_NULL", 0},
    {"MPI_CHAR", sizeof(char)},
    {"MPI_SIGNED_CHAR", sizeof(signed char)},
    {"MPI_UNSIGNED_CHAR", sizeof(unsigned char)},
    {"MPI_BYTE", 1},
    {"MPI_SHORT", sizeof(short)},
    {"MPI_UNSIGNED_SHORT", sizeof(unsigned short)},
    {"MPI_INT", sizeof(int)},
    {"MPI_UNSIGNED", sizeof(unsigned)},
    {"MPI_LONG", sizeof(long)},
    {"MPI_UNSIGNED_LONG", sizeof(unsigned long)},
    {"MPI_LONG_LONG_INT", sizeof(long long)},
    {"MPI_UNSIGNED_LONG_LONG", sizeof(unsigned long long)},
    {"MPI_FLOAT", sizeof(float)},
    {"MPI_DOUBLE", sizeof(double)},
    {"MPI_LONG_DOUBLE", sizeof(long double)},
    {"MPI_2INT", sizeof(pair_t<int>)},
    {"MPI_SHORT_INT", sizeof(pair_t<short>)},
    {"MPI_LONG_INT", sizeof(pair_t<long>)},
    {"MPI_FLOAT_INT", sizeof(pair_t<float>)},
    {"MPI_DOUBLE_INT", sizeof(pair_t<double>)},
    {"MPI_LONG_DOUBLE_INT", sizeof(pair_t<long double>)},
};
constexpr int type_count = static_cast<int>(std::size(types));

std::string type_name(MPI_Datatype t) {
  if (t >= 0 && t < type_count) return types[t].name;
  return "datatype " + std::to_string(t);
}

/// The size in bytes of one element of `t`; fails on MPI_DATATYPE_NULL and unknown handles
/// (derived datatypes do not exist here).
std::size_t type_size(MPI_Datatype t, char const* call) {
  if (t <= MPI_DATATYPE_NULL || t >= type_count)
    fail(call, type_name(t) + " is not a datatype this adapter supports (only predefined ones)");
  return types[t].size;
}

std::size_t count_of(int count, char const* call, char const* what = "count") {
  if (count < 0) fail(call, std::string(what) + " " + std::to_string(count) + " is negative");
  return static_cast<std::size_t>(count);
}

/// `count` elements of `t`, in bytes.
std::size_t bytes_of(int count, MPI_Datatype t, char const* call) {
  return count_of(count, call) * type_size(t, call);
}

// Calls f(std::type_identity<T>{}) with the C++ type of `t`, for the types reductions take.
template <class F>
void with_reduction_type(MPI_Datatype t, char const* call, F&& f) {
  switch (t) {
    case MPI_SHORT:
      return f(std::type_identity<short>{});
    case MPI_UNSIGNED_SHORT:
      return f(std::type_identity<unsigned short>{});
    case MPI_INT:
      return f(std::type_identity<int>{});
    case MPI_UNSIGNED:
      return f(std::type_identity<unsigned>{});
    case MPI_LONG:
      return f(std::type_identity<long>{});
    case MPI_UNSIGNED_LONG:
      return f(std::type_identity<unsigned long>{});
    case MPI_LONG_LONG_INT:
      return f(std::type_identity<long long>{});
    case MPI_UNSIGNED_LONG_LONG:
      return f(std::type_identity<unsigned long long>{});
    case MPI_FLOAT:
      return f(std::type_identity<float>{});
    case MPI_DOUBLE:
      return f(std::type_identity<double>{});
    case MPI_LONG_DOUBLE:
      return f(std::type_identity<long double>{});
    case MPI_2INT:
      return f(std::type_identity<pair_t<int>>{});
    case MPI_SHORT_INT:
      return f(std::type_identity<pair_t<short>>{});
    case MPI_LONG_INT:
      return f(std::type_identity<pair_t<long>>{});
    case MPI_FLOAT_INT:
      return f(std::type_identity<pair_t<float>>{});
    case MPI_DOUBLE_INT:
      return f(std::type_identity<pair_t<double>>{});
    case MPI_LONG_DOUBLE_INT:
      return f(std::type_identity<pair_t<long double>>{});
    default:
      fail(call, "reductions on " + type_name(t) + " are not supported by this adapter");
  }
}

char const* op_name(MPI_Op op) {
  static char const* const names[] = {
      "MPI_OP_NULL", "MPI_MAX", "MPI_MIN",  "MPI_SUM",  "MPI_PROD",   "MPI_LAND",  "MPI_BAND",
      "MPI_LOR",     "MPI_BOR", "MPI_LXOR", "MPI_BXOR", "MPI_MINLOC", "MPI_MAXLOC"};
  return op >= 0 && op < static_cast<int>(std::size(names)) ? names[op] : "an unknown MPI_Op";
}

/// Calls f(std::type_identity<T>{}, gcl_op) with the C++ type of `t` and gcl's operator for
/// `op`; fails when the operator is not defined on the type (MPI_SUM on MPI_2INT, MPI_BAND on
/// MPI_DOUBLE, MPI_MINLOC on MPI_INT).
template <class F>
void with_reduction(MPI_Datatype t, MPI_Op op, char const* call, F&& f) {
  with_reduction_type(t, call, [&]<class T>(std::type_identity<T> type) {
    auto go = [&](auto o) {
      if constexpr (gcl::reduction_op<decltype(o), T>)
        f(type, o);
      else
        fail(call, std::string(op_name(op)) + " is not defined on " + type_name(t));
    };
    switch (op) {
      case MPI_MAX:
        return go(gcl::max{});
      case MPI_MIN:
        return go(gcl::min{});
      case MPI_SUM:
        return go(gcl::sum{});
      case MPI_PROD:
        return go(gcl::prod{});
      case MPI_LAND:
        return go(gcl::logical_and{});
      case MPI_BAND:
        return go(gcl::bit_and{});
      case MPI_LOR:
        return go(gcl::logical_or{});
      case MPI_BOR:
        return go(gcl::bit_or{});
      case MPI_LXOR:
        return go(gcl::logical_xor{});
      case MPI_BXOR:
        return go(gcl::bit_xor{});
      case MPI_MINLOC:
        return go(gcl::minloc{});
      case MPI_MAXLOC:
        return go(gcl::maxloc{});
      default:
        fail(call, std::string(op_name(op)) + " is not supported by this adapter");
    }
  });
}

template <class T>
std::span<T> typed(void* p, std::size_t n) {
  return {static_cast<T*>(p), n};
}
template <class T>
std::span<T const> typed(void const* p, std::size_t n) {
  return {static_cast<T const*>(p), n};
}

std::span<std::byte> bytes(void* p, std::size_t n) {
  return {static_cast<std::byte*>(p), n};
}
std::span<std::byte const> bytes(void const* p, std::size_t n) {
  return {static_cast<std::byte const*>(p), n};
}

bool in_place(void const* p) {
  return p == MPI_IN_PLACE;
}

/// Per-rank element counts (MPI's int arrays) in bytes of `t`.
std::vector<std::size_t> byte_counts(int const* counts, int n, MPI_Datatype t, char const* call) {
  std::size_t const size = type_size(t, call);
  std::vector<std::size_t> out(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r) out[static_cast<std::size_t>(r)] = count_of(counts[r], call) * size;
  return out;
}

/// Where block r begins: displacements (in elements of `t`) in bytes.
std::vector<std::size_t> byte_displs(int const* displs, int n, MPI_Datatype t, char const* call) {
  std::size_t const size = type_size(t, call);
  std::vector<std::size_t> out(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r)
    out[static_cast<std::size_t>(r)] = count_of(displs[r], call, "displacement") * size;
  return out;
}

/// Copies the blocks of `packed` (contiguous, in rank order) to `base + displs[r]`.
void unpack(std::vector<std::byte> const& packed, std::vector<std::size_t> const& counts,
            std::vector<std::size_t> const& displs, void* base) {
  std::size_t at = 0;
  for (std::size_t r = 0; r < counts.size(); ++r) {
    if (counts[r])
      std::memcpy(static_cast<std::byte*>(base) + displs[r], packed.data() + at, counts[r]);
    at += counts[r];
  }
}

/// The blocks at `base + displs[r]`, contiguous in rank order.
std::vector<std::byte> pack(void const* base, std::vector<std::size_t> const& counts,
                            std::vector<std::size_t> const& displs) {
  std::vector<std::byte> packed(gcl::detail::sum_of(std::span<std::size_t const>(counts)));
  std::size_t at = 0;
  for (std::size_t r = 0; r < counts.size(); ++r) {
    if (counts[r])
      std::memcpy(packed.data() + at, static_cast<std::byte const*>(base) + displs[r], counts[r]);
    at += counts[r];
  }
  return packed;
}

std::size_t as_index(int r) {
  return static_cast<std::size_t>(r);
}

MPI_Request add_request(gcl::collective_request&& r) {
  auto& s = state();
  MPI_Request const id = s.next_request++;
  s.requests.emplace(id, std::move(r));
  return id;
}

void clear_status(MPI_Status* status) {
  if (status != MPI_STATUS_IGNORE) *status = MPI_Status{0, 0, MPI_SUCCESS, 0};
}

}  // namespace

extern "C" {

// --- environment --------------------------------------------------------------------------

int MPI_Init(int* /*argc*/, char*** /*argv*/) {
  auto& s = state();
  if (s.initialized) fail("MPI_Init", "called twice");
  try {
    auto world = std::make_unique<comm_t>(gcl::shm_transport(gcl::shm_options::from_env()));
    s.world_rank = world->rank();
    auto self = world->split(world->rank(), 0);
    s.comms.clear();
    s.comms.push_back(nullptr);
    s.comms.push_back(std::move(world));
    s.comms.push_back(std::make_unique<comm_t>(std::move(*self)));
  } catch (std::exception const& e) {
    fail("MPI_Init", e.what());
  }
  s.initialized = true;
  return MPI_SUCCESS;
}

int MPI_Finalize(void) {
  guarded("MPI_Finalize", [] {
    auto& s = state();
    if (!s.requests.empty())
      fail("MPI_Finalize", std::to_string(s.requests.size()) + " request(s) never completed");
    gcl::barrier(get_comm(MPI_COMM_WORLD, "MPI_Finalize"));
    while (!s.comms.empty()) s.comms.pop_back();  // the world's last
  });
  state().finalized = true;
  return MPI_SUCCESS;
}

int MPI_Initialized(int* flag) {
  *flag = state().initialized ? 1 : 0;
  return MPI_SUCCESS;
}

int MPI_Finalized(int* flag) {
  *flag = state().finalized ? 1 : 0;
  return MPI_SUCCESS;
}

int MPI_Abort(MPI_Comm comm, int errorcode) {
  std::fflush(stdout);
  std::fprintf(stderr, "mpi_adapter: rank %d: MPI_Abort(%d, %d) called\n", state().world_rank, comm,
               errorcode);
  std::fflush(stderr);
  std::_Exit(errorcode != 0 ? errorcode : EXIT_FAILURE);
}

double MPI_Wtime(void) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

int MPI_Type_size(MPI_Datatype datatype, int* size) {
  return guarded("MPI_Type_size",
                 [&] { *size = static_cast<int>(type_size(datatype, "MPI_Type_size")); });
}

// --- communicators ------------------------------------------------------------------------

int MPI_Comm_rank(MPI_Comm comm, int* rank) {
  return guarded("MPI_Comm_rank", [&] { *rank = get_comm(comm, "MPI_Comm_rank").rank(); });
}

int MPI_Comm_size(MPI_Comm comm, int* size) {
  return guarded("MPI_Comm_size", [&] { *size = get_comm(comm, "MPI_Comm_size").size(); });
}

int MPI_Comm_dup(MPI_Comm comm, MPI_Comm* newcomm) {
  return guarded("MPI_Comm_dup",
                 [&] { *newcomm = add_comm(get_comm(comm, "MPI_Comm_dup").dup()); });
}

int MPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm* newcomm) {
  return guarded("MPI_Comm_split", [&] {
    if (color < 0 && color != MPI_UNDEFINED)
      fail("MPI_Comm_split", "color " + std::to_string(color) + " is negative");
    auto c = get_comm(comm, "MPI_Comm_split")
                 .split(color == MPI_UNDEFINED ? comm_t::no_color : color, key);
    *newcomm = c ? add_comm(std::move(*c)) : MPI_COMM_NULL;
  });
}

int MPI_Comm_free(MPI_Comm* comm) {
  return guarded("MPI_Comm_free", [&] {
    if (*comm == MPI_COMM_WORLD || *comm == MPI_COMM_SELF)
      fail("MPI_Comm_free", "MPI_COMM_WORLD and MPI_COMM_SELF cannot be freed");
    get_comm(*comm, "MPI_Comm_free");
    state().comms[as_index(*comm)].reset();
    *comm = MPI_COMM_NULL;
  });
}

// --- blocking collectives -----------------------------------------------------------------

int MPI_Barrier(MPI_Comm comm) {
  return guarded("MPI_Barrier", [&] { gcl::barrier(get_comm(comm, "MPI_Barrier")); });
}

int MPI_Bcast(void* buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm) {
  char const* call = "MPI_Bcast";
  return guarded(call, [&] {
    gcl::broadcast(get_comm(comm, call), bytes(buffer, bytes_of(count, datatype, call)), root);
  });
}

int MPI_Reduce(void const* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
               int root, MPI_Comm comm) {
  char const* call = "MPI_Reduce";
  return guarded(call, [&] {
    auto& c = get_comm(comm, call);
    std::size_t const n = count_of(count, call);
    with_reduction(datatype, op, call, [&]<class T>(std::type_identity<T>, auto o) {
      if (c.rank() == root && in_place(sendbuf))
        gcl::reduce(c, typed<T>(recvbuf, n), root, o);
      else if (in_place(sendbuf))
        fail(call, "MPI_IN_PLACE on a rank other than the root");
      else
        gcl::reduce(c, typed<T>(sendbuf, n), typed<T>(recvbuf, c.rank() == root ? n : 0), root, o);
    });
  });
}

int MPI_Allreduce(void const* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                  MPI_Comm comm) {
  char const* call = "MPI_Allreduce";
  return guarded(call, [&] {
    auto& c = get_comm(comm, call);
    std::size_t const n = count_of(count, call);
    with_reduction(datatype, op, call, [&]<class T>(std::type_identity<T>, auto o) {
      if (in_place(sendbuf))
        gcl::all_reduce(c, typed<T>(recvbuf, n), o);
      else
        gcl::all_reduce(c, typed<T>(sendbuf, n), typed<T>(recvbuf, n), o);
    });
  });
}

int MPI_Scan(void const* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
             MPI_Comm comm) {
  char const* call = "MPI_Scan";
  return guarded(call, [&] {
    auto& c = get_comm(comm, call);
    std::size_t const n = count_of(count, call);
    with_reduction(datatype, op, call, [&]<class T>(std::type_identity<T>, auto o) {
      if (!in_place(sendbuf) && n) std::memcpy(recvbuf, sendbuf, n * sizeof(T));
      gcl::scan(c, typed<T>(recvbuf, n), o);
    });
  });
}

int MPI_Exscan(void const* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
               MPI_Comm comm) {
  char const* call = "MPI_Exscan";
  return guarded(call, [&] {
    auto& c = get_comm(comm, call);
    std::size_t const n = count_of(count, call);
    with_reduction(datatype, op, call, [&]<class T>(std::type_identity<T>, auto o) {
      if (in_place(sendbuf)) {
        gcl::exscan(c, typed<T>(recvbuf, n), o);  // rank 0's data is left unchanged
        return;
      }
      // Rank 0's recvbuf is not touched (MPI: undefined there).
      std::vector<T> data(typed<T>(sendbuf, n).begin(), typed<T>(sendbuf, n).end());
      gcl::exscan(c, data, o);
      if (c.rank() > 0 && n) std::memcpy(recvbuf, data.data(), n * sizeof(T));
    });
  });
}

int MPI_Reduce_scatter(void const* sendbuf, void* recvbuf, int const recvcounts[],
                       MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  char const* call = "MPI_Reduce_scatter";
  return guarded(call, [&] {
    auto& c = get_comm(comm, call);
    std::vector<std::size_t> counts(as_index(c.size()));
    for (int r = 0; r < c.size(); ++r) counts[as_index(r)] = count_of(recvcounts[r], call);
    std::size_t const total = gcl::detail::sum_of(std::span<std::size_t const>(counts));
    std::size_t const mine = counts[as_index(c.rank())];
    with_reduction(datatype, op, call, [&]<class T>(std::type_identity<T>, auto o) {
      std::span<std::size_t const> const cs(counts);
      if (in_place(sendbuf)) {  // the input is recvbuf, which gcl's out must not overlap
        std::vector<T> in(typed<T>(recvbuf, total).begin(), typed<T>(recvbuf, total).end());
        gcl::reduce_scatterv(c, in, typed<T>(recvbuf, mine), cs, o);
      } else {
        gcl::reduce_scatterv(c, typed<T>(sendbuf, total), typed<T>(recvbuf, mine), cs, o);
      }
    });
  });
}

int MPI_Reduce_scatter_block(void const* sendbuf, void* recvbuf, int recvcount,
                             MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  char const* call = "MPI_Reduce_scatter_block";
  return guarded(call, [&] {
    auto& c = get_comm(comm, call);
    std::size_t const n = count_of(recvcount, call);
    std::vector<std::size_t> const counts(as_index(c.size()), n);
    std::size_t const total = n * counts.size();
    with_reduction(datatype, op, call, [&]<class T>(std::type_identity<T>, auto o) {
      std::span<std::size_t const> const cs(counts);
      if (in_place(sendbuf)) {
        std::vector<T> in(typed<T>(recvbuf, total).begin(), typed<T>(recvbuf, total).end());
        gcl::reduce_scatterv(c, in, typed<T>(recvbuf, n), cs, o);
      } else {
        gcl::reduce_scatterv(c, typed<T>(sendbuf, total), typed<T>(recvbuf, n), cs, o);
      }
    });
  });
}

int MPI_Gather(void const* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
               int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm) {
  char const* call = "MPI_Gather";
  return guarded(call, [&] {
    auto& c = get_comm(comm, call);
    if (c.rank() != root) {
      if (in_place(sendbuf)) fail(call, "MPI_IN_PLACE on a rank other than the root");
      gcl::gather(c, bytes(sendbuf, bytes_of(sendcount, sendtype, call)), std::span<std::byte>{},
                  root);
      return;
    }
    std::size_t const block = bytes_of(recvcount, recvtype, call);
    auto out = bytes(recvbuf, block * as_index(c.size()));
    if (in_place(sendbuf)) {  // the root's block is already in place: send gcl a copy of it
      std::vector<std::byte> const mine(
          out.begin() + static_cast<std::ptrdiff_t>(block * as_index(root)),
          out.begin() + static_cast<std::ptrdiff_t>(block * as_index(root + 1)));
      gcl::gather(c, mine, out, root);
    } else {
      gcl::gather(c, bytes(sendbuf, bytes_of(sendcount, sendtype, call)), out, root);
    }
  });
}

int MPI_Gatherv(void const* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                int const recvcounts[], int const displs[], MPI_Datatype recvtype, int root,
                MPI_Comm comm) {
  char const* call = "MPI_Gatherv";
  return guarded(call, [&] {
    auto& c = get_comm(comm, call);
    bool const is_root = c.rank() == root;
    // gcl's gatherv wants the counts on every rank; MPI gives them to the root only.
    std::vector<std::size_t> counts(as_index(c.size()));
    if (is_root) counts = byte_counts(recvcounts, c.size(), recvtype, call);
    gcl::broadcast(c, counts, root);
    if (!is_root) {
      if (in_place(sendbuf)) fail(call, "MPI_IN_PLACE on a rank other than the root");
      gcl::gatherv(c, bytes(sendbuf, bytes_of(sendcount, sendtype, call)), std::span<std::byte>{},
                   std::span<std::size_t const>(counts), root);
      return;
    }
    auto const offsets = byte_displs(displs, c.size(), recvtype, call);
    std::vector<std::byte> packed(gcl::detail::sum_of(std::span<std::size_t const>(counts)));
    std::vector<std::byte> mine;
    if (in_place(sendbuf)) {
      auto const* at = static_cast<std::byte const*>(recvbuf) + offsets[as_index(root)];
      mine.assign(at, at + counts[as_index(root)]);
    } else {
      auto const in = bytes(sendbuf, bytes_of(sendcount, sendtype, call));
      mine.assign(in.begin(), in.end());
    }
    gcl::gatherv(c, mine, packed, std::span<std::size_t const>(counts), root);
    unpack(packed, counts, offsets, recvbuf);
  });
}

int MPI_Scatter(void const* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm) {
  char const* call = "MPI_Scatter";
  return guarded(call, [&] {
    auto& c = get_comm(comm, call);
    if (c.rank() != root) {
      gcl::scatter(c, std::span<std::byte const>{},
                   bytes(recvbuf, bytes_of(recvcount, recvtype, call)), root);
      return;
    }
    std::size_t const block = bytes_of(sendcount, sendtype, call);
    auto const in = bytes(sendbuf, block * as_index(c.size()));
    if (in_place(recvbuf)) {  // the root's block stays where it is in sendbuf
      std::vector<std::byte> discard(block);
      gcl::scatter(c, in, discard, root);
    } else {
      gcl::scatter(c, in, bytes(recvbuf, bytes_of(recvcount, recvtype, call)), root);
    }
  });
}

int MPI_Scatterv(void const* sendbuf, int const sendcounts[], int const displs[],
                 MPI_Datatype sendtype, void* recvbuf, int recvcount, MPI_Datatype recvtype,
                 int root, MPI_Comm comm) {
  char const* call = "MPI_Scatterv";
  return guarded(call, [&] {
    auto& c = get_comm(comm, call);
    bool const is_root = c.rank() == root;
    std::vector<std::size_t> counts(as_index(c.size()));
    if (is_root) counts = byte_counts(sendcounts, c.size(), sendtype, call);
    gcl::broadcast(c, counts, root);  // gcl's scatterv wants them on every rank
    std::span<std::size_t const> const cs(counts);
    if (!is_root) {
      gcl::scatterv(c, std::span<std::byte const>{},
                    bytes(recvbuf, bytes_of(recvcount, recvtype, call)), cs, root);
      return;
    }
    auto const packed = pack(sendbuf, counts, byte_displs(displs, c.size(), sendtype, call));
    if (in_place(recvbuf)) {
      std::vector<std::byte> discard(counts[as_index(root)]);
      gcl::scatterv(c, packed, discard, cs, root);
    } else {
      gcl::scatterv(c, packed, bytes(recvbuf, bytes_of(recvcount, recvtype, call)), cs, root);
    }
  });
}

int MPI_Allgather(void const* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                  int recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
  char const* call = "MPI_Allgather";
  return guarded(call, [&] {
    auto& c = get_comm(comm, call);
    std::size_t const block = bytes_of(recvcount, recvtype, call);
    auto out = bytes(recvbuf, block * as_index(c.size()));
    if (in_place(sendbuf))  // gcl's in place: in is block `rank` of out
      gcl::all_gather(c, out.subspan(block * as_index(c.rank()), block), out);
    else
      gcl::all_gather(c, bytes(sendbuf, bytes_of(sendcount, sendtype, call)), out);
  });
}

int MPI_Allgatherv(void const* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                   int const recvcounts[], int const displs[], MPI_Datatype recvtype,
                   MPI_Comm comm) {
  char const* call = "MPI_Allgatherv";
  return guarded(call, [&] {
    auto& c = get_comm(comm, call);
    auto const counts = byte_counts(recvcounts, c.size(), recvtype, call);
    auto const offsets = byte_displs(displs, c.size(), recvtype, call);
    std::vector<std::byte> packed(gcl::detail::sum_of(std::span<std::size_t const>(counts)));
    std::span<std::byte const> const in =
        in_place(sendbuf) ? bytes(static_cast<void const*>(static_cast<std::byte const*>(recvbuf) +
                                                           offsets[as_index(c.rank())]),
                                  counts[as_index(c.rank())])
                          : bytes(sendbuf, bytes_of(sendcount, sendtype, call));
    gcl::all_gatherv(c, in, packed, std::span<std::size_t const>(counts));
    unpack(packed, counts, offsets, recvbuf);
  });
}

int MPI_Alltoall(void const* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                 int recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
  char const* call = "MPI_Alltoall";
  return guarded(call, [&] {
    auto& c = get_comm(comm, call);
    auto out = bytes(recvbuf, bytes_of(recvcount, recvtype, call) * as_index(c.size()));
    if (in_place(sendbuf)) {  // gcl's in and out must not overlap
      std::vector<std::byte> const in(out.begin(), out.end());
      gcl::all_to_all(c, in, out);
    } else {
      gcl::all_to_all(c, bytes(sendbuf, bytes_of(sendcount, sendtype, call) * as_index(c.size())),
                      out);
    }
  });
}

int MPI_Alltoallv(void const* sendbuf, int const sendcounts[], int const sdispls[],
                  MPI_Datatype sendtype, void* recvbuf, int const recvcounts[], int const rdispls[],
                  MPI_Datatype recvtype, MPI_Comm comm) {
  char const* call = "MPI_Alltoallv";
  return guarded(call, [&] {
    auto& c = get_comm(comm, call);
    auto const rcounts = byte_counts(recvcounts, c.size(), recvtype, call);
    auto const roffsets = byte_displs(rdispls, c.size(), recvtype, call);
    std::vector<std::size_t> scounts = rcounts;
    std::vector<std::byte> in;
    if (in_place(sendbuf)) {
      in = pack(recvbuf, rcounts, roffsets);
    } else {
      scounts = byte_counts(sendcounts, c.size(), sendtype, call);
      in = pack(sendbuf, scounts, byte_displs(sdispls, c.size(), sendtype, call));
    }
    std::vector<std::byte> out(gcl::detail::sum_of(std::span<std::size_t const>(rcounts)));
    gcl::all_to_allv(c, in, std::span<std::size_t const>(scounts), out,
                     std::span<std::size_t const>(rcounts));
    unpack(out, rcounts, roffsets, recvbuf);
  });
}

// --- non-blocking collectives -------------------------------------------------------------

int MPI_Ibarrier(MPI_Comm comm, MPI_Request* request) {
  return guarded("MPI_Ibarrier",
                 [&] { *request = add_request(gcl::ibarrier(get_comm(comm, "MPI_Ibarrier"))); });
}

int MPI_Ibcast(void* buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm,
               MPI_Request* request) {
  char const* call = "MPI_Ibcast";
  return guarded(call, [&] {
    // An rvalue span: gcl copies it (an lvalue would be held by reference until wait()).
    *request = add_request(gcl::ibroadcast(get_comm(comm, call),
                                           bytes(buffer, bytes_of(count, datatype, call)), root));
  });
}

int MPI_Iallreduce(void const* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                   MPI_Comm comm, MPI_Request* request) {
  char const* call = "MPI_Iallreduce";
  return guarded(call, [&] {
    auto& c = get_comm(comm, call);
    std::size_t const n = count_of(count, call);
    with_reduction(datatype, op, call, [&]<class T>(std::type_identity<T>, auto o) {
      // MPI may read sendbuf at any time before completion; reading it now is one of them.
      if (!in_place(sendbuf) && n) std::memcpy(recvbuf, sendbuf, n * sizeof(T));
      *request = add_request(gcl::iall_reduce(c, typed<T>(recvbuf, n), o));
    });
  });
}

int MPI_Wait(MPI_Request* request, MPI_Status* status) {
  return guarded("MPI_Wait", [&] {
    clear_status(status);
    if (*request == MPI_REQUEST_NULL) return;
    auto& requests = state().requests;
    auto it = requests.find(*request);
    if (it == requests.end()) fail("MPI_Wait", "invalid request " + std::to_string(*request));
    it->second.wait();
    requests.erase(it);
    *request = MPI_REQUEST_NULL;
  });
}

int MPI_Waitall(int count, MPI_Request requests[], MPI_Status statuses[]) {
  return guarded("MPI_Waitall", [&] {
    for (int i = 0; i < count; ++i)
      MPI_Wait(&requests[i], statuses == MPI_STATUSES_IGNORE ? MPI_STATUS_IGNORE : &statuses[i]);
  });
}

int MPI_Test(MPI_Request* request, int* flag, MPI_Status* status) {
  return guarded("MPI_Test", [&] {
    clear_status(status);
    *flag = 1;
    if (*request == MPI_REQUEST_NULL) return;
    auto& requests = state().requests;
    auto it = requests.find(*request);
    if (it == requests.end()) fail("MPI_Test", "invalid request " + std::to_string(*request));
    if (!it->second.test()) {
      *flag = 0;
      return;
    }
    it->second.wait();  // done: rethrows its error, if any
    requests.erase(it);
    *request = MPI_REQUEST_NULL;
  });
}

}  // extern "C"
