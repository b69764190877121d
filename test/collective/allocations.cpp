// Proves that a warm collective allocates nothing: every algorithm takes its temporaries from
// the communicator's scratch buffers, and argument checks build strings only on failure. This
// program replaces the global operator new/delete with counting versions (as
// test/transport/inproc_allocations.cpp does), so it is a program of its own.
#define BOOST_TEST_MODULE collective_allocations
#include <boost/test/unit_test.hpp>

#include <gcl/algorithm/direct.hpp>
#include <gcl/algorithm/ring.hpp>
#include <gcl/algorithm/tree.hpp>
#include <gcl/collective/all_gather.hpp>
#include <gcl/collective/all_reduce.hpp>
#include <gcl/collective/all_to_all.hpp>
#include <gcl/collective/barrier.hpp>
#include <gcl/collective/broadcast.hpp>
#include <gcl/collective/gather.hpp>
#include <gcl/collective/reduce.hpp>
#include <gcl/collective/reduce_scatter.hpp>
#include <gcl/collective/scatter.hpp>
#include <gcl/spawn.hpp>
#include <gcl/transport/inproc.hpp>

#include <atomic>
#include <barrier>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <string>
#include <vector>

namespace {
std::atomic<long> allocations{0};
std::atomic<bool> trap{false};  // debugging aid: abort() on an allocation while measuring
}  // namespace

void* operator new(std::size_t n) {
  allocations.fetch_add(1, std::memory_order_relaxed);
  if (trap.load(std::memory_order_relaxed)) std::abort();
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) {
  return operator new(n);
}
void* operator new(std::size_t n, std::align_val_t a) {
  allocations.fetch_add(1, std::memory_order_relaxed);
  std::size_t al = static_cast<std::size_t>(a);
  if (void* p = std::aligned_alloc(al, (n + al - 1) / al * al)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n, std::align_val_t a) {
  return operator new(n, a);
}
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete[](void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::size_t) noexcept {
  std::free(p);
}
void operator delete(void* p, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept {
  std::free(p);
}

namespace {

constexpr int warmup = 5;
constexpr int iterations = 50;
constexpr std::size_t n = 1000;  // elements per rank (per block for the block collectives)

// The inproc transport pools message buffers per inbox, growing to the deepest backlog seen.
// Every rank first queues 4P messages of the largest size its neighbour will ever receive, so
// the pool is warm whatever the scheduling (see test/transport/inproc_allocations.cpp), and
// posts one receive before its message so the posted list exists.
template <class Comm>
void fill_pool(Comm& comm, std::size_t bytes) {
  int p = comm.size(), r = comm.rank();
  std::vector<std::byte> buf(bytes), in(bytes);
  for (int k = 0; k < 4 * p; ++k) comm.send((r + 1) % p, buf, gcl::tag{100});
  comm.send((r + 1) % p, buf, gcl::tag{103});
  comm.recv((r + p - 1) % p, buf, gcl::tag{103});
  for (int k = 0; k < 4 * p; ++k) comm.recv((r + p - 1) % p, buf, gcl::tag{100});
  auto posted = comm.irecv((r + p - 1) % p, in, gcl::tag{101});
  comm.send((r + p - 1) % p, buf, gcl::tag{102});
  comm.recv((r + 1) % p, buf, gcl::tag{102});
  comm.send((r + 1) % p, buf, gcl::tag{101});
  posted.wait();
}

// Runs step(comm) then a barrier (so that no rank runs iterations ahead and deepens a backlog),
// warm, then measured between two std::barrier snapshots; returns the allocations counted.
template <class Step>
long allocations_when_warm(int p, std::size_t max_bytes, Step step) {
  long snapshot[2] = {0, 0};
  int phase = 0;
  auto on_completion = [&]() noexcept { snapshot[phase++] = allocations.load(); };
  std::barrier sync(p, on_completion);
  gcl::spawn<gcl::inproc_transport>(p, [&](auto& comm) {
    fill_pool(comm, max_bytes);
    for (int i = 0; i < warmup; ++i) step(comm), gcl::barrier(comm);
    sync.arrive_and_wait();
    for (int i = 0; i < iterations; ++i) step(comm), gcl::barrier(comm);
    sync.arrive_and_wait();
  });
  return snapshot[1] - snapshot[0];
}

template <class Step>
void check(std::string const& name, Step step) {
  for (int p : {1, 2, 3, 5}) {
    long count = allocations_when_warm(p, n * p * sizeof(float), step);
    BOOST_TEST(count == 0, name << " P=" << p << ": " << count << " allocations when warm");
  }
}

// Per-rank buffers, sized once before the measurement.
struct buffers {
  std::vector<float> data, in, out, block;
  explicit buffers(int p) : data(n, 1.0f), in(n * p, 1.0f), out(n * p, 0.0f), block(n, 0.0f) {}
};

}  // namespace

BOOST_AUTO_TEST_CASE(the_counter_counts) {
  long before = allocations.load();
  auto* v = new std::vector<int>(100);
  delete v;
  BOOST_TEST(allocations.load() - before == 2);
}

BOOST_AUTO_TEST_CASE(warm_collectives_allocate_nothing) {
  check("all_reduce tree", [](auto& comm) {
    thread_local buffers b(comm.size());
    gcl::all_reduce(comm, b.data, gcl::sum{}, gcl::tree{});
  });
  check("all_reduce ring", [](auto& comm) {
    thread_local buffers b(comm.size());
    gcl::all_reduce(comm, b.data, gcl::sum{}, gcl::ring{});
  });
  check("reduce tree root 1", [](auto& comm) {
    thread_local buffers b(comm.size());
    gcl::reduce(comm, b.data, comm.size() > 1 ? 1 : 0, gcl::max{}, gcl::tree{});
  });
  check("broadcast tree", [](auto& comm) {
    thread_local buffers b(comm.size());
    gcl::broadcast(comm, b.data, comm.size() - 1, gcl::tree{});
  });
  check("reduce_scatter ring", [](auto& comm) {
    thread_local buffers b(comm.size());
    std::span<float> out(b.block.data(), gcl::reduce_scatter_size(n, comm.rank(), comm.size()));
    gcl::reduce_scatter(comm, b.data, out, gcl::sum{}, gcl::ring{});
  });
  check("all_gather ring", [](auto& comm) {
    thread_local buffers b(comm.size());
    gcl::all_gather(comm, b.data, b.out, gcl::ring{});
  });
  check("gather tree root P-1", [](auto& comm) {
    thread_local buffers b(comm.size());
    gcl::gather(comm, b.data, b.out, comm.size() - 1, gcl::tree{});
  });
  check("scatter tree root P-1", [](auto& comm) {
    thread_local buffers b(comm.size());
    gcl::scatter(comm, b.in, b.block, comm.size() - 1, gcl::tree{});
  });
  check("all_to_all direct", [](auto& comm) {
    thread_local buffers b(comm.size());
    gcl::all_to_all(comm, b.in, b.out, gcl::direct{});
  });
}
