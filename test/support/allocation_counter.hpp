#pragma once
// Counts every heap allocation of the program, to prove that warm gcl calls allocate nothing.
//
// Replaces the global operator new/delete: include this header in exactly one translation unit
// of a test program (each allocation test is a program of its own). Replacement allocation
// functions may not be inline, so the definitions below are ordinary ones.

#include <gcl/spawn.hpp>
#include <gcl/transport/inproc.hpp>

#include <atomic>
#include <barrier>
#include <cstddef>
#include <cstdlib>
#include <new>
#include <vector>

// The replacements allocate with malloc and free with free, a matching pair; GCC cannot see that
// once a replaced delete is inlined next to a new-expression, and warns.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

namespace gcl_test {
std::atomic<long> allocations{0};
std::atomic<bool> trap{false};  // debugging aid: abort() on an allocation while measuring
}  // namespace gcl_test

void* operator new(std::size_t n) {
  gcl_test::allocations.fetch_add(1, std::memory_order_relaxed);
  if (gcl_test::trap.load(std::memory_order_relaxed)) std::abort();
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) {
  return operator new(n);
}
void* operator new(std::size_t n, std::align_val_t a) {
  gcl_test::allocations.fetch_add(1, std::memory_order_relaxed);
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

namespace gcl_test {

// The pool of an inbox grows to the deepest backlog of messages that arrived before their
// receive; how deep that gets in a few iterations depends on thread scheduling (a rank of a ring
// may run up to P-1 iterations ahead of its neighbour). So first every rank sends 4P messages of
// the largest size to its right neighbour before receiving any: each inbox then holds more
// pooled buffers than the steps measured can ever have in flight, and "warm" is deterministic.
// Without this, a run where a rank happened never to fall behind in warm-up sees the pool (or
// the posted list) grow once later: a high-water mark, not a per-message allocation.
template <class Comm>
void fill_pool(Comm& comm, std::size_t bytes) {
  int p = comm.size(), r = comm.rank();
  std::vector<std::byte> buf(bytes);
  for (int k = 0; k < 4 * p; ++k) comm.send((r + 1) % p, buf, gcl::tag{100});
  // Receive only after the left neighbour's messages are all queued (it sent them before this
  // one, and nobody had posted a receive for them), so they really went through the pool.
  comm.send((r + 1) % p, buf, gcl::tag{103});
  comm.recv((r + p - 1) % p, buf, gcl::tag{103});
  for (int k = 0; k < 4 * p; ++k) comm.recv((r + p - 1) % p, buf, gcl::tag{100});
  // And one receive that is certainly posted before its message (the inbox's list of posted
  // receives is allocated on first use): post, tell the left neighbour, hear from the right.
  // Every message here has the largest size: a pooled buffer that is too small is replaced by a
  // larger one when next used, so small messages in the pool would make a later allocation.
  std::vector<std::byte> in(bytes);
  auto posted = comm.irecv((r + p - 1) % p, in, gcl::tag{101});
  comm.send((r + p - 1) % p, buf, gcl::tag{102});
  comm.recv((r + 1) % p, buf, gcl::tag{102});
  comm.send((r + 1) % p, buf, gcl::tag{101});
  posted.wait();
}

// On p inproc ranks: fills the pools with messages of `max_bytes`, runs `step(comm, i)`
// `warmup` times on every rank, then `iterations` more times, and returns how many allocations
// all ranks together made in the measured part. GCL_TRAP_ALLOCATIONS=1 aborts at the first one,
// for a debugger's backtrace.
template <class Step>
long allocations_when_warm(int p, std::size_t max_bytes, int warmup, int iterations, Step step) {
  // The barrier's completion step runs once, while every rank is stopped in the barrier, so the
  // snapshots bracket exactly the measured iterations of all ranks.
  long snapshot[2] = {0, 0};
  int phase = 0;
  auto on_completion = [&]() noexcept {
    snapshot[phase] = allocations.load();
    trap = phase == 0 && std::getenv("GCL_TRAP_ALLOCATIONS");
    ++phase;
  };
  std::barrier sync(p, on_completion);
  gcl::spawn<gcl::inproc_transport>(p, [&](auto& comm) {
    fill_pool(comm, max_bytes);
    for (int i = 0; i < warmup; ++i) step(comm, i);
    sync.arrive_and_wait();
    for (int i = 0; i < iterations; ++i) step(comm, i);
    sync.arrive_and_wait();
  });
  return snapshot[1] - snapshot[0];
}

}  // namespace gcl_test
