// Proves that a warm collective allocates nothing: every algorithm takes its temporaries from
// the communicator's scratch buffers, and argument checks build strings only on failure. This
// program replaces the global operator new/delete with counting versions
// (test/support/allocation_counter.hpp), so it is a program of its own.
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

#include <string>
#include <vector>

#include "../support/allocation_counter.hpp"

namespace {

constexpr int warmup = 5;
constexpr int iterations = 50;
constexpr std::size_t n = 1000;  // elements per rank (per block for the block collectives)

template <class Step>
void check(std::string const& name, Step step) {
  for (int p : {1, 2, 3, 5}) {
    // A barrier after each step, so that no rank runs iterations ahead and deepens a backlog.
    long count = gcl_test::allocations_when_warm(p, n * p * sizeof(float), warmup, iterations,
                                                 [&](auto& comm, int) {
                                                   step(comm);
                                                   gcl::barrier(comm);
                                                 });
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
  long before = gcl_test::allocations.load();
  auto* v = new std::vector<int>(100);
  delete v;
  BOOST_TEST(gcl_test::allocations.load() - before == 2);
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
