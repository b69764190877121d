#define BOOST_TEST_MODULE collective_all_gather
#include <gcl/algorithm/ring.hpp>
#include <gcl/collective/all_gather.hpp>

#include "support.hpp"

using namespace gcl_test;

template <class T>
void sweep() {
  for (int p : world_sizes)
    for (std::size_t n : lengths(p, large / static_cast<std::size_t>(p)))
      run(p, "P=" + std::to_string(p) + " n=" + std::to_string(n), [&](auto& comm) {
        std::vector<T> in(n), out(n * p, T{-1}), want(n * p);
        for (std::size_t i = 0; i < n; ++i) in[i] = value<T>(comm.rank(), i);
        for (int r = 0; r < p; ++r)
          for (std::size_t i = 0; i < n; ++i) want[r * n + i] = value<T>(r, i);
        gcl::all_gather(comm, in, out, gcl::ring{});
        return diff(out, want);
      });
}

BOOST_AUTO_TEST_CASE(float_every_size) {
  sweep<float>();
}
BOOST_AUTO_TEST_CASE(int_every_size) {
  sweep<int>();
}

BOOST_AUTO_TEST_CASE(scalar_in_and_default_algorithm) {
  run(5, "P=5", [](auto& comm) {
    std::vector<int> all(5);
    gcl::all_gather(comm, comm.rank() * 2, all);
    return diff(all, std::vector<int>{0, 2, 4, 6, 8});
  });
}

BOOST_AUTO_TEST_CASE(wrong_out_size_is_a_usage_error) {
  BOOST_CHECK_EXCEPTION(gcl::spawn<gcl::inproc_transport>(3,
                                                          [](auto& comm) {
                                                            std::vector<int> in(4), out(11);
                                                            gcl::all_gather(comm, in, out);
                                                          }),
                        gcl::usage_error, [](gcl::usage_error const& e) {
                          std::string w = e.what();
                          BOOST_TEST_MESSAGE(w);
                          return w.find(
                                     "all_gather: out has 11 elements, but 12 are required "
                                     "(world size 3 x in.size() 4)") != std::string::npos;
                        });
}

BOOST_AUTO_TEST_CASE(different_counts_fail) {
  for (int p : {2, 3, 4, 8}) {
    auto what = expect_mismatch(p, [&](auto& comm) {
      std::size_t n = comm.rank() == 1 ? 3 : 2;
      std::vector<int> in(n), out(n * p);
      gcl::all_gather(comm, in, out);
    });
    check_names_two_ranks(what, 1);
  }
}
