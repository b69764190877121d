// Proves "no heap allocation per message once warm" for shm_transport, as inproc_allocations.cpp
// does for inproc: this program replaces the global operator new/delete with counting versions
// (test/support/allocation_counter.hpp), warms each pattern up, then asserts that further
// iterations on every rank allocate nothing at all. Over both ways a large message travels
// (offered and copied once; streamed through a ring smaller than it), with messages that arrive
// before their receive (kept in pooled entries) and after it (straight into the receive).
#define BOOST_TEST_MODULE transport_shm_allocations
#include <boost/test/unit_test.hpp>

#include <gcl/algorithm/ring.hpp>
#include <gcl/algorithm/tree.hpp>
#include <gcl/collective/all_reduce.hpp>
#include <gcl/communicator.hpp>
#include <gcl/detail/sanitizers.hpp>
#include <gcl/spawn.hpp>
#include <gcl/transport/shm.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "../support/allocation_counter.hpp"

namespace {

// Few iterations and world sizes: a warm step allocates nothing or something every time, and
// each spawn costs its setup and a pool fill, which a loaded machine or TSan makes slow.
#if defined(GCL_DETAIL_TSAN)  // every byte copied is instrumented: keep the run short
constexpr int warmup = 3;
constexpr int iterations = 10;
#else
constexpr int warmup = 5;
constexpr int iterations = 30;
#endif
// Past offer_bytes (16 KiB here, so that the offered path is taken without megabytes) and past
// the 16 KiB ring of the streamed runs.
constexpr std::size_t large_bytes = 24000;

struct path {
  char const* name;
  gcl::shm_options options;
};

std::vector<path> paths() {
  gcl::shm_options offered;
  offered.timeout = std::chrono::seconds{60};  // a hang guard only
  offered.offer_bytes = 16 * 1024;
  offered.cross_memory_attach = true;  // never by default
  auto streamed = offered;
  streamed.cross_memory_attach = false;
  streamed.ring_bytes = 16 * 1024;
  return {{"offered", offered}, {"streamed", streamed}};
}

template <class Step>
long allocations_when_warm(int p, std::size_t max_bytes, gcl::shm_options const& o, Step step) {
  return gcl_test::allocations_when_warm<gcl::shm_transport>(p, max_bytes, warmup, iterations, step,
                                                             o);
}

}  // namespace

BOOST_AUTO_TEST_CASE(the_counter_counts) {
  long before = gcl_test::allocations.load();
  auto* v = new std::vector<int>(100);  // two allocations: the vector and its storage
  delete v;
  BOOST_TEST(gcl_test::allocations.load() - before == 2);
}

// Every rank sends two messages to its right, then receives two from its left: they arrive
// before their receive (usually), into kept entries.
BOOST_AUTO_TEST_CASE(send_then_recv_through_kept_entries) {
  for (auto const& [how, o] : paths())
    for (int p : {1, 2, 3})
      for (std::size_t n : {std::size_t{0}, std::size_t{1000}, large_bytes / 4}) {
        std::vector<std::vector<std::int32_t>> out(p, std::vector<std::int32_t>(n)),
            in(p, std::vector<std::int32_t>(n));
        long count = allocations_when_warm(p, n * sizeof(std::int32_t), o, [&](auto& comm, int i) {
          int r = comm.rank(), right = (r + 1) % p, left = (r + p - 1) % p;
          if (n) out[r][0] = i;
          comm.send(right, out[r]);
          comm.send(right, out[r], gcl::tag{1});
          comm.recv(left, in[r]);
          comm.recv(left, in[r], gcl::tag{1});
          if (n && in[r][0] != i) throw std::runtime_error("wrong data");
        });
        BOOST_TEST(count == 0,
                   how << " P=" << p << " n=" << n << ": " << count << " allocations when warm");
      }
}

BOOST_AUTO_TEST_CASE(sendrecv_into_the_posted_buffer) {
  for (auto const& [how, o] : paths())
    for (int p : {2, 4}) {
      for (std::size_t n : {std::size_t{512}, large_bytes / 8}) {
        std::vector<std::vector<double>> out(p, std::vector<double>(n)),
            in(p, std::vector<double>(n));
        long count = allocations_when_warm(p, n * sizeof(double), o, [&](auto& comm, int i) {
          int r = comm.rank();
          for (int d = 1; d <= p; ++d) {  // every distance, as ring and recursive doubling do
            out[r][0] = i + d;
            comm.sendrecv((r + d) % p, out[r], (r + p - d) % p, in[r]);
            if (in[r][0] != i + d) throw std::runtime_error("wrong data");
          }
        });
        BOOST_TEST(count == 0,
                   how << " P=" << p << " n=" << n << ": " << count << " allocations when warm");
      }
    }
}

// Rank 1 blocks in recv first (the posted path), rank 0 sends after a reply: a ping-pong
// that takes both the posted and the queued path.
BOOST_AUTO_TEST_CASE(recv_posted_before_the_send) {
  for (auto const& [how, o] : paths())
    for (std::size_t n : {std::size_t{777}, large_bytes / 8}) {
      std::vector<std::vector<std::int64_t>> buf(2, std::vector<std::int64_t>(n));
      long count = allocations_when_warm(2, n * sizeof(std::int64_t), o, [&](auto& comm, int i) {
        auto& b = buf[comm.rank()];
        if (comm.rank() == 0) {
          b[0] = i;
          comm.send(1, b);
          comm.recv(1, b);
        } else {
          comm.recv(0, b);
          comm.send(0, b);
        }
      });
      BOOST_TEST(count == 0, how << " n=" << n << ": " << count << " allocations when warm");
    }
}

// The collectives on top: a warm all_reduce (tree or ring) allocates nothing either.
BOOST_AUTO_TEST_CASE(all_reduce_tree_and_ring_when_warm) {
  for (path const& route : paths())
    for (int p : {2, 5})
      for (std::size_t n : {static_cast<std::size_t>(p) + 1, large_bytes / 4 + 3}) {
        std::vector<std::vector<float>> data(p, std::vector<float>(n));
        // route.options, not a structured binding: a lambda may capture those only from C++20,
        // which clang implements from 16 on.
        auto reduce_with = [&](auto algorithm) {
          return allocations_when_warm(p, n * sizeof(float), route.options, [&](auto& comm, int i) {
            auto& v = data[comm.rank()];
            std::fill(v.begin(), v.end(), static_cast<float>(comm.rank() + i % 3));
            gcl::all_reduce(comm, v, gcl::sum{}, algorithm);
            float expected = static_cast<float>(p * (p - 1) / 2 + p * (i % 3));
            if (v.front() != expected || v.back() != expected)
              throw std::runtime_error("wrong sum");
          });
        };
        long tree = reduce_with(gcl::tree{}), ring = reduce_with(gcl::ring{});
        BOOST_TEST(tree == 0, route.name << " tree P=" << p << " n=" << n << ": " << tree
                                         << " allocations when warm");
        BOOST_TEST(ring == 0, route.name << " ring P=" << p << " n=" << n << ": " << ring
                                         << " allocations when warm");
      }
}
