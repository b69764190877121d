// Proves "no heap allocation per message once warm" on the inproc path: this program replaces
// the global operator new/delete with counting versions (test/support/allocation_counter.hpp),
// warms up each pattern, then asserts
// that N further iterations on every rank allocate nothing at all.
#define BOOST_TEST_MODULE transport_inproc_allocations
#include <boost/test/unit_test.hpp>

#include <gcl/algorithm/ring.hpp>
#include <gcl/algorithm/tree.hpp>
#include <gcl/collective/all_reduce.hpp>
#include <gcl/communicator.hpp>
#include <gcl/detail/sanitizers.hpp>
#include <gcl/spawn.hpp>
#include <gcl/transport/inproc.hpp>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "../support/allocation_counter.hpp"

namespace {

// Under a sanitizer every byte copied is instrumented (ASan's build is also -O0; ThreadSanitizer's
// build leaves this program out: test/CMakeLists.txt): keep the run short; the default build
// runs the long one.
#if defined(GCL_DETAIL_TSAN) || defined(GCL_DETAIL_ASAN)
constexpr int warmup = 5;
constexpr int iterations = 30;
constexpr std::size_t large = std::size_t{1} << 14;
#else  // 50 timed iterations of every pattern at every size (200 before: 33 s in all, now 20)
constexpr int warmup = 20;
constexpr int iterations = 50;
constexpr std::size_t large = std::size_t{1} << 18;
#endif

template <class Step>
long allocations_when_warm(int p, std::size_t max_bytes, Step step) {
  return gcl_test::allocations_when_warm(p, max_bytes, warmup, iterations, step);
}

}  // namespace

BOOST_AUTO_TEST_CASE(the_counter_counts) {
  long before = gcl_test::allocations.load();
  auto* v = new std::vector<int>(100);  // two allocations: the vector and its storage
  delete v;
  BOOST_TEST(gcl_test::allocations.load() - before == 2);
}

BOOST_AUTO_TEST_CASE(send_then_recv_through_the_pool) {
  for (int p : {1, 2, 3, 5}) {
    for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{1000}, large}) {
      std::vector<std::vector<std::int32_t>> out(p, std::vector<std::int32_t>(n)),
          in(p, std::vector<std::int32_t>(n));
      long count = allocations_when_warm(p, n * sizeof(std::int32_t), [&](auto& comm, int i) {
        int r = comm.rank(), right = (r + 1) % p, left = (r + p - 1) % p;
        if (n) out[r][0] = i;
        comm.send(right, out[r]);  // eager: usually lands in a pooled buffer
        comm.send(right, out[r], gcl::tag{1});
        comm.recv(left, in[r]);
        comm.recv(left, in[r], gcl::tag{1});
        if (n && in[r][0] != i) throw std::runtime_error("wrong data");
      });
      BOOST_TEST(count == 0, "P=" << p << " n=" << n << ": " << count << " allocations when warm");
    }
  }
}

BOOST_AUTO_TEST_CASE(sendrecv_into_the_posted_buffer) {
  for (int p : {1, 2, 4, 7}) {
    for (std::size_t n : {std::size_t{1}, std::size_t{4096}, large}) {
      std::vector<std::vector<double>> out(p, std::vector<double>(n)),
          in(p, std::vector<double>(n));
      long count = allocations_when_warm(p, n * sizeof(double), [&](auto& comm, int i) {
        int r = comm.rank();
        for (int d = 1; d <= p; ++d) {  // every distance, as ring and recursive doubling do
          out[r][0] = i + d;
          comm.sendrecv((r + d) % p, out[r], (r + p - d) % p, in[r]);
          if (in[r][0] != i + d) throw std::runtime_error("wrong data");
        }
      });
      BOOST_TEST(count == 0, "P=" << p << " n=" << n << ": " << count << " allocations when warm");
    }
  }
}

BOOST_AUTO_TEST_CASE(recv_posted_before_the_send) {
  // Rank 1 blocks in recv first (posted path), rank 0 sends after a reply: alternating
  // ping-pong exercises both the posted and the queued path.
  std::vector<std::vector<std::int64_t>> buf(2, std::vector<std::int64_t>(777));
  long count = allocations_when_warm(2, 777 * sizeof(std::int64_t), [&](auto& comm, int i) {
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
  BOOST_TEST(count == 0);
}

BOOST_AUTO_TEST_CASE(scratch_is_reused) {
  long count = allocations_when_warm(3, 0, [](auto& comm, int i) {
    auto s = comm.template scratch<float>(1000 + static_cast<std::size_t>(i % 7), 1);
    s[0] = 1.0f;
  });
  BOOST_TEST(count == 0);
}

// The collectives on top: a warm all_reduce (tree or ring) allocates nothing either, because
// algorithms take their temporaries from comm.scratch and the transport from its pool.
BOOST_AUTO_TEST_CASE(all_reduce_tree_and_ring_when_warm) {
  for (int p : {1, 2, 3, 4, 5, 7, 8}) {
    for (std::size_t n :
         {std::size_t{0}, std::size_t{1}, static_cast<std::size_t>(p) + 1, large + 3}) {
      std::vector<std::vector<float>> data(p, std::vector<float>(n));
      auto reduce_with = [&](auto algorithm) {
        return allocations_when_warm(p, n * sizeof(float), [&](auto& comm, int i) {
          auto& v = data[comm.rank()];
          std::fill(v.begin(), v.end(), static_cast<float>(comm.rank() + i % 3));
          gcl::all_reduce(comm, v, gcl::sum{}, algorithm);
          float expected = static_cast<float>(p * (p - 1) / 2 + p * (i % 3));
          if (n && (v.front() != expected || v.back() != expected))
            throw std::runtime_error("wrong sum");
        });
      };
      long tree = reduce_with(gcl::tree{}), ring = reduce_with(gcl::ring{});
      BOOST_TEST(tree == 0,
                 "tree P=" << p << " n=" << n << ": " << tree << " allocations when warm");
      BOOST_TEST(ring == 0,
                 "ring P=" << p << " n=" << n << ": " << ring << " allocations when warm");
    }
  }
}
