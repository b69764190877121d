#pragma once
// Counts every heap allocation of the program, to prove that warm gcl calls allocate nothing.
//
// Replaces the global operator new/delete: include this header in exactly one translation unit
// of a test program (each allocation test is a program of its own). Replacement allocation
// functions may not be inline, so the definitions below are ordinary ones.

#include <gcl/collective/barrier.hpp>
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

// A channel (the messages from one rank to another) keeps as many cells and buffers as messages
// have ever waited in it at once; how deep that gets in a few iterations depends on thread
// scheduling (a rank of a ring may run up to P iterations ahead of its neighbour). So first every
// rank sends 4P messages of the largest size to every rank, itself included, before receiving
// any: each channel then holds more cells and buffers than the steps measured can ever have in
// flight, and "warm" is deterministic. Without this, a run where a rank happened never to fall
// behind in warm-up sees a channel grow once later: a high-water mark, not a per-message
// allocation.
template <class Comm>
void fill_pool(Comm& comm, std::size_t bytes) {
  int p = comm.size(), r = comm.rank();
  std::vector<std::byte> buf(bytes);
  for (int d = 0; d < p; ++d)
    for (int k = 0; k < 4 * p; ++k) comm.send((r + d) % p, buf, gcl::tag{100});
  // Nobody receives before every rank has sent them all: large messages, which a receiver
  // would copy from the sender, are then copied into the channel, as when a receiver is late.
  gcl::barrier(comm);
  for (int d = 0; d < p; ++d)
    for (int k = 0; k < 4 * p; ++k) comm.recv((r + p - d) % p, buf, gcl::tag{100});
  // And irecvs, posted before their messages and after (the list of pending receives is
  // allocated on first use).
  std::vector<std::byte> in(bytes);
  auto posted = comm.irecv((r + p - 1) % p, in, gcl::tag{101});
  comm.send((r + p - 1) % p, buf, gcl::tag{102});
  comm.recv((r + 1) % p, buf, gcl::tag{102});
  comm.send((r + 1) % p, buf, gcl::tag{101});
  posted.wait();
}

// On p ranks of `Transport` (threads of this process, gcl::spawn; inproc unless said otherwise,
// with `opts`): fills the pools with messages of `max_bytes`, runs `step(comm, i)` `warmup`
// times on every rank, then `iterations` more times, and returns how many allocations all ranks
// together made in the measured part. GCL_TRAP_ALLOCATIONS=1 aborts at the first one, for a
// debugger's backtrace.
template <class Transport = gcl::inproc_transport, class Step>
long allocations_when_warm(int p, std::size_t max_bytes, int warmup, int iterations, Step step,
                           typename Transport::options opts = {}) {
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
  gcl::spawn<Transport>(
      p,
      [&](auto& comm) {
        fill_pool(comm, max_bytes);
        for (int i = 0; i < warmup; ++i) step(comm, i);
        sync.arrive_and_wait();
        for (int i = 0; i < iterations; ++i) step(comm, i);
        sync.arrive_and_wait();
      },
      opts);
  return snapshot[1] - snapshot[0];
}

}  // namespace gcl_test
