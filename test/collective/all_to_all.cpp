#define BOOST_TEST_MODULE collective_all_to_all
#include <gcl/algorithm/direct.hpp>
#include <gcl/collective/all_to_all.hpp>

#include "support.hpp"

using namespace gcl_test;

// Element i of the block rank s sends to rank r.
template <class T>
T entry(int s, int r, std::size_t i) {
  return static_cast<T>(s * 1000 + r * 10 + static_cast<int>(i % 10));
}

template <class T>
void sweep() {
  for (int p : world_sizes)
    for (std::size_t n : lengths(p, large / static_cast<std::size_t>(p)))  // n = block size
      run(p, "P=" + std::to_string(p) + " block=" + std::to_string(n), [&](auto& comm) {
        std::vector<T> in(n * p), out(n * p, T{-1}), want(n * p);
        for (int r = 0; r < p; ++r)
          for (std::size_t i = 0; i < n; ++i) {
            in[r * n + i] = entry<T>(comm.rank(), r, i);
            want[r * n + i] = entry<T>(r, comm.rank(), i);
          }
        gcl::all_to_all(comm, in, out, gcl::direct{});
        return diff(out, want);
      });
}

BOOST_AUTO_TEST_CASE(float_every_size) {
  sweep<float>();
}
BOOST_AUTO_TEST_CASE(int_every_size) {
  sweep<int>();
}

BOOST_AUTO_TEST_CASE(usage_errors) {
  BOOST_CHECK_EXCEPTION(gcl::spawn<gcl::inproc_transport>(3,
                                                          [](auto& comm) {
                                                            std::vector<int> in(7), out(7);
                                                            gcl::all_to_all(comm, in, out);
                                                          }),
                        gcl::usage_error, [](gcl::usage_error const& e) {
                          return std::string(e.what()).find(
                                     "all_to_all: in has 7 elements, which is not a multiple of "
                                     "the world size 3") != std::string::npos;
                        });
  BOOST_CHECK_THROW(gcl::spawn<gcl::inproc_transport>(3,
                                                      [](auto& comm) {
                                                        std::vector<int> in(6), out(9);
                                                        gcl::all_to_all(comm, in, out);
                                                      }),
                    gcl::usage_error);
}

BOOST_AUTO_TEST_CASE(different_counts_fail) {
  for (int p : {2, 3, 4, 8}) {
    auto what = expect_mismatch(p, [&](auto& comm) {
      std::size_t n = comm.rank() == 1 ? 2 * p : p;
      std::vector<int> in(n), out(n);
      gcl::all_to_all(comm, in, out);
    });
    check_names_two_ranks(what, 1);
  }
}
